"""The TUI's subagents without a terminal: /agents' rows, each agent's transcript, the status
line's count and the approval label, fed the events a real session with subagents emits (and
hostile or malformed relayed payloads, which never raise)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cox.actors.tools.agent import agent_tools
from cox.actors.tools.registry import builtin_tools
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode, StopReason, ToolCall, ToolResult, ToolStatus, Usage
from cox.surfaces.tui.agents import approval_label, line
from cox.surfaces.tui.model import Model
from tests.harness import run_session


def agent_call(call_id: str, prompt: str, kind: str = "general-purpose", **extra: Any) -> dict[str, Any]:
    return {"id": call_id, "name": "agent",
            "input": {"description": f"task {call_id}", "prompt": prompt, "subagent_type": kind, **extra}}


def start(model: Model, call_id: str, kind: str, desc: str) -> None:
    model.apply(m.ToolCallRequested(call=ToolCall(id=call_id, name="agent", input={
        "description": desc, "prompt": "p", "subagent_type": kind})))


def test_a_real_session_s_agents_are_listed_with_their_transcripts(tmp_path: Path, cox_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the answer is 42\n")
    run = run_session(ws, tmp_path / "h", [
        {"tool_calls": [agent_call("a1", "find the answer", "explore"), agent_call("a2", "fail please")]},
        {"text": "The agent says 42."},
    ], "what is the answer?", tools={**builtin_tools(), **agent_tools()}, mode=PermissionMode.BYPASS, agents={
        "find the answer": [
            {"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "notes.txt"}}],
             "usage": {"input_tokens": 1000, "output_tokens": 20}},
            {"text": "notes.txt:1 says the answer is 42", "usage": {"input_tokens": 1100, "output_tokens": 30}},
        ],
        "fail please": [{"text": "", "stop": "refusal"}],
    })
    model = Model()
    seen_running = 0
    for event in run.events:
        model.apply(event)
        seen_running = max(seen_running, len(model.status.subagents))
    assert seen_running >= 1  # the status line counted them while they ran
    assert model.status.subagents == [] and model.status.agents_summary() == ""
    rows = model.agents.rows()
    assert [(a.type, a.description) for a in rows] == [("explore", "task a1"), ("general-purpose", "task a2")]
    explore = rows[0]
    assert explore.state == "done" and explore.id.startswith(run.of("session_started")[0].session_id) and explore.tokens == 2150
    assert rows[1].state == "failed"
    text = model.transcripts[explore.id].plain()
    assert "read  notes.txt" in text and "cox › notes.txt:1 says the answer is 42" in text
    assert "you › find the answer" in text
    assert "explore  done  2.1k tok" in line(explore)
    # the parent's own transcript holds the agent calls, not the child's read
    assert "read  notes.txt" not in model.plain()


def test_running_agents_come_first_and_the_status_counts_them() -> None:
    model = Model()
    for n in (1, 2, 3):
        start(model, f"c{n}", "explore", f"look {n}")
        model.apply(m.AgentEvent(agent_id=f"s-a{n}", call_id=f"c{n}", event={"type": "turn_started", "turn": 1}))
    assert model.status.agents_summary() == "3 agents"
    model.apply(m.AgentEvent(agent_id="s-a1", call_id="c1", event=_done(StopReason.END_TURN)))
    model.apply(m.AgentEvent(agent_id="s-a2", call_id="c2", event=_done(StopReason.INTERRUPTED)))
    assert model.status.agents_summary() == "1 agent"
    assert [(a.id, a.state) for a in model.agents.rows()] == [
        ("s-a3", "running"), ("s-a1", "done"), ("s-a2", "interrupted")]
    model.apply(m.AgentEvent(agent_id="s-a1", call_id="c1", event={"type": "turn_started", "turn": 2}))
    assert model.agents.by_id["s-a1"].state == "running"  # agent_send gave it another turn
    assert model.agents.find("a3") is model.agents.by_id["s-a3"]


def test_usage_and_the_worktree_from_the_report() -> None:
    model = Model()
    start(model, "c1", "general-purpose", "fix it")
    usage = m.UsageEvent(usage=Usage(input_tokens=300, output_tokens=40, cost_usd=0.012))
    model.apply(m.AgentEvent(agent_id="s-a1", call_id="c1", event=_dict(usage)))
    model.apply(m.AgentEvent(agent_id="s-a1", call_id="c1", event=_done(StopReason.END_TURN)))
    model.apply(m.ToolCallDone(call_id="c1", result=ToolResult(
        visible="fixed\n\n[worktree /repo/_worktrees/fix-it, branch fix-it]")))
    agent = model.agents.by_id["s-a1"]
    assert (agent.tokens, round(agent.cost_usd, 4), agent.worktree) == (340, 0.012, "/repo/_worktrees/fix-it")
    assert "⧉ /repo/_worktrees/fix-it" in line(agent) and "$0.0120" in line(agent)
    # the parent's own status cost is the session's, not bumped by the child's relayed usage
    assert model.status.cost_usd == 0.0


def test_an_agent_call_that_fails_while_its_agent_runs_marks_it_failed() -> None:
    model = Model()
    start(model, "c1", "explore", "look")
    model.apply(m.AgentEvent(agent_id="s-a1", call_id="c1", event={"type": "turn_started", "turn": 1}))
    model.apply(m.ToolCallDone(call_id="c1", result=ToolResult(status=ToolStatus.ERROR, visible="the agent failed")))
    assert model.agents.by_id["s-a1"].state == "failed" and model.status.subagents == []


def test_malformed_and_hostile_relayed_events_never_crash_and_are_sanitized() -> None:
    model = Model()
    start(model, "c1", "ex\x1b]52;c;AAAA\x07plore", "desc \x1b[2J\nline two")
    for bad in ({}, {"type": "nope"}, {"type": "turn_done"}, {"type": "usage", "usage": "lots"},
                {"type": "tool_call_done", "call_id": 3}, {"type": ["x"]}):
        model.apply(m.AgentEvent(agent_id="s-a1", call_id="c1", event=bad))
    model.apply(m.AgentEvent(agent_id="", call_id="c1", event={"type": "turn_started", "turn": 1}))
    assert model.agents.by_id == {}  # nothing that did not decode made a row
    model.apply(m.AgentEvent(agent_id="s-a1\x1b[31m", call_id="c1", event=_dict(m.AssistantMessage(turn=1,
        content=[{"type": "text", "text": "hi \x1b]0;title\x07there"}]))))
    model.apply(m.AgentEvent(agent_id="s-a1\x1b[31m", call_id="c1", event={
        "type": "tool_call_requested", "call": {"id": "t1", "name": "ba\x1b[1msh", "input": {"command": "ls"}}}))
    (agent,) = model.agents.rows()
    shown = line(agent) + model.transcripts[agent.id].plain()
    assert "\x1b" not in shown and "\x07" not in shown
    assert agent.description == "desc line two"
    # an event of a kind cox does not know yet (a newer child) is dropped, not fatal
    model.apply(m.AgentEvent(agent_id="s-a1", call_id="c1", event={"type": "from_the_future", "x": 1}))


def test_a_child_s_approval_label_is_split_from_its_reason() -> None:
    assert approval_label("[agent s-a1 · explore] write needs approval") == ("s-a1 · explore", "write needs approval")
    assert approval_label("write needs approval") == ("", "write needs approval")
    label, reason = approval_label("[agent s-a1\x1b[2J · x] why")
    assert "\x1b" not in label


def test_a_replayed_session_s_agents_are_not_left_running() -> None:
    model = Model()
    model.replay([
        _dict(m.ToolCallRequested(call=ToolCall(id="c1", name="agent", input={"subagent_type": "explore",
                                                                             "description": "d", "prompt": "p"}))),
        _dict(m.AgentEvent(agent_id="s-a1", call_id="c1", event={"type": "turn_started", "turn": 1})),
    ])
    assert [(a.type, a.state) for a in model.agents.rows()] == [("explore", "interrupted")]
    assert model.status.subagents == []


def _dict(event: Any) -> dict[str, Any]:
    import json

    data: dict[str, Any] = json.loads(m.encode(event))
    return data


def _done(stop: StopReason) -> dict[str, Any]:
    return _dict(m.TurnDone(turn=1, stop=stop))


def _screen(ui: Any, cols: int = 100, rows: int = 30) -> str:
    canvas = ui.root.render((cols, rows), focus=True)
    return "\n".join(line.decode("utf-8", "replace") for line in canvas.text)


def _two_agents(ui: Any) -> None:
    ui.on_event(m.ToolCallRequested(call=ToolCall(id="c1", name="agent", input={
        "description": "read the notes", "prompt": "p", "subagent_type": "explore"})))
    ui.on_event(m.ToolCallRequested(call=ToolCall(id="c2", name="agent", input={
        "description": "fix the bug", "prompt": "q", "subagent_type": "general-purpose"})))
    for event in (m.TurnStarted(turn=1), m.UserMessage(turn=1, text="p"),
                  m.ToolCallRequested(call=ToolCall(id="r1", name="read", input={"path": "notes.txt"},
                                                    subject="notes.txt")),
                  m.ToolCallDone(call_id="r1", result=ToolResult(visible="42\n")),
                  m.AssistantMessage(turn=1, content=[{"type": "text", "text": "the notes say 42"}]),
                  m.TurnDone(turn=1, stop=StopReason.END_TURN)):
        ui.on_event(m.AgentEvent(agent_id="s-a1", call_id="c1", event=_dict(event)))
    ui.on_event(m.AgentEvent(agent_id="s-a2", call_id="c2", event=_dict(m.TurnStarted(turn=1))))


def test_slash_agents_lists_them_running_first_opens_a_transcript_and_goes_back() -> None:
    from cox.surfaces.tui.app import TUI
    from tests.tui.test_model import FakeHandle

    ui = TUI(FakeHandle())
    size = (100, 30)
    ui.composer.set_edit_text("/agents")
    ui.send()
    assert [b.text for b in ui.model.blocks if b.kind == "notice"] == ["no subagents run yet"]
    _two_agents(ui)
    ui.refresh()
    assert "⑂ 1 agent" in ui.status_text.text
    ui.composer.set_edit_text("/agents")
    ui.send()
    assert ui.modal_open()
    screen = _screen(ui)
    assert "agents: 1 running, 1 finished" in screen
    lines = [x for x in screen.splitlines() if " a1  " in x or " a2  " in x]
    assert "▸ a2  general-purpose  running" in lines[0] and "fix the bug" in lines[0]
    assert "  a1  explore  done" in lines[1] and "read the notes" in lines[1]
    ui.modal_key(size, "down")
    ui.modal_key(size, "enter")  # the finished explore agent's transcript
    screen = _screen(ui)
    assert "agent s-a1 · explore · done" in screen and "read" in screen and "notes.txt" in screen
    assert "the notes say 42" in screen
    ui.modal_key(size, "esc")  # back to the list
    assert "agents: 1 running, 1 finished" in _screen(ui)
    ui.modal_key(size, "esc")  # and out
    assert not ui.modal_open() and "agents:" not in _screen(ui)
    ui.composer.set_edit_text("/agents a2")  # straight to one
    ui.send()
    assert "agent s-a2 · general-purpose · running" in _screen(ui)
    ui.modal_key(size, "esc")
    ui.modal_key(size, "esc")
    ui.composer.set_edit_text("/agents nosuch")
    ui.send()
    assert ui.model.blocks[-1].text == "there is no agent nosuch; /agents lists them" and not ui.modal_open()


def test_a_child_s_approval_shows_the_agent_first_and_outranks_the_agents_view() -> None:
    from cox.protocol.types import Risk
    from cox.surfaces.tui.app import TUI
    from tests.tui.test_model import FakeHandle

    handle = FakeHandle()
    ui = TUI(handle)
    _two_agents(ui)
    ui.open_agents()
    call = ToolCall(id="w1", name="write", input={"path": "out.txt", "content": "hi"}, subject="out.txt",
                    risk=Risk.WRITE)
    ui.on_event(m.ApprovalRequired(call=call, reason="[agent s-a2 · general-purpose] no rule allows write"))
    screen = _screen(ui)
    assert "agent s-a2 · general-purpose: approve write?" in screen
    agent_row = [x for x in screen.splitlines() if "agent    " in x]
    assert agent_row and "s-a2 · general-purpose" in agent_row[0]
    assert "reason   no rule allows write" in screen
    ui.modal_key((100, 30), "y")
    assert [(s.call_id, s.decision.value) for s in handle.sent] == [("w1", "allow")]
    assert "agents: 1 running, 1 finished" in _screen(ui)  # the list was open before: it comes back
