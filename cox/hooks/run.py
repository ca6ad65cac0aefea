"""Run one command hook: ``sh -c COMMAND`` with the event as JSON on stdin, under the sandbox a
bash call gets (unless the user config turned that off), with a timeout.

``sh``, not ``bash``: Claude Code runs a hook's command through ``sh -c`` on Linux and macOS, so a
hook written for it means the same here (``dash`` on Debian rejects bash-only syntax there too),
and ``sh`` starts in a fraction of bash's time — a hook runs on every matching tool call.

Nothing a hook does can stall or sink the turn: its input is written and its output read on the
calling thread through one selector, each stream kept only up to ``CAP`` bytes (a hook that
prints without end is drained, not stored), a hook that does not read its stdin does not block
the write, and at the timeout its whole process group is killed (and with it whatever it left
running in the background). Every failure comes back as an ``Outcome`` with ``error`` set, never as an exception.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from cox.protocol.interfaces import CancelToken
from cox.slim import dataclass

CAP = 256 * 1024
SHELL = "/bin/sh"

Wrap = Callable[[list[str]], list[str]]
"""Turns ``["sh", "-c", command]`` into what is really started (the bubblewrap line)."""


@dataclass
class Outcome:
    code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    timed_out: bool = False
    error: str | None = None


def _pump(proc: subprocess.Popen[bytes], stdin: bytes, deadline: float) -> tuple[bytes, bytes, bool]:
    """Write ``stdin``, read both outputs (each kept up to ``CAP``, the rest drained) until both
    close or the deadline passes, on this thread alone (a selector, as ``communicate`` does, but
    bounded). Returns (stdout, stderr, timed out)."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    kept = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    sel = selectors.DefaultSelector()
    todo = memoryview(stdin)
    if todo:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    for fd in kept:
        sel.register(fd, selectors.EVENT_READ)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(kept[proc.stdout.fileno()]), bytes(kept[proc.stderr.fileno()]), True
            for key, _ in sel.select(left):
                fd = key.fd
                if fd in kept:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        sel.unregister(fd)
                    elif len(kept[fd]) < CAP:
                        kept[fd] += chunk[: CAP - len(kept[fd])]
                    continue
                try:
                    todo = todo[os.write(fd, todo[:65536]):]
                except (BrokenPipeError, OSError):  # the hook did not read its input: its business
                    todo = todo[:0]
                if not todo:
                    sel.unregister(fd)
                    proc.stdin.close()
    finally:
        sel.close()
    return bytes(kept[proc.stdout.fileno()]), bytes(kept[proc.stderr.fileno()]), False


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_command(command: str, stdin: bytes, *, cwd: Path, env: Mapping[str, str], timeout_s: float,
                wrap: Wrap | None = None, cancel: CancelToken | None = None) -> Outcome:
    """``cancel``: the turn's scope; an interrupt kills the hook at once (the session waits on it)."""
    argv: Sequence[str] = [SHELL, "-c", command]
    try:
        if wrap is not None:
            argv = wrap(list(argv))
        proc = subprocess.Popen(argv, cwd=str(cwd), env=dict(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except Exception as exc:  # no shell, no sandbox, a cwd gone
        return Outcome(None, error=f"could not start: {exc}")
    deadline = time.monotonic() + timeout_s
    interrupted: list[bool] = []

    def on_cancel() -> None:
        interrupted.append(True)
        _kill(proc.pid)

    unregister = cancel.on_cancel(on_cancel) if cancel is not None else None
    try:
        out, err, timed_out = _pump(proc, stdin, deadline)
        if not timed_out:  # both outputs closed: the hook is ending (or left a child holding nothing)
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        if unregister is not None:
            unregister()
        _kill(proc.pid)  # a hung hook, and whatever a finished one left running in the background
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
    if interrupted:
        return Outcome(None, out, err, error="was stopped: the turn was interrupted")
    return Outcome(None if timed_out else proc.returncode, out, err, timed_out)
