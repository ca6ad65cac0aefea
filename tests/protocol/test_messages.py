"""Every Submission and Event round-trips through its JSON line; bad input is refused clearly."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cox.protocol import messages as m
from cox.protocol.types import Decision, PermissionMode, StopReason, ToolCall, ToolResult, Usage

SUBMISSIONS = [
    m.UserTurn(text="create hello.txt containing hi"),
    m.Approve(call_id="c1", decision=Decision.ALLOW),
    m.Approve(call_id="c1", decision=Decision.EDIT, edited_input={"path": "x"}),
    m.Interrupt(),
    m.Answer(question_id="q1", answer={"name": "x"}),
    m.Compact(focus="the parser"),
    m.SetMode(mode=PermissionMode.PLAN),
    m.SetModel(model="claude-opus-4-8"),
    m.Rewind(to_turn=3, what="code"),
    m.CloseAgent(agent_id="s-a1"),
    m.SetMcpServer(server="docs", enabled=False),
    m.Shutdown(),
]

CALL = ToolCall(id="c1", name="write", input={"path": "hello.txt", "content": "hi\n"})
EVENTS = [
    m.SessionStarted(session_id="s", cwd="/w", model="x", tools=["read"]),
    m.TurnStarted(turn=1),
    m.UserMessage(turn=1, text="hi"),
    m.TextDelta(text="Created hello.txt."),
    m.ThinkingDelta(text="hmm"),
    m.AssistantMessage(turn=1, content=[{"type": "text", "text": "x"}]),
    m.ToolCallRequested(call=CALL),
    m.ToolCallEdited(call=CALL),
    m.ApprovalRequired(call=CALL, reason="write needs approval"),
    m.ToolCallOutput(call_id="c1", chunk="..."),
    m.ToolCallDone(call_id="c1", result=ToolResult(visible="wrote 3 bytes to hello.txt", meta={"bytes": 3})),
    m.CheckpointEvent(turn=1, call_id="c1", files=["hello.txt"]),
    m.Compacted(summary="s", dropped=["a"], before_tokens=10, after_tokens=2),
    m.Question(question_id="q", prompt="name?", schema={"type": "object"}),
    m.QuestionClosed(question_id="q", reason="withdrawn"),
    m.Notice(level="security", message="redacted"),
    m.UsageEvent(usage=Usage(model="x", input_tokens=3)),
    m.TurnDone(turn=1, stop=StopReason.END_TURN),
    m.Rewound(to_turn=1),
    m.ErrorEvent(message="boom"),
]


@pytest.mark.parametrize("sub", SUBMISSIONS, ids=lambda s: s.type)
def test_submission_round_trip(sub):
    line = m.encode(sub)
    assert json.loads(line)["type"] == sub.type
    assert m.decode_submission(line) == sub


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_event_round_trip(event):
    line = m.encode(event)
    assert "\n" not in line
    assert m.decode_event(line) == event


def test_every_event_type_of_the_issue_exists():
    wanted = {"session_started", "turn_started", "text_delta", "thinking_delta", "tool_call_requested",
              "approval_required", "tool_call_output", "tool_call_done", "checkpoint", "compacted", "question",
              "question_closed", "notice", "usage", "turn_done", "rewound", "error"}
    assert wanted <= {e.type for e in EVENTS}
    assert set(m.SUBMISSION_TYPES) == {s.type for s in SUBMISSIONS}


def test_example_one_shape():
    done = m.ToolCallDone(call_id="c1", result=ToolResult(visible="wrote 3 bytes to hello.txt"))
    d = json.loads(m.encode(done))
    assert d["type"] == "tool_call_done" and d["result"]["visible"] == "wrote 3 bytes to hello.txt"
    assert json.loads(m.encode(m.TurnDone(turn=1, stop=StopReason.END_TURN)))["stop"] == "end_turn"


@pytest.mark.parametrize("raw, needle", [
    ('{"type": "teleport"}', "unknown submission type 'teleport'"),
    ('{"text": "no type"}', "has no 'type' field"),
    ('{"type": "approve", "call_id": "c", "decision": "maybe"}', "decision"),
    ('{"type": "approve", "call_id": "c", "decision": "edit"}', "edited_input"),
    ('{"type": "user_turn", "text": "x", "colour": "red"}', "colour"),
    ('{"type": "rewind", "to_turn": "three"}', "to_turn"),
    ("[1, 2]", "expected a JSON object"),
    ("{not json", "not JSON"),
])
def test_bad_submissions_are_refused_clearly(raw, needle):
    with pytest.raises(m.ProtocolError) as err:
        m.decode_submission(raw)
    assert needle in str(err.value)
    assert str(err.value).startswith("bad submission")


def test_question_closed_names_its_reason():
    line = m.encode(m.QuestionClosed(question_id="q1", reason="interrupted"))
    assert json.loads(line) == {"type": "question_closed", "question_id": "q1", "reason": "interrupted"}
    with pytest.raises(m.ProtocolError, match="reason"):
        m.decode_event('{"type": "question_closed", "question_id": "q1", "reason": "bored"}')
    with pytest.raises(m.ProtocolError, match="question_id"):
        m.decode_event('{"type": "question_closed", "reason": "withdrawn"}')


def test_unknown_event_type_lists_the_known_ones():
    with pytest.raises(m.ProtocolError, match="turn_done"):
        m.decode_event('{"type": "party"}')


@given(st.text())
def test_text_delta_round_trips_any_text(text):
    event = m.TextDelta(text=text)
    assert m.decode_event(m.encode(event)).text == text


def test_a_user_turns_allow_rules_never_come_from_a_wire() -> None:
    """``UserTurn.allow`` (a command's allowed-tools) is the program's: a stdin line that names
    it is refused, and it is never written out."""
    with pytest.raises(m.ProtocolError, match="allow"):
        m.decode_submission('{"type": "user_turn", "text": "x", "allow": ["Bash"]}')
    assert "allow" not in m.encode(m.UserTurn(text="x", allow=["Bash"]))
