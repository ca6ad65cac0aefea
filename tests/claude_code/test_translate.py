"""The translator alone, on cox's Events: what only a long or unusual session would show end to
end (compaction, a subagent's messages, secrets in a tool's output, the id mapping)."""

from __future__ import annotations

import io
import json
from typing import Any

from cox.protocol import messages as m
from cox.protocol.types import ToolResult, Usage
from cox.surfaces.claude_code.ids import ulid_to_uuid, uuid_to_ulid
from cox.surfaces.claude_code.translate import ClaudePrinter
from cox.surfaces.claude_code.wire import Wire


def printer(**kw: Any) -> tuple[ClaudePrinter, io.StringIO]:
    out = io.StringIO()
    p = ClaudePrinter(Wire(out), io.StringIO(), **kw)
    p.event(m.SessionStarted(session_id="01JABCDEFGHJKMNPQRSTVWXYZ0", cwd="/w", model="m1", tools=["bash", "read"]), "")
    return p, out


def sent(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(x) for x in out.getvalue().splitlines()]


def test_ulid_and_uuid_are_one_id_both_ways():
    from cox.protocol.types import new_ulid

    ulid = new_ulid()
    shown = ulid_to_uuid(ulid)
    assert len(shown) == 36 and uuid_to_ulid(shown) == ulid
    assert ulid_to_uuid("not-a-ulid") == "not-a-ulid" and uuid_to_ulid("plain") == "plain"


def test_compaction_is_a_status_and_a_boundary():
    p, out = printer()
    p.event(m.Compacted(summary="s", before_tokens=9000, after_tokens=100), "")
    lines = sent(out)
    assert [(x["subtype"], x.get("status")) for x in lines] == [("status", "compacting"), ("compact_boundary", None),
                                                               ("status", None)]
    assert lines[1]["compact_metadata"]["pre_tokens"] == 9000


def test_a_subagents_messages_carry_the_parent_call():
    p, out = printer()
    inner = m.AssistantMessage(turn=1, content=[{"type": "tool_use", "id": "c1", "name": "read",
                                                 "input": {"path": "x"}}])
    p.event(m.AgentEvent(agent_id="a1", call_id="parent1", event=m.to_dict(inner)), "")
    done = m.ToolCallDone(call_id="c1", result=ToolResult(visible="text"))
    p.event(m.AgentEvent(agent_id="a1", call_id="parent1", event=m.to_dict(done)), "")
    lines = sent(out)
    assert [x.get("subtype") for x in lines if x["type"] == "system"] == ["task_started", "task_progress"]
    assistant, user = (x for x in lines if x["type"] != "system")
    assert assistant["parent_tool_use_id"] == user["parent_tool_use_id"] == "parent1"
    assert assistant["message"]["content"][0] == {"type": "tool_use", "id": "c1", "name": "Read",
                                                  "input": {"file_path": "/w/x"}}
    assert p.denials == []  # a child's denial is the child's


def test_secrets_in_a_tool_result_are_scrubbed_and_usage_goes_per_model():
    p, out = printer()
    key = "sk-ant-api03-" + "A" * 90
    p.event(m.UsageEvent(usage=Usage(model="m1", input_tokens=10, output_tokens=2, cost_usd=0.5)), "")
    p.event(m.ToolCallDone(call_id="b1", result=ToolResult(visible=f"KEY={key}")), "")
    (user,) = sent(out)
    assert key not in json.dumps(user)
    assert p.model_usage["m1"]["inputTokens"] == 10 and p.model_usage["m1"]["costUSD"] == 0.5


def test_json_output_prints_the_result_alone():
    p, out = printer(only_result=True)
    p.event(m.TurnStarted(turn=1), "")
    p.event(m.AssistantMessage(turn=1, content=[{"type": "text", "text": "hi"}]), "")
    assert out.getvalue() == "" and not p.since_result
