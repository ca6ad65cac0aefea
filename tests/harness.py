"""Drive a real session (real actors, tools, store and permission engine) with a scripted model,
and collect its events. ``react`` lets a test answer approvals or interrupt at chosen events."""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cox.actors.provider.scripted import ScriptedProvider
from cox.actors.session.actor import SessionSettings
from cox.actors.tools.registry import builtin_tools
from cox.policy.permission import Engine
from cox.protocol import messages as m
from cox.protocol.types import ApprovalPolicy, PermissionMode, new_ulid
from cox.surfaces.runtime import App, SessionHandle
from tests.waits import BOUND_S

React = Callable[[Any, SessionHandle, "Run"], None]


@dataclass
class Run:
    events: list[Any] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    handle: SessionHandle | None = None
    provider: ScriptedProvider | None = None
    settings: SessionSettings | None = None

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


def run_session(workspace: Path, home: Path, replies: list[dict[str, Any]], prompts: list[str] | str, *,
                allow: list[str] | None = None, ask: list[str] | None = None, deny: list[str] | None = None,
                mode: PermissionMode = PermissionMode.DEFAULT, policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST,
                react: React | None = None, tools: dict[str, Any] | None = None, max_turns: int = 20,
                turns: int | None = None, timeout: float = BOUND_S, app: App | None = None,
                resumed: Any = None, session_id: str | None = None, budget_usd: float | None = None,
                hooks: Any = None, deferred: dict[str, Any] | None = None,
                agents: dict[str, list[dict[str, Any]]] | None = None, **settings_extra: Any) -> Run:
    """``agents``: the scripted replies of subagents, by their prompt (docs/scripted-provider.md)."""
    prompts = [prompts] if isinstance(prompts, str) else prompts
    provider = ScriptedProvider({"model": "scripted", "replies": replies, "agents": agents or {}})
    engine = Engine.compile(allow or [], ask or [], deny or [], home=home, roots=[workspace])
    settings = SessionSettings(session_id=session_id or new_ulid(), cwd=workspace, roots=[workspace],
                               model="scripted", permission_mode=mode, approval_policy=policy,
                               max_turns=max_turns, home=home, budget_usd=budget_usd,
                               limits={"visible_max_bytes": 2048, "output_head_lines": 5, "output_tail_lines": 5},
                               **settings_extra)
    own_app = app is None
    app = app or App(home)
    run = Run(provider=provider, settings=settings)
    try:
        handle = app.open_session(settings, provider, tools or builtin_tools(), engine, resumed, hooks, deferred)
        run.handle = handle
        pending = list(prompts)
        handle.submit(m.UserTurn(text=pending.pop(0)))
        want = turns if turns is not None else len(prompts)
        done = 0
        deadline = time.monotonic() + timeout
        while done < want:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"session did not finish in {timeout} s; events: {[e.type for e in run.events]}")
            try:
                event, line = handle.events.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            run.events.append(event)
            run.lines.append(line)
            if react is not None:
                react(event, handle, run)
            if event.type == "turn_done":
                done += 1
                if pending:  # the next prompt is a new turn, not a steering message
                    handle.submit(m.UserTurn(text=pending.pop(0)))
        # Anything emitted after the last turn_done would break invariant 1: give it a moment to show.
        time.sleep(0.05)
        while True:
            try:
                event, line = handle.events.get_nowait()
            except queue.Empty:
                break
            run.events.append(event)
            run.lines.append(line)
    finally:
        if own_app:
            app.close()
    return run


def normalize(run: Run, workspace: Path) -> list[dict[str, Any]]:
    """Events as golden-file dicts: volatile fields dropped, parallel completions sorted."""
    out: list[dict[str, Any]] = []
    for line in run.lines:
        d = json.loads(line.replace(str(workspace), "<ws>"))
        for key in ("duration_ms", "api_ms", "session_id"):
            d.pop(key, None)
        if d["type"] == "session_started":
            d.pop("cwd", None)
        if d["type"] == "usage":  # the scripted estimate counts the (temporary, varying) cwd
            for u in (d["usage"], d.get("session_total") or {}):
                u.pop("input_tokens", None)
        if d["type"] == "tool_call_done" and d["result"].get("archive_id"):
            aid = d["result"]["archive_id"]
            d = json.loads(json.dumps(d).replace(aid, "<archive>"))
        out.append(d)
    # Streamed output arrives in timing-dependent chunks: join consecutive chunks of a call.
    joined: list[dict[str, Any]] = []
    for d in out:
        prev = joined[-1] if joined else None
        if (d["type"] == "tool_call_output" and prev is not None and prev["type"] == "tool_call_output"
                and prev["call_id"] == d["call_id"]):
            prev["chunk"] += d["chunk"]
        else:
            joined.append(d)
    out = joined
    # Calls that ran in parallel may finish in any order: sort each run of completions by id.
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j]["type"] == "tool_call_done":
            j += 1
        if j - i > 1:
            out[i:j] = sorted(out[i:j], key=lambda d: d["call_id"])
        i = max(j, i + 1)
    return out


OUTSIDE_TURN = {"session_started", "notice", "rewound", "error", "compacted", "usage", "agent_event"}
"""What may come between turns (a background agent's events are relayed whenever they happen)."""


def check_invariants(run: Run) -> None:
    """DESIGN.md §5, items 1 and 2, on one run's event list (raises AssertionError)."""
    current: int | None = None
    started: list[int] = []
    done: list[int] = []
    requested: list[str] = []
    finished: dict[str, int] = {}
    for e in run.events:
        if e.type == "turn_started":
            assert current is None, f"turn {e.turn} started inside turn {current}"
            current = e.turn
            started.append(e.turn)
        elif e.type == "turn_done":
            assert current == e.turn, f"turn_done for {e.turn} while in {current}"
            done.append(e.turn)
            current = None
        elif current is None:
            assert e.type in OUTSIDE_TURN, f"{e.type} emitted outside a turn (after turn_done?)"
        if e.type == "tool_call_requested":
            requested.append(e.call.id)
        elif e.type == "tool_call_done":
            finished[e.call_id] = finished.get(e.call_id, 0) + 1
    assert started == done, f"turns started {started} but done {done}"
    assert len(set(started)) == len(started), "a turn number was used twice"
    for cid in requested:
        assert finished.get(cid) == 1, f"call {cid} got {finished.get(cid, 0)} tool_call_done events"
    assert set(finished) <= set(requested), "a tool_call_done without its request"
