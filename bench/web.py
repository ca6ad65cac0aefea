"""The web agent mode's latency beside the headless one, measured in the same run (issue 16).

    .venv/bin/python bench/web.py [--turns N]

Both sides run the same scripted model (first delta at once) in a session that is already open,
so the figure is what the surface adds between a prompt and its first streamed text:

- web: ``cox serve``; the clock starts when the ``POST …/turns`` is sent and stops when the
  first ``event: delta`` of its SSE response is read;
- headless: ``cox run --input-format stream-json --output-format stream-json``; the clock starts
  when the ``user_turn`` line is written to its stdin and stops when the first ``text_delta``
  line is read from its stdout.

Each side plays a warm-up turn first, then N turns; medians are printed, with the web figure as
a ratio of the headless one and the difference in ms (goal: within 5 ms). Figures only: nothing
here passes or fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.web.served import Served  # noqa: E402


def script(path: Path, turns: int) -> Path:
    replies = [{"text": f"answer {i}: the quick brown fox"} for i in range(turns + 1)]
    path.write_text(json.dumps({"model": "scripted", "replies": replies}), encoding="utf-8")
    return path


def web(root: Path, turns: int) -> list[float]:
    ws = root / "web-ws"
    ws.mkdir()
    served = Served(ws, script(root / "web.json", turns), root / "web-home")
    try:
        sid = served.session()
        out = []
        for i in range(turns + 1):
            started = time.perf_counter()
            first = None
            with served.client.stream("POST", f"/api/agent/sessions/{sid}/turns", json={"prompt": f"q{i}"},
                                      headers={"X-Cox-Token": served.token}) as r:
                for line in r.iter_lines():
                    if first is None and line == "event: delta":
                        first = (time.perf_counter() - started) * 1000
            assert first is not None, "no delta"
            if i:
                out.append(first)
        return out
    finally:
        served.stop()


def headless(root: Path, turns: int) -> list[float]:
    ws = root / "run-ws"
    ws.mkdir()
    home = root / "run-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(COX_HOME=str(home / "cox-home"), HOME=str(home), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script(root / "run.json", turns)),
                             "--input-format", "stream-json", "--output-format", "stream-json"],
                            cwd=ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None
    out = []
    try:
        for i in range(turns + 1):
            started = time.perf_counter()
            proc.stdin.write(json.dumps({"type": "user_turn", "text": f"q{i}"}) + "\n")
            proc.stdin.flush()
            first = None
            for line in proc.stdout:
                kind = json.loads(line).get("type")
                if first is None and kind == "text_delta":
                    first = (time.perf_counter() - started) * 1000
                if kind == "result":
                    break
            assert first is not None, "no text_delta"
            if i:
                out.append(first)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        h = statistics.median(headless(root, args.turns))
        w = statistics.median(web(root, args.turns))
    print(f"prompt → first text: headless stream-json {h:.2f} ms · web SSE {w:.2f} ms "
          f"(median of {args.turns}) · web/headless {w / h:.2f}× · difference {w - h:+.2f} ms (goal: within 5 ms)")


if __name__ == "__main__":
    main()
