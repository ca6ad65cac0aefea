"""One sandbox per session for its hooks, set up once, instead of one bubblewrap per hook run.

Why: a hook runs on every matching tool call, and setting up a sandbox (namespaces, mounts, a
network namespace) costs several times the hook's own ``sh -c`` spawn. The first sandboxed hook of
a session starts :mod:`cox.hooks.zygote_server` inside the session's hook sandbox — the very
bubblewrap line a hook would get — and every later hook is a request to it: a ``sh -c`` spawn in
there, with the hook's own environment, working folder, stdin and timeout.

- Same confinement: the server runs inside the hook wrapper's argv; the hooks it starts are its
  children in that sandbox. What is shared between two hooks of one session is the sandbox's
  private ``/tmp``, nothing more than a hook could already leave in the workspace.
- Never a lost hook: when the server is busy (hooks run in parallel, subagents share the parent's
  hooks), cannot start, or dies mid-request, the hook runs the direct way (its own bubblewrap).
- An interrupt kills the whole sandbox at once (its process group; the kernel ends the rest of its
  PID namespace with it), and the next hook starts a fresh one.
- Nothing outlives the session: ``close`` ends it, and when cox dies (SIGKILL included) the
  server's stdin closes and it exits. The server is the sandbox's PID 1 (``--as-pid-1``), so when
  it ends the kernel kills everything left in the sandbox — bubblewrap's own init would instead
  wait for every last process a hook left behind. It is started without ``--die-with-parent``:
  that ties a process to the *thread* that spawned it, and hooks run on whatever thread asked
  (the session's, a subagent's, a pool's).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cox.log import get_logger
from cox.protocol.interfaces import CancelToken
from cox.supervisors.timer import scheduler

from .run import Outcome, Wrap
from .zygote_server import b64, recv, send, unb64

log = get_logger("cox.hooks")

START_S = 10.0
"""The most the server may take to say it is ready (a Python start inside the sandbox)."""
SLACK_S = 5.0
"""Beyond a hook's own timeout (the server kills it then), how long before the server is presumed stuck."""


def _source_root() -> str:
    import cox

    return str(Path(cox.__file__).resolve().parent.parent)


class HookSandbox:
    def __init__(self, wrap: Wrap, env: Mapping[str, str]) -> None:
        self.wrap = wrap
        self.env = dict(env)
        self._busy = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._started_argv: list[str] = []
        self._closed = False
        self.started = 0
        """How many servers this session started (a test and the bench read it)."""

    def run(self, command: str, stdin: bytes, *, cwd: Path, env: Mapping[str, str], timeout_s: float,
            cancel: CancelToken | None = None) -> Outcome | None:
        """The hook's outcome, or None: run it the direct way (busy, closed, or no server)."""
        if self._closed or not self._busy.acquire(blocking=False):
            return None
        try:
            try:
                argv = self._argv()
            except Exception:  # noqa: BLE001 - no sandbox now: the direct way says why
                return None
            proc = self._proc
            if proc is not None and (proc.poll() is not None or argv != self._started_argv):
                self._end(proc)  # gone, or the sandbox a hook gets now differs (a .git made since)
                proc = None
            proc = proc or self._start(argv)
            if proc is None:
                return None
            interrupted: list[bool] = []

            def on_cancel() -> None:
                interrupted.append(True)
                self._kill(proc)

            unregister = cancel.on_cancel(on_cancel) if cancel is not None else None
            stop_watch = scheduler.call_later(timeout_s + SLACK_S, lambda: self._kill(proc))
            try:
                assert proc.stdin is not None and proc.stdout is not None
                send(proc.stdin.fileno(), {"command": command, "stdin": b64(stdin), "cwd": str(cwd),
                                           "env": dict(env), "timeout_s": timeout_s})
                reply = recv(proc.stdout.fileno())
            except OSError:
                reply = None
            finally:
                stop_watch()
                if unregister is not None:
                    unregister()
            if interrupted:
                self._reap(proc)
                return Outcome(None, error="was stopped: the turn was interrupted")
            if reply is None:  # the server died or was stuck: this hook runs the direct way
                log.warning("the hook sandbox ended mid-request; running the hook directly")
                self._kill(proc)
                self._reap(proc)
                return None
            return Outcome(reply.get("code"), unb64(reply.get("stdout")), unb64(reply.get("stderr")),
                           bool(reply.get("timed_out")), reply.get("error"))
        finally:
            self._busy.release()

    def close(self) -> None:
        """End the sandbox (the session is closing); hooks after this run the direct way."""
        self._closed = True
        with self._busy:  # a hook under way finishes first (each is bounded by its timeout)
            proc, self._proc = self._proc, None
        if proc is not None:
            self._end(proc)

    def _end(self, proc: subprocess.Popen[bytes]) -> None:
        try:
            if proc.stdin is not None:
                proc.stdin.close()  # the server exits at the end of its input
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self._kill(proc)
        self._reap(proc)

    def _argv(self) -> list[str]:
        code = "import sys; sys.path.insert(0, sys.argv[1]); from cox.hooks.zygote_server import main; main()"
        # The interpreter's tree and cox's source are named so the sandbox shows them (a venv or a
        # checkout under /tmp would be hidden by the sandbox's private /tmp).
        wrapped = self.wrap([sys.executable, "-E", "-s", "-c", code, _source_root(), sys.prefix])
        argv = [a for a in wrapped if a != "--die-with-parent"]
        return [argv[0], "--as-pid-1", *argv[1:]]  # the server is the sandbox's init: when it ends, all end

    def _start(self, argv: list[str]) -> subprocess.Popen[bytes] | None:
        try:
            proc = subprocess.Popen(argv, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
        except Exception as exc:  # noqa: BLE001 - no sandbox now: the hook runs the direct way and says why
            log.warning("hook sandbox did not start", error=str(exc))
            return None
        self.started += 1
        assert proc.stdout is not None
        stop_watch = scheduler.call_later(START_S, lambda: self._kill(proc))
        try:
            hello = recv(proc.stdout.fileno())
        except OSError:
            hello = None
        finally:
            stop_watch()
        if not hello or not hello.get("ready"):
            log.warning("hook sandbox did not come up; hooks run directly")
            self._kill(proc)
            self._reap(proc)
            return None
        self._proc, self._started_argv = proc, argv
        return proc

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _reap(self, proc: subprocess.Popen[bytes]) -> None:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log.warning("hook sandbox did not end after SIGKILL", pid=proc.pid)
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if self._proc is proc:
            self._proc = None


def sandboxed(wrap: Wrap | None) -> bool:
    """Is this wrapper a real sandbox (bubblewrap), worth keeping one per session?"""
    if wrap is None:
        return False
    try:
        argv: Any = wrap(["true"])
    except Exception:  # noqa: BLE001 - a wrapper that refuses (no sandbox) keeps refusing per hook
        return False
    return bool(argv) and os.path.basename(str(argv[0])) == "bwrap"
