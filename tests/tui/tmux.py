"""Drive the real TUI inside tmux: start ``cox.surfaces.tui.demo`` on a scripted model, send
keys, poll ``capture-pane`` until the screen shows what a test expects (bounded waits).

Each test gets its own tmux server (``-L``), so nothing touches the person's tmux sessions, and
the server is killed in ``close``. Every socket is named ``cox-tui-<run>-<n>`` with this test
process's run id: the session-end sweep (``sweep``, called from ``tests/conftest.py``) kills the
ones a failed teardown left, never another run's; and each server also watches this process and
kills itself within a second of it dying, so a killed run (SIGKILL, a timeout) leaves none behind.
Set ``COX_TUI_CAPTURES=1`` to have ``save`` write the text captures under ``docs/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

RUN_ID = f"{os.getpid()}{uuid.uuid4().hex[:6]}"
"""This test process's part of every socket name."""

BOUND_S = 60.0


def _socket_dir() -> Path:
    return Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"


def _kill_server(socket: str) -> None:
    try:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=BOUND_S)
    except (OSError, subprocess.TimeoutExpired):
        pass
    (_socket_dir() / socket).unlink(missing_ok=True)  # kill-server leaves the socket file behind


def sweep() -> list[str]:
    """Kill every tmux server this run started that is still there; returns their names."""
    try:
        left = sorted(p.name for p in _socket_dir().glob(f"cox-tui-{RUN_ID}-*"))
    except OSError:
        return []
    for socket in left:
        _kill_server(socket)
    return left


def need_tmux() -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed: the TUI tests drive the real screen through tmux")


class Tmux:
    def __init__(self, tmp: Path, home: Path, replies: list[dict[str, Any]], *, mode: str = "default",
                 width: int = 100, height: int = 30, env: dict[str, str] | None = None, cli: bool = False,
                 extra: str = "", model: str = "scripted", agents: dict[str, Any] | None = None) -> None:
        need_tmux()
        self.ws = tmp / "ws"
        self.ws.mkdir(exist_ok=True)
        self.script = tmp / "script.json"
        self.script.write_text(json.dumps({"model": model, "replies": replies, "agents": agents or {}}))
        self.socket = f"cox-tui-{RUN_ID}-{uuid.uuid4().hex[:6]}"
        self.name = "tui"
        envs = {"COX_HOME": str(home), "TERM": "xterm-256color", **(env or {})}
        # cli: the real `cox` command (which picks the TUI on a terminal); else the TUI's own demo launcher
        program = (f"-m cox.surfaces.cli --script {self.script} --cwd {self.ws} {extra}" if cli else
                   f"-m cox.surfaces.tui.demo --script {self.script} --cwd {self.ws} --mode {mode} {extra}")
        # The server ends itself when this test process dies (a killed run), or 120 s after the
        # program exited (the screen stays readable meanwhile).
        # $TMUX inside the pane is "socket,server pid,session": the socket file goes first (a
        # kill-server would end this watcher with the pane before it could remove it).
        watch = (f"(while kill -0 {os.getpid()} 2>/dev/null; do sleep 1; done; "
                 f"p=${{TMUX#*,}}; rm -f {_socket_dir() / self.socket}; kill ${{p%%,*}}) >/dev/null 2>&1 &")
        cmd = (f"{watch} cd {REPO} && {sys.executable} {program} 2>{tmp / 'stderr.txt'}; echo EXITED $?; "
               f"sleep 120; tmux -L {self.socket} kill-server")
        args = ["new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height)]
        for k, v in envs.items():
            args += ["-e", f"{k}={v}"]
        self.stderr = tmp / "stderr.txt"
        try:
            self.tmux(*args, cmd)
        except BaseException:
            _kill_server(self.socket)  # a server may be up though new-session failed
            raise

    def tmux(self, *args: str) -> str:
        p = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True,
                           timeout=BOUND_S)
        if p.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def send(self, text: str) -> None:
        self.type(text)
        self.keys("Enter")

    def wait(self, what: str | Callable[[str], bool], timeout: float = BOUND_S) -> str:
        """Poll the screen until it contains ``what`` (or the predicate holds); fail with the
        last screen and the program's stderr when the deadline passes."""
        check = (lambda s: what in s) if isinstance(what, str) else what
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if check(screen):
                return screen
            time.sleep(0.05)
        err = self.stderr.read_text() if self.stderr.exists() else ""
        raise AssertionError(f"screen never showed {what!r} within {timeout} s:\n{screen}\n--- stderr:\n{err}")

    def save(self, name: str, screen: str) -> None:
        if os.environ.get("COX_TUI_CAPTURES"):
            DOCS.mkdir(exist_ok=True)
            (DOCS / f"tui-{name}.txt").write_text("\n".join(line.rstrip() for line in screen.splitlines()) + "\n")

    def quit(self) -> str:
        """Leave with /quit; the transcript is printed to the normal screen; returns that screen."""
        self.send("/quit")
        return self.wait("EXITED 0")

    def close(self) -> None:
        _kill_server(self.socket)


class Client:
    """A real tmux client attached to a test's server through a pty: bytes written here go
    through tmux's input parsing (``escape-time`` included), as a person's typing does;
    ``send-keys`` skips that. A thread drains the client's screen output so tmux never blocks."""

    def __init__(self, t: Tmux) -> None:
        import pty
        import threading

        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the tmux client
            os.environ["TERM"] = "xterm-256color"
            os.execvp("tmux", ["tmux", "-L", t.socket, "attach", "-t", t.name])
        self._stop = threading.Event()
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self) -> None:
        import select

        while not self._stop.is_set():
            try:
                if select.select([self.fd], [], [], 0.1)[0]:
                    os.read(self.fd, 65536)
            except OSError:
                return

    def press(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self) -> None:
        import signal

        self._stop.set()
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self._drain.join(timeout=BOUND_S)
        try:
            os.close(self.fd)
        except OSError:
            pass
