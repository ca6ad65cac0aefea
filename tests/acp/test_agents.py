"""A subagent's tool calls appear as nested tool calls of the parent's ``agent`` call, and its
approvals are asked under the id the client knows the call by."""

from __future__ import annotations

from pathlib import Path

from acp import text_block

from .driver import Editor, agent, run, script


def test_a_subagents_calls_are_nested_under_the_agent_call(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path / "s.json", [
        {"tool_calls": [{"id": "ag1", "name": "agent", "input": {"description": "make it", "prompt": "CHILD TASK"}}]},
        {"text": "parent done"},
    ], agents={"CHILD TASK": [
        {"tool_calls": [{"id": "c1", "name": "bash", "input": {"command": "touch child.txt"}}]},
        {"text": "child report"},
    ]})
    editor = Editor(["allow_once"])

    async def go() -> str:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            return str((await conn.prompt(session_id=sid, prompt=[text_block("delegate")])).stop_reason)

    assert run(go()) == "end_turn"
    assert (ws / "child.txt").exists()
    starts = {u.tool_call_id: u for u in editor.of("tool_call")}
    nested = [u for cid, u in starts.items() if cid.endswith("/c1")]
    assert len(nested) == 1 and nested[0].kind == "execute"
    assert nested[0].field_meta == {"cox": {"parentToolCallId": "ag1"}}
    assert starts["ag1"].field_meta is None
    assert [c.tool_call_id for c in editor.asked] == [nested[0].tool_call_id]
    done = [u for u in editor.of("tool_call_update") if u.tool_call_id == nested[0].tool_call_id]
    assert done[-1].status == "completed" and done[-1].field_meta == {"cox": {"parentToolCallId": "ag1"}}
    assert editor.text() == "parent done"  # the child's words are its report, not the parent's message
