"""Run one command hook: ``bash -c COMMAND`` with the event as JSON on stdin, under the sandbox a
bash call gets (unless the user config turned that off), with a timeout.

Nothing a hook does can stall or sink the turn: its output is read on threads and kept only up
to ``CAP`` bytes a stream (a hook that prints without end is drained, not stored), a hook that
does not read its stdin does not block the write, and at the timeout its whole process group
is killed. Every failure comes back as an ``Outcome`` with ``error`` set, never as an exception.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

CAP = 256 * 1024

Wrap = Callable[[list[str]], list[str]]
"""Turns ``["bash", "-c", command]`` into what is really started (the bubblewrap line)."""


@dataclass
class Outcome:
    code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    timed_out: bool = False
    error: str | None = None


def _drain(stream: IO[bytes], into: bytearray) -> None:
    try:
        while chunk := stream.read(65536):
            if len(into) < CAP:
                into += chunk[: CAP - len(into)]
    except (OSError, ValueError):
        pass


def _feed(stream: IO[bytes], data: bytes) -> None:
    try:
        stream.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass  # the hook did not read its input: that is its business
    finally:
        try:
            stream.close()
        except OSError:
            pass


def run_command(command: str, stdin: bytes, *, cwd: Path, env: Mapping[str, str], timeout_s: float,
                wrap: Wrap | None = None) -> Outcome:
    argv: Sequence[str] = ["bash", "-c", command]
    try:
        if wrap is not None:
            argv = wrap(list(argv))
        proc = subprocess.Popen(argv, cwd=str(cwd), env=dict(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except Exception as exc:  # no bash, no sandbox, a cwd gone
        return Outcome(None, error=f"could not start: {exc}")
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    threads = [threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True),
               threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True)]
    for t in threads:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    try:  # a hung hook, and whatever a finished one left running in the background
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    for t in threads[1:]:
        t.join(timeout=2.0)  # a grandchild that left the group may hold the pipe: do not wait on it
    for stream in (proc.stdout, proc.stderr):
        try:
            stream.close()
        except OSError:
            pass
    return Outcome(None if timed_out else proc.returncode, bytes(out), bytes(err), timed_out)
