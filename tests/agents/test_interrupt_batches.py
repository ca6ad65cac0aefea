"""An interrupt of many children costs the one store writer a message per handled message, not
one per line: each child's closing lines (its partial reply, its turn_done) reach the store in
one Append, the parent's aborted calls in another, and every line still lands in order (the
parent's copy of a child's line is the child's line itself)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from cox.actors.session.agents import RELAYED
from cox.actors.store.actor import StoreActor
from cox.actors.store.messages import Append
from cox.actors.store.rollout import read_rollout
from cox.actors.tools.agent import agent_tools
from cox.actors.tools.registry import builtin_tools
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode
from tests.harness import check_invariants, run_session

CHILDREN = 6


def test_an_interrupt_sends_each_child_s_closing_lines_in_one_append(tmp_path: Path, cox_home: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    appends: list[tuple[str, list[dict[str, Any]]]] = []
    lock = threading.Lock()
    real = StoreActor._receive

    def receive(self: StoreActor, message: Any) -> Any:
        if isinstance(message, Append):
            with lock:
                appends.append((message.session, [json.loads(x) for x in message.line.split("\n")]))
        return real(self, message)

    monkeypatch.setattr(StoreActor, "_receive", receive)
    ws = tmp_path / "ws"
    ws.mkdir()
    prompts = [f"work {n}" for n in range(CHILDREN)]
    started: set[str] = set()

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "agent_event" and event.event["type"] == "tool_call_requested":
            started.add(event.agent_id)
            if len(started) == CHILDREN:
                handle.submit(m.Interrupt())

    run = run_session(ws, tmp_path / "h", [
        {"tool_calls": [{"id": f"a{n}", "name": "agent", "input": {"description": p, "prompt": p}}
                        for n, p in enumerate(prompts)]},
    ], "go", tools={**builtin_tools(), **agent_tools()}, mode=PermissionMode.BYPASS, react=react,
        agents={p: [{"tool_calls": [{"id": "b", "name": "bash", "input": {"command": "sleep 60"}}]}] for p in prompts})
    check_invariants(run)
    parent = run.settings.session_id
    for child in started:
        ends = [batch for sid, batch in appends if sid == child and any(e["type"] == "turn_done" for e in batch)]
        assert len(ends) == 1, ends
        assert [e["type"] for e in ends[0]] == ["tool_call_done", "turn_done"]  # one message, one Append
        written = read_rollout(tmp_path / "h" / "sessions" / f"{child}.jsonl").events
        assert [e["type"] for e in written][-2:] == ["tool_call_done", "turn_done"]
        assert written[-1]["stop"] == "interrupted"
    aborted = [batch for sid, batch in appends if sid == parent and any(e["type"] == "tool_call_done" for e in batch)]
    assert len(aborted) == 1 and sum(e["type"] == "tool_call_done" for e in aborted[0]) == CHILDREN
    # The parent's rollout holds every relayed child line as the child wrote it.
    relayed = [e for e in read_rollout(tmp_path / "h" / "sessions" / f"{parent}.jsonl").events if e["type"] == "agent_event"]
    for child in started:
        own = [e for e in read_rollout(tmp_path / "h" / "sessions" / f"{child}.jsonl").events
               if e["type"] in RELAYED]
        assert [e["event"] for e in relayed if e["agent_id"] == child] == own


def test_an_interrupted_child_s_stream_closes_after_the_crowd_s_ends_or_at_the_bound() -> None:
    from cox.actors.session.agents import AgentHost, Child
    from cox.actors.session.ledger import Lineage, Purse
    from cox.agents.runner import AgentTask
    from tests.waits import BOUND_S

    host = AgentHost(None, Lineage(0, Purse()))  # type: ignore[arg-type]
    ran: list[str] = []
    host.defer(lambda: ran.append("idle"))
    assert ran == ["idle"]  # no interrupt under way: closed at once
    task = AgentTask(description="d", prompt="p", subagent_type="general-purpose")
    one, two = Child("a1", task, "general-purpose", "c1"), Child("a2", task, "general-purpose", "c2")
    host._interrupt(one)
    host._interrupt(two)
    streamed = threading.Event()
    host.defer(streamed.set)
    host._relayed_end("a1")
    assert not streamed.is_set()  # one child's end is still to come: its siblings' streams wait
    host._relayed_end("a2")
    assert streamed.wait(BOUND_S)  # the last end is relayed: every held stream closes (just after)

    stuck = Child("a3", task, "general-purpose", "c3")  # never ends (say, blocked): the bound closes it
    closed = threading.Event()
    host._interrupt(stuck)
    host.defer(closed.set)
    assert not closed.is_set()
    assert closed.wait(BOUND_S)
