"""Inside a session's hook sandbox: run each hook command the session sends, one at a time.

Started once per session by :mod:`cox.hooks.zygote` inside the same bubblewrap line a hook would
get, so a hook costs a ``sh -c`` spawn instead of a whole sandbox set-up. It reads framed requests
on stdin (``{command, stdin, cwd, env, timeout_s}``), runs each through
:func:`cox.hooks.run.run_command` — the same pump, caps and timeout kill as a hook run directly —
and writes one framed reply each. When stdin closes (the session closed it, or cox died, SIGKILL
included) it exits at once, even mid-hook: it is the sandbox's PID 1, and when it ends the kernel
kills everything left in the sandbox's PID namespace.

A frame is a 4-byte big-endian length and that many bytes of JSON; byte strings travel as base64.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import struct
import threading
from pathlib import Path
from typing import Any

MAX_FRAME = 64 * 1024 * 1024


def send(fd: int, obj: dict[str, Any]) -> None:
    data = json.dumps(obj, separators=(",", ":")).encode()
    data = struct.pack(">I", len(data)) + data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def recv(fd: int) -> dict[str, Any] | None:
    """The next frame, or None at the end of the stream (or a torn frame)."""
    head = _exactly(fd, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    if size > MAX_FRAME:
        return None
    body = _exactly(fd, size)
    if body is None:
        return None
    obj = json.loads(body)
    return obj if isinstance(obj, dict) else None


def _exactly(fd: int, n: int) -> bytes | None:
    parts = bytearray()
    while len(parts) < n:
        chunk = os.read(fd, n - len(parts))
        if not chunk:
            return None
        parts += chunk
    return bytes(parts)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: Any) -> bytes:
    return base64.b64decode(text) if isinstance(text, str) else b""


def _reap_orphans() -> None:
    """As the sandbox's PID 1, this process inherits what a hook left running; the hook's group
    was killed, and its dead are reaped here (between hooks: no wait of a running one is taken)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> None:
    from cox.hooks.run import run_command

    requests: queue.Queue[dict[str, Any]] = queue.Queue()

    def work() -> None:
        while True:
            req = requests.get()
            outcome = run_command(str(req.get("command", "")), unb64(req.get("stdin")), cwd=Path(req.get("cwd") or "/"),
                                  env={str(k): str(v) for k, v in (req.get("env") or {}).items()},
                                  timeout_s=float(req.get("timeout_s") or 60.0))
            _reap_orphans()
            send(1, {"code": outcome.code, "stdout": b64(outcome.stdout), "stderr": b64(outcome.stderr),
                     "timed_out": outcome.timed_out, "error": outcome.error})

    threading.Thread(target=work, daemon=True).start()
    send(1, {"ready": True})
    while True:
        req = recv(0)
        if req is None:
            os._exit(0)  # the session is gone or done: the sandbox ends with this process
        requests.put(req)


if __name__ == "__main__":
    main()
