"""Chaos at the hook points: a PreToolUse or PostToolUse hook process SIGKILLed (by its pid) while
it runs, in a real ``cox run``. The turn goes on, the person is warned which hook failed, and the
call the hook guarded still runs and is recorded in the rollout.

The hook announces itself by writing a pid file and then becomes a tagged ``sleep`` that would
outlive the test (its timeout is 300 s): only the kill ends it. Its pid comes from the tag in
``/proc`` (inside bubblewrap's pid namespace the ``$$`` it writes is not the host's), and the pid
file says the hook has begun. Every wait has an outer bound that only a hang reaches.
"""

from __future__ import annotations

import os
import secrets
import signal
import threading
import time
from pathlib import Path

import pytest

from cox.actors.store.rollout import read_rollout
from tests.hooks.rig import Rig, bash, one
from tests.procs import pids_with
from tests.waits import BOUND_S

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("chaos")]


@pytest.fixture
def rig(tmp_path: Path, cox_home: Path) -> Rig:
    return Rig(tmp_path, cox_home)


def _kill_when_running(pid_file: Path, tag: str, killed: list[int]) -> None:
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        pids = pids_with(tag, at_start=True) if pid_file.exists() else []
        if pids:
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            return
        time.sleep(0.01)


@pytest.mark.parametrize("sandbox", [True, False])
@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse"])
def test_a_hook_killed_while_it_runs_is_a_warning_and_the_call_is_recorded(rig: Rig, event: str,
                                                                           sandbox: bool) -> None:
    tag = f"hookvictim-{secrets.token_hex(6)}"
    pid_file = rig.out / "hook.pid"
    hook = rig.script("victim.sh", f"cat > /dev/null\necho $$ > {pid_file}\nexec -a {tag} sleep 300")
    rig.hooks({event: one(hook, "Bash", timeout=300)}, extra="" if sandbox else "sandbox = false")
    killed: list[int] = []
    killer = threading.Thread(target=_kill_when_running, args=(pid_file, tag, killed), daemon=True)
    killer.start()
    started = time.monotonic()
    run = rig.run([bash("echo ran > marker; echo printed-by-the-call"), {"text": "fine"}])
    killer.join(BOUND_S)
    assert killed, "the hook never ran (no pid file and tagged process seen)"
    assert time.monotonic() - started < 120  # far below the hook's 300 s: the kill ended it
    assert run.result["subtype"] == "success", run.result
    assert (rig.ws / "marker").read_text() == "ran\n"
    warnings = [w for w in run.warnings() if f"{event} hook" in w]
    assert any("failed (exit" in w for w in warnings), run.warnings()
    done = run.of("tool_call_done")
    assert len(done) == 1 and "printed-by-the-call" in done[0]["result"]["visible"]
    assert "printed-by-the-call" in run.request_text(-1)  # the model got the call's result
    rollout = read_rollout(rig.cox_home / "sessions" / f"{run.result['session_id']}.jsonl")
    assert not rollout.notices
    recorded = [e for e in rollout.events if e["type"] == "tool_call_done"]
    assert [e["result"]["visible"] for e in recorded] == [done[0]["result"]["visible"]]
    assert [e["type"] for e in rollout.events][-1] == "turn_done"
    assert pids_with(tag, at_start=True) == []
