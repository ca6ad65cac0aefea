"""``cox acp``'s latency beside headless stream-json's, measured in the same run.

    .venv/bin/python bench/acp.py

Against the loopback Anthropic API (``tests/provider/loopback.py``, no network), each surface gets
a session that is already up, then one prompt, and the time from writing the prompt to the
surface's first streamed text on its stdout is taken:

- ACP: ``cox acp`` after ``initialize`` and ``session/new``; the ``session/prompt`` request
  written → the first ``agent_message_chunk`` notification line read;
- headless: ``cox run --input-format stream-json --output-format stream-json`` after its
  ``session_started`` line; the ``user_turn`` line written → the first ``text_delta`` line read.

Both read raw lines off the pipe (no client library's parsing in the figure); runs alternate, so
a busy moment hits both; each session idles :data:`SETTLE_S` before its prompt. Printed: each median of :data:`RUNS`, their ratio and difference (goal:
ACP within 5 ms of headless), and the model's share (request at the server → its first byte).
Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.provider import anthropic_text, env_for  # noqa: E402
from tests.provider.loopback import Loopback, Reply  # noqa: E402

RUNS = 6
"""Processes of each surface, alternating."""
PROMPTS = 5
"""Prompts per process: the first (the session's first request) is reported apart from the rest."""
GOAL_MS = 5.0
BOUND_S = 60.0
SETTLE_S = 0.5
"""Both sessions idle this long before the prompt, so start-up work still finishing (the session
actor's first steps, lazy imports) is in neither figure."""


def _line(out: IO[bytes], want: bytes) -> float:
    """Read lines until one holding ``want``; the moment it was read."""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        raw = out.readline()
        if not raw:
            raise RuntimeError(f"the surface closed its output before {want.decode()!r}")
        if want in raw:
            return time.perf_counter()
    raise RuntimeError(f"no {want.decode()!r} within {BOUND_S:g} s")


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> float:
    assert proc.stdin is not None
    data = json.dumps(message).encode() + b"\n"
    t = time.perf_counter()
    proc.stdin.write(data)
    proc.stdin.flush()
    return t


def _stop(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(BOUND_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _env(api: Loopback, home: Path) -> dict[str, str]:
    return {**env_for("anthropic", api, home), "PYTHONPATH": str(ROOT)}  # this checkout's cox


def acp_once(api: Loopback, ws: Path, home: Path) -> list[float]:
    for _ in range(PROMPTS):
        api.add(Reply(anthropic_text(["hi"] * 20)))
    proc = subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", "acp"], cwd=ws, env=_env(api, home),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    try:
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        _line(proc.stdout, b'"id":1')
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(ws), "mcpServers": []}})
        deadline = time.monotonic() + BOUND_S
        sid = None
        while sid is None and time.monotonic() < deadline:
            msg = json.loads(proc.stdout.readline() or b"{}")
            if msg.get("id") == 2:
                sid = msg["result"]["sessionId"]
        out = []
        for i in range(PROMPTS):
            time.sleep(SETTLE_S)
            t0 = _send(proc, {"jsonrpc": "2.0", "id": 3 + i, "method": "session/prompt",
                              "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}})
            t1 = _line(proc.stdout, b'"agent_message_chunk"')
            _line(proc.stdout, b'"id":%d' % (3 + i))
            out.append((t1 - t0) * 1000)
        return out
    finally:
        _stop(proc)


def headless_once(api: Loopback, ws: Path, home: Path) -> list[float]:
    for _ in range(PROMPTS):
        api.add(Reply(anthropic_text(["hi"] * 20)))
    proc = subprocess.Popen([sys.executable, "-m", "cox.surfaces.cli", "run", "--input-format", "stream-json",
                             "--output-format", "stream-json"], cwd=ws, env=_env(api, home),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    try:
        _line(proc.stdout, b'"type":"session_started"')
        out = []
        for _ in range(PROMPTS):
            time.sleep(SETTLE_S)
            t0 = _send(proc, {"type": "user_turn", "text": "x"})
            t1 = _line(proc.stdout, b'"type":"text_delta"')
            _line(proc.stdout, b'"type":"result"')
            out.append((t1 - t0) * 1000)
        return out
    finally:
        _stop(proc)


def _row(label: str, a: list[float], h: list[float]) -> None:
    ma, mh = statistics.median(a), statistics.median(h)
    print(f"  {label}: cox acp {ma:6.1f} ms · cox run {mh:6.1f} ms · ratio {ma / mh:.2f}× · "
          f"difference {ma - mh:+.1f} ms · {'met' if ma - mh <= GOAL_MS else 'NOT met'}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws, home = Path(tmp) / "ws", Path(tmp) / "home"
        ws.mkdir()
        acp: list[list[float]] = []
        headless: list[list[float]] = []
        with Loopback() as api:
            for _ in range(RUNS):
                acp.append(acp_once(api, ws, home))
                headless.append(headless_once(api, ws, home))
            model = [(b - r["at"]) * 1000 for r, b in zip(api.requests, api.first_byte_at, strict=False)]
        print(f"prompt → first streamed text (ACP: session/prompt → first agent_message_chunk; headless "
              f"stream-json: user_turn → first text_delta); {RUNS} processes each, {PROMPTS} prompts each, "
              f"alternating; goal: ACP at most {GOAL_MS:g} ms slower")
        _row("first prompt of a session", [r[0] for r in acp], [r[0] for r in headless])
        _row("later prompts           ", [x for r in acp for x in r[1:]], [x for r in headless for x in r[1:]])
        print(f"  the loopback model's share (request → first byte): {statistics.median(model):.1f} ms")


if __name__ == "__main__":
    main()
