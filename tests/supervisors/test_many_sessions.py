"""Supervisors that scale: thousands of children under one supervisor, in one process.

The session supervisor used to republish its whole child table on every start and exit, so each
new session cost more than the one before (4,000 took 52 s to open) and a burst of parallel
sessions timed out in ``start_child``. Two proofs: a count of what one start, stop and exit
publishes beside 300 siblings (must not grow with them), and 1,000 scripted sessions opened from
1,000 threads at once, all running together, that must all finish their turn.
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

import pykka
import pytest

from cox.actors.provider.scripted import ScriptedProvider
from cox.actors.session.actor import SessionSettings
from cox.actors.tools.registry import builtin_tools
from cox.policy.permission import Engine
from cox.protocol import messages as m
from cox.protocol.types import ApprovalPolicy, StopReason, new_ulid
from cox.supervisors import ChildSpec, CoxActor, Restart, registry, start_supervisor
from cox.supervisors import supervisor as supervisor_module
from cox.surfaces.runtime import App, SessionHandle
from tests.waits import BOUND_S

SESSIONS = 1000
OPENERS = SESSIONS
"""One thread per session, all asking the supervisor at once (what 400 did to the old one)."""


class _Idle(CoxActor):
    pass


class _Counting(supervisor_module.ChildInfo):
    built = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        type(self).built += 1
        super().__init__(*args, **kwargs)


def test_one_start_stop_or_exit_publishes_one_entry_whatever_the_siblings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor_module, "ChildInfo", _Counting)
    sup = start_supervisor("many", max_restarts=10, period_s=1.0)
    try:
        for i in range(300):
            sup.start_child(ChildSpec(f"c{i}", _Idle.start, restart=Restart.TEMPORARY))
        _Counting.built = 0
        sup.start_child(ChildSpec("new", _Idle.start, restart=Restart.TEMPORARY))
        assert _Counting.built == 1, f"starting one child published {_Counting.built} entries"

        _Counting.built = 0
        assert sup.terminate_child("c17")
        assert _Counting.built == 0, f"stopping one child published {_Counting.built} entries"

        _Counting.built = 0
        ref = sup.whereis("c42")
        assert ref is not None
        ref.stop(block=True, timeout=BOUND_S)  # a normal exit: a temporary child is forgotten
        deadline = time.monotonic() + BOUND_S
        while registry.child(sup.path, "c42") is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert registry.child(sup.path, "c42") is None, "the exited child is still published"
        assert _Counting.built == 0, f"one exit published {_Counting.built} entries"

        names = [c["name"] for c in sup.which_children()]
        assert names == [f"c{i}" for i in range(300) if i not in (17, 42)] + ["new"], "start order lost"
    finally:
        sup.stop(timeout=BOUND_S)


def _settings(ws: Path, home: Path) -> SessionSettings:
    return SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="scripted", home=home,
                           approval_policy=ApprovalPolicy.NEVER)


@pytest.mark.slow
def test_a_thousand_parallel_active_sessions_all_finish(tmp_path: Path, cox_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    engine = Engine.compile([], [], [], home=tmp_path, roots=[ws])
    app = App(cox_home)
    deadline = time.monotonic() + BOUND_S
    handles: list[SessionHandle] = []
    errors: list[str] = []
    lock = threading.Lock()

    def opener(k: int) -> None:
        for i in range(SESSIONS // OPENERS):
            try:
                provider = ScriptedProvider({"replies": [{"text": f"reply {k}.{i}"}]})
                handle = app.open_session(_settings(ws, cox_home), provider, builtin_tools(), engine)
                handle.submit(m.UserTurn(text="go"))
            except (pykka.Timeout, Exception) as exc:
                with lock:
                    errors.append(f"opener {k}, session {i}: {exc!r}")
                return
            with lock:
                handles.append(handle)

    try:
        openers = [threading.Thread(target=opener, args=(k,)) for k in range(OPENERS)]
        for th in openers:
            th.start()
        for th in openers:
            th.join(max(0.0, deadline - time.monotonic()))
        assert not errors, f"{len(errors)} sessions failed to open, first: {errors[0]}"
        assert len(handles) == SESSIONS

        unfinished: list[str] = []
        for handle in handles:
            texts: list[str] = []
            while True:
                try:
                    event, _ = handle.events.get(timeout=max(0.001, deadline - time.monotonic()))
                except queue.Empty:
                    unfinished.append(handle.session_id)
                    break
                if event.type == "text_delta":
                    texts.append(event.text)
                if event.type == "turn_done":
                    assert event.stop is StopReason.END_TURN, (handle.session_id, event)
                    assert "".join(texts).startswith("reply "), (handle.session_id, texts)
                    break
        assert not unfinished, f"{len(unfinished)} of {SESSIONS} sessions did not finish within {BOUND_S:g} s"
        # None was shut down: all of them are alive together under the one supervisor.
        children = app.sessions.which_children()
        assert len(children) == SESSIONS and all(c["alive"] for c in children)
    finally:
        app.close(timeout=BOUND_S)
