"""The session's events as the web agent mode's SSE events, one of each (the ones a scripted HTTP
turn does not reach: compaction, fallback, notices, errors, edited calls), and the wire format."""

from __future__ import annotations

import json

from cox.protocol import messages as m
from cox.protocol.types import StopReason, ToolCall, ToolResult, ToolStatus, Usage
from cox.surfaces.web.frames import TurnFrames, sse


def test_each_event_has_its_frame() -> None:
    f = TurnFrames("claude-sonnet-4-5")
    call = ToolCall(id="t1", name="bash", input={"command": "ls"}, subject="ls")
    assert f.of(m.TurnStarted(turn=3)) == [("start", {"turn": 3, "model": "claude-sonnet-4-5"})]
    assert f.of(m.ThinkingDelta(text="h")) == [("block", {"index": 0, "block": {"type": "thinking"}}),
                                              ("delta", {"index": 0, "kind": "thinking", "text": "h"})]
    assert f.of(m.ThinkingDelta(text="m"))[0][0] == "delta"  # the same block goes on
    assert f.of(m.TextDelta(text="a"))[0] == ("block", {"index": 1, "block": {"type": "text"}})
    assert f.of(m.ToolCallRequested(call=call))[0][0] == "tool_call"
    assert f.of(m.TextDelta(text="b"))[0] == ("block", {"index": 2, "block": {"type": "text"}})  # after a call: new
    assert f.of(m.ToolCallEdited(call=call))[0][1]["edited"] is True
    assert f.of(m.ApprovalRequired(call=call, reason="asks"))[0] == (
        "approval", {"approval_id": "t1", "call": {"id": "t1", "name": "bash", "input": {"command": "ls"},
                                                   "subject": "ls", "risk": "exec"},
                     "reason": "asks", "answers": ["yes", "no", "always"]})
    assert f.of(m.ToolCallOutput(call_id="t1", chunk="x\n")) == [("tool_output", {"id": "t1", "chunk": "x\n"})]
    done = f.of(m.ToolCallDone(call_id="t1", result=ToolResult(status=ToolStatus.DENIED, visible="no")))
    assert done[0][1]["done"] is True and done[0][1]["status"] == "denied"
    assert f.of(m.Compacted(summary="s", before_tokens=9, after_tokens=2)) == [
        ("compaction", {"summary": "s", "before_tokens": 9, "after_tokens": 2})]
    fell = f.of(m.Notice(level="warning", message="x is unavailable (529); main turns go on with the fallback "
                                                  "model claude-haiku-4-5"))
    assert fell[0][0] == "fallback" and fell[0][1]["model"] == "claude-haiku-4-5"
    assert f.of(m.Notice(level="info", message="hi")) == [("notice", {"level": "info", "message": "hi"})]
    assert f.of(m.ErrorEvent(message="boom")) == [("error", {"message": "boom", "fatal": False})]
    assert f.of(m.UsageEvent(usage=Usage(model="m", input_tokens=5))) == []
    end = f.of(m.TurnDone(turn=3, stop=StopReason.END_TURN))
    assert end[0][0] == "done" and end[0][1]["model"] == "claude-haiku-4-5" and end[0][1]["usage"]["input_tokens"] == 5
    assert end[0][1]["rolled_back"] is False
    assert f.of(m.Rewound(to_turn=3, what="conversation")) == []
    assert f.of(m.TurnDone(turn=3, stop=StopReason.ERROR, reason="refusal"))[0][1]["rolled_back"] is True


def test_a_frame_is_one_event_and_one_data_line() -> None:
    wire = sse("delta", {"text": "two\nlines"}).decode()
    assert wire.endswith("\n\n") and wire.count("\n") == 3
    name, data = wire.split("\n")[:2]
    assert name == "event: delta" and json.loads(data[6:]) == {"text": "two\nlines"}
