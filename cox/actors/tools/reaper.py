"""Commands that run without the sandbox die with cox, even when cox is SIGKILLed.

In the sandbox, ``bwrap --die-with-parent`` and its pid namespace end everything a command
started. A bare command (``sandbox.mode = "danger-full-access"``, or no bubblewrap and the person
chose to run bare) has neither, and a SIGKILLed cox runs no cleanup: its command went on running.
``prctl(PR_SET_PDEATHSIG)`` is no cure here: it fires when the *thread* that forked the child
ends, and a background job outlives the tool call's thread by design.

So the first bare command starts one small watcher process (``sh``, in a session of its own so
the terminal's Ctrl-C does not reach it) whose stdin is a pipe only this process holds. Every
bare command's process group is written to it as it starts. When cox exits, however it exits,
the pipe reaches end-of-file and the watcher kills every group it was told of (and not told
has ended: a process group's number can be reused once the group is empty), then every process
whose environment still carries this process's ``COX_CALL_TAG`` prefix (a leftover that left its
group with ``setsid``), scanning until none is left.
"""

from __future__ import annotations

import os
import subprocess
import threading
from typing import IO

TAG_VAR = "COX_CALL_TAG"

# Reads process groups ("PGID" to watch, "-PGID" once it has ended) until EOF, then kills them and whatever still carries the tag prefix ($1).
_WATCHER = r"""
trap '' INT TERM HUP QUIT PIPE
groups=""
while IFS= read -r g; do
  case $g in
    -*) new=""; for x in $groups; do [ "$x" = "${g#-}" ] || new="$new $x"; done; groups=$new ;;
    *) groups="$groups $g" ;;
  esac
done
for g in $groups; do kill -KILL -- "-$g" 2>/dev/null; done
i=0
while [ "$i" -lt 20 ]; do
  i=$((i + 1)); found=0
  for f in /proc/[0-9]*/environ; do
    p=${f#/proc/}; p=${p%/environ}
    [ "$p" = "$$" ] && continue
    if tr '\0' '\n' < "$f" 2>/dev/null | grep -q "^$1"; then kill -KILL "$p" 2>/dev/null && found=1; fi
  done
  [ "$found" = 0 ] && break
done
"""


class Reaper:
    """One watcher per cox process, started on first use."""

    def __init__(self) -> None:
        self.token = os.urandom(6).hex()
        self._lock = threading.Lock()
        self._pipe: IO[bytes] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def tag(self) -> str:
        """A fresh ``COX_CALL_TAG`` value for one bare call, carrying this process's prefix."""
        return f"{self.token}.{os.urandom(8).hex()}"

    def start(self) -> None:
        """Have the watcher running before a bare command starts: its pid is then told at once,
        and even a command cox dies before telling is found by its tag."""
        with self._lock:
            try:
                self._start()
            except OSError:
                self._pipe = None

    def watch(self, pgid: int) -> None:
        """Kill process group ``pgid`` when this process exits. Never raises: a watcher that
        cannot start or write leaves the ordinary cleanup (cancel, session stop) in charge."""
        with self._lock:
            try:
                pipe = self._start()
                pipe.write(f"{pgid}\n".encode())
                pipe.flush()
            except OSError:
                self._pipe = None

    def unwatch(self, pgid: int) -> None:
        """The group has ended: its number may be reused, so it must not be killed later."""
        with self._lock:
            if self._pipe is None:
                return
            try:
                self._pipe.write(f"-{pgid}\n".encode())
                self._pipe.flush()
            except OSError:
                self._pipe = None

    def _start(self) -> IO[bytes]:
        if self._pipe is not None and self._proc is not None and self._proc.poll() is None:
            return self._pipe
        needle = f"{TAG_VAR}={self.token}."
        self._proc = subprocess.Popen(
            ["sh", "-c", _WATCHER, "cox-reaper", needle], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"})
        assert self._proc.stdin is not None
        self._pipe = self._proc.stdin
        return self._pipe


REAPER = Reaper()
"""This process's watcher (the pipe is per process: a forked child must not inherit it as its own)."""
