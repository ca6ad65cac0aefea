"""A turn's end is answered by the store out of band (``recorder.py``, ``store.messages.TurnEnd``).

While the store has not answered a parent's turn end — it may be busy with hundreds of
subagents' lines — the parent's own events wait (its turn_done, which the answer may turn into
an error, and everything after it), and its subagents' relayed events do not. Before, the
parent's thread waited in the store's queue, and every child's end waited with it.
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cox.actors.provider.scripted import ScriptedProvider
from cox.actors.session.actor import SessionSettings
from cox.actors.store.actor import StoreActor
from cox.actors.store.rollout import read_rollout
from cox.actors.tools.agent import agent_tools
from cox.actors.tools.registry import builtin_tools
from cox.policy.permission import Engine
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode
from cox.surfaces.runtime import App

BOUND_S = 60.0
"""Outer bound for what must come (only a hang reaches it)."""
RELAY_BOUND_S = 5.0
"""How long a relayed child event may take while the parent's turn end is unanswered; the
parent's own wait for the store (before) was 10 s, so only a parent that waits reaches this."""


def _next(events: queue.Queue[tuple[Any, str]], until: float, want: Any) -> list[Any]:
    """Events up to and including the first that ``want`` accepts (AssertionError at ``until``)."""
    seen: list[Any] = []
    while True:
        left = until - time.monotonic()
        if left <= 0:
            raise AssertionError(f"not seen in time; seen: {[e.type for e in seen]}")
        try:
            event, _ = events.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        seen.append(event)
        if want(event):
            return seen


def test_the_parent_s_own_events_wait_for_its_turn_end_and_relayed_child_events_do_not(
        tmp_path: Path, cox_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws, home = tmp_path / "ws", tmp_path / "h"
    ws.mkdir()
    parent = "P"
    blocked, release = threading.Event(), threading.Event()
    real = StoreActor._receive

    def receive(self: StoreActor, message: Any) -> Any:
        # The parent's first turn end (a TurnEnd; before, its Sync) waits until the test says.
        if type(message).__name__ in ("TurnEnd", "Sync") and getattr(message, "session", "") == parent \
                and not blocked.is_set():
            blocked.set()
            release.wait(BOUND_S)
        return real(self, message)

    monkeypatch.setattr(StoreActor, "_receive", receive)
    provider = ScriptedProvider({"model": "scripted", "replies": [
        {"tool_calls": [{"id": "b1", "name": "agent", "input": {
            "description": "bg", "prompt": "stall", "subagent_type": "general-purpose", "run_in_background": True}}]},
        {"text": "started it"},
        {"text": "second turn"},
    ], "agents": {"stall": [{"events": [{"text": "working"}, {"stall": True}]}]}})
    settings = SessionSettings(session_id=parent, cwd=ws, roots=[ws], model="scripted", home=home,
                               permission_mode=PermissionMode.BYPASS, checkpoints=False)
    app = App(home)
    try:
        handle = app.open_session(settings, provider, {**builtin_tools(), **agent_tools()},
                                  Engine.compile(home=home, roots=[ws]))
        handle.submit(m.UserTurn(text="go"))
        until = time.monotonic() + BOUND_S
        seen = _next(handle.events, until, lambda e: e.type == "agent_event" and e.event["type"] == "user_message")
        assert blocked.wait(BOUND_S), "the parent's turn end never reached the store"
        handle.submit(m.UserTurn(text="again"))  # its events are the parent's own: they wait too
        handle.interrupt()  # no parent turn runs: the background child is interrupted; its end is relayed
        seen += _next(handle.events, time.monotonic() + RELAY_BOUND_S,
                      lambda e: e.type == "agent_event" and e.event["type"] == "turn_done")
        assert "turn_done" not in [e.type for e in seen], "the parent's turn_done showed before the store answered"
        assert [e.type for e in seen].count("turn_started") == 1, "the second turn showed before the first ended"
        rollout = home / "sessions" / f"{parent}.jsonl"
        assert "turn_done" not in [e["type"] for e in read_rollout(rollout).events]  # nothing was written yet

        release.set()
        rest = _next(handle.events, until, lambda e: e.type == "turn_done")
        assert rest[-1].stop.value == "end_turn"
        rest += _next(handle.events, until, lambda e: e.type == "turn_done")
        kinds = [e.type for e in rest if e.type != "agent_event"]
        # The held events come in their order: the first turn's end, then the second turn whole.
        assert kinds[0] == "turn_done" and kinds.count("turn_started") == 1 and kinds[-1] == "turn_done"
        assert kinds.index("turn_started") > 0
        written = [e["type"] for e in read_rollout(rollout).events if e["type"] != "agent_event"]
        assert written.count("turn_done") == 2
        handle.shutdown()
    finally:
        release.set()
        app.close()
