"""The TUI tests' tmux servers never outlive the run: not after a failed teardown (the session-end
sweep) and not after the run is killed (each server watches the test process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.waits import BOUND_S

from .tmux import REPO, RUN_ID, _socket_dir, need_tmux, sweep

CHILD = """
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from tests.tui.tmux import Tmux, RUN_ID
t = Tmux(Path({tmp!r}), Path({tmp!r}) / "home", [{{"text": "hi"}}])
print(t.socket, flush=True)
time.sleep(600)
"""


def _alive(socket: str) -> bool:
    return subprocess.run(["tmux", "-L", socket, "list-sessions"], capture_output=True, timeout=BOUND_S).returncode == 0


def _wait_gone(socket: str) -> bool:
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        if not _alive(socket):
            return True
        time.sleep(0.1)
    return False


def test_a_killed_run_leaves_no_tmux_server(tmp_path: Path) -> None:
    need_tmux()
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(repo=str(REPO), tmp=str(tmp_path))],
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert child.stdout is not None
        socket = child.stdout.readline().strip()
        assert socket.startswith("cox-tui-") and _alive(socket)
        child.send_signal(signal.SIGKILL)  # no teardown, no session-end sweep
        child.wait(BOUND_S)
        assert _wait_gone(socket), f"tmux server {socket} outlived the killed run"
        deadline = time.monotonic() + BOUND_S
        while (_socket_dir() / socket).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not (_socket_dir() / socket).exists(), "its socket file was left behind"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(BOUND_S)


def test_the_sweep_kills_only_this_runs_servers(tmp_path: Path) -> None:
    need_tmux()
    mine, other = f"cox-tui-{RUN_ID}-sweeptest", "cox-tui-1other-sweeptest"
    try:
        for socket in (mine, other):
            subprocess.run(["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "sleep 300"],
                           check=True, timeout=BOUND_S)
        assert mine in sweep()
        assert not _alive(mine) and not (_socket_dir() / mine).exists()
        assert _alive(other), "the sweep killed another run's server"
    finally:
        for socket in (mine, other):
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=BOUND_S)
            (_socket_dir() / socket).unlink(missing_ok=True)
