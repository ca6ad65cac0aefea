"""A SIGKILLed cox leaves no command of its running, even without the sandbox (issue 12, item 9).

Without bubblewrap there is no pid namespace and no ``--die-with-parent``, and a SIGKILLed cox
runs none of its own cleanup. Before, the bare command (``sandbox.mode = "danger-full-access"``)
went on running: here it would have touched a marker once its parent was gone. The reaper
(``cox/actors/tools/reaper.py``) ends the command's process group, a child that left the group
with ``setsid``, and a background job."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time

import pytest

from tests.tools.test_bash_sandbox import alive, wait_gone
from tests.waits import BOUND_S

pytestmark = pytest.mark.only_nobwrap

CONFIG = '[sandbox]\nmode = "danger-full-access"\n'


def _bash(command: str, cid: str, **extra: object) -> dict:
    return {"id": cid, "name": "bash", "input": {"command": command, **extra}}


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background-job"])
def test_a_sigkilled_cox_leaves_no_bare_command_running(attack, background: bool) -> None:
    tag = f"{secrets.randbelow(10**6) + 10**6}.25"  # sleep's argument: unique to this test
    marker = attack.workspace / "marker"
    # The script: itself, a child in its own group, a setsid child; each records its pid, and any
    # of them still alive after cox died touches the marker.
    attack.file("leftover.sh", f"""
echo $$ >> pids
(sleep {tag}; touch {marker}) &
echo $! >> pids
setsid sh -c 'echo $$ >> pids; sleep {tag}; touch {marker}' &
sleep {tag}
touch {marker}
""")
    calls = [_bash("sh leftover.sh", "b1", **({"run_in_background": True} if background else {}))]
    if background:  # then a foreground call that keeps cox busy until it is killed
        calls.append(_bash(f"sleep {tag}9", "b2"))
    argv, env = attack.command([{"tool_calls": calls}, {"text": "done"}],
                               args=("--permission-mode", "bypassPermissions"), config=CONFIG)
    proc = subprocess.Popen(argv, cwd=attack.workspace, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        pids = attack.workspace / "pids"
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline and proc.poll() is None:
            if pids.exists() and len(pids.read_text().split()) >= 3 and len(alive(f"sleep\0{tag}".encode())) >= 3 \
                    and (not background or alive(f"sleep\0{tag}9".encode())):
                break  # (a pid is written before its sleep has started: wait for both)
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        started = [int(p) for p in pids.read_text().split()]
        assert len(started) == 3 and len(alive(f"sleep\0{tag}".encode())) >= 3
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(BOUND_S)
        if proc.stderr is not None:
            proc.stderr.close()
    left = wait_gone(f"sleep\0{tag}".encode())
    for pid in left:  # do not leave them to touch the marker in a later test's time
        os.kill(pid, signal.SIGKILL)
    assert left == [], "a command of the killed cox is still running"
    still = []
    for pid in started:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                    still.append(pid)
        except OSError:
            pass
    assert still == [], f"still running: {still}"
    assert not marker.exists()
