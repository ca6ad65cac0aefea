"""The LSP tools' cost, against a real Python language server (basedpyright, else pyright, else
pylsp, found on PATH or in this interpreter's virtualenv), spawned as a session spawns it (inside
the sandbox when bubblewrap works).

Prints, from one run on a small generated project:

- the first ``diagnostics`` call, server start included (spawn, ``initialize``, first report);
- a warm ``diagnostics`` call on the same unchanged file, and one on a file just changed;
- ``after_edit``'s overhead per edit: an ``edit`` with ``lsp.after_edit`` on, minus the same edit
  with it off, minus the server's own time (from cox sending the new text to the server's
  report arriving) and the quiet period (``--quiet-ms``, default 0 here) — what cox adds around
  the server (goal ≤ 50 ms warm) — median and max over the edits.

A benchmark prints figures; it never asserts.

    .venv/bin/python bench/lsp.py [edits] [--quiet-ms N]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


def main() -> None:
    import logging

    logging.disable(logging.INFO)
    from cox.actors.lsp.pool import LspPool, LspSettings
    from cox.actors.lsp.server import uri_of
    from cox.actors.lsp.servers import resolve
    from cox.actors.tools.base import ToolEnv, ToolServices
    from cox.actors.tools.diagnostics import DiagnosticsTool
    from cox.actors.tools.edit import EditTool
    from cox.protocol.types import ToolCall
    from cox.supervisors import CancelScope, shutdown

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    edits = int(args[0]) if args else 10
    quiet_ms = int(sys.argv[sys.argv.index("--quiet-ms") + 1]) if "--quiet-ms" in sys.argv else 0
    chosen = resolve({}, "python")
    if chosen is None:
        print("no Python language server found (install basedpyright or python-lsp-server)")
        return
    ws = Path(tempfile.mkdtemp(prefix="cox-bench-lsp-"))
    for i in range(20):
        (ws / f"m{i}.py").write_text("".join(f"def f{j}(x: int) -> int:\n    return x + {j}\n\n" for j in range(50)))
    (ws / "main.py").write_text("from m0 import f0\n\nvalue = f0(1)\n")
    tool, editor = DiagnosticsTool(), EditTool()

    def env(after_edit: bool, pool: LspPool) -> ToolEnv:
        pool.settings = LspSettings(quiet_ms=quiet_ms, after_edit=after_edit, after_edit_ms=10000)
        return ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope(), services=ToolServices(lsp=pool))

    pool = LspPool("bench", [ws], LspSettings(quiet_ms=quiet_ms))
    try:
        e = env(False, pool)
        t = time.perf_counter()
        tool.call(ToolCall(id="d1", name="diagnostics", input={"path": "main.py"}), e)
        first = time.perf_counter() - t
        warm = []
        for i in range(5):
            t = time.perf_counter()
            tool.call(ToolCall(id=f"w{i}", name="diagnostics", input={"path": "main.py"}), e)
            warm.append(time.perf_counter() - t)
        changed = []
        for i in range(5):
            (ws / "main.py").write_text(f"from m0 import f0\n\nvalue = f0({i + 2})\n")
            t = time.perf_counter()
            tool.call(ToolCall(id=f"c{i}", name="diagnostics", input={"path": "main.py"}), e)
            changed.append(time.perf_counter() - t)
        server = pool.running("python")
        uri = uri_of(ws / "main.py")
        overhead = []
        for i in range(edits):
            old, new = f"f0({i + 6})", f"f0({i + 7})"
            (ws / "main.py").write_text(f"from m0 import f0\n\nvalue = {old}\n")
            tool.call(ToolCall(id=f"s{i}", name="diagnostics", input={"path": "main.py"}), env(False, pool))
            t = time.perf_counter()
            editor.call(ToolCall(id=f"e{i}", name="edit", input={"path": "main.py", "old_string": old,
                                                                 "new_string": new}), env(False, pool))
            plain = time.perf_counter() - t
            (ws / "main.py").write_text(f"from m0 import f0\n\nvalue = {old}\n")
            tool.call(ToolCall(id=f"r{i}", name="diagnostics", input={"path": "main.py"}), env(False, pool))
            t = time.perf_counter()
            editor.call(ToolCall(id=f"a{i}", name="edit", input={"path": "main.py", "old_string": old,
                                                                 "new_string": new}), env(True, pool))
            with_hook = time.perf_counter() - t
            report = server.settle.reports[uri]
            server_s = report.at - server.docs[uri][2]
            overhead.append(with_hook - plain - server_s - quiet_ms / 1000)
        print(f"server: {' '.join(chosen.argv)} (sandbox as a session's: {'yes' if _bwrap() else 'no'})")
        print(f"first diagnostics (server start included): {first * 1000:.0f} ms")
        print(f"warm diagnostics, unchanged file: median {statistics.median(warm) * 1000:.2f} ms")
        print(f"warm diagnostics, changed file: median {statistics.median(changed) * 1000:.1f} ms "
              f"(quiet_ms {quiet_ms})")
        print(f"after_edit overhead beyond the server's own time and quiet_ms: median "
              f"{statistics.median(overhead) * 1000:.1f} ms, max {max(overhead) * 1000:.1f} ms over {edits} edits "
              "(goal <= 50 ms)")
    finally:
        pool.close()
        shutdown()


def _bwrap() -> bool:
    from cox.actors.tools.shell_env import sandbox_status

    return sandbox_status()[0]


if __name__ == "__main__":
    main()
