"""Drive the real TUI inside tmux: start ``cox.surfaces.tui.demo`` on a scripted model, send
keys, poll ``capture-pane`` until the screen shows what a test expects (bounded waits).

Each test gets its own tmux server (``-L``), so nothing touches the person's tmux sessions, and
the server is killed in ``close``. Set ``COX_TUI_CAPTURES=1`` to have ``save`` write the text
captures under ``docs/``.
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


def need_tmux() -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed: the TUI tests drive the real screen through tmux")


class Tmux:
    def __init__(self, tmp: Path, home: Path, replies: list[dict[str, Any]], *, mode: str = "default",
                 width: int = 100, height: int = 30, env: dict[str, str] | None = None, cli: bool = False,
                 extra: str = "") -> None:
        need_tmux()
        self.ws = tmp / "ws"
        self.ws.mkdir(exist_ok=True)
        self.script = tmp / "script.json"
        self.script.write_text(json.dumps({"model": "scripted", "replies": replies}))
        self.socket = f"cox-tui-{uuid.uuid4().hex[:10]}"
        self.name = "tui"
        envs = {"COX_HOME": str(home), "TERM": "xterm-256color", **(env or {})}
        # cli: the real `cox` command (which picks the TUI on a terminal); else the TUI's own demo launcher
        program = (f"-m cox.surfaces.cli --script {self.script} --cwd {self.ws}" if cli else
                   f"-m cox.surfaces.tui.demo --script {self.script} --cwd {self.ws} --mode {mode} {extra}")
        cmd = f"cd {REPO} && {sys.executable} {program} 2>{tmp / 'stderr.txt'}; echo EXITED $?; sleep 120"
        args = ["new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height)]
        for k, v in envs.items():
            args += ["-e", f"{k}={v}"]
        self.tmux(*args, cmd)
        self.stderr = tmp / "stderr.txt"

    def tmux(self, *args: str) -> str:
        p = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True,
                           timeout=10)
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

    def wait(self, what: str | Callable[[str], bool], timeout: float = 10.0) -> str:
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
        try:
            self.tmux("kill-server")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        sock = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / self.socket
        sock.unlink(missing_ok=True)  # kill-server leaves the socket file behind
