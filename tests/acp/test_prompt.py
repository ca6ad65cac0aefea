"""``cox acp`` driven by the ACP package's own client: initialize, session/new, a prompt that
streams text and a tool call and ends with its stopReason; the prompt's content blocks."""

from __future__ import annotations

from pathlib import Path

from acp import text_block
from acp.helpers import embedded_text_resource, resource_block

from .driver import Editor, agent, run, script


def test_initialize_new_and_prompt_stream_text_and_a_tool_call(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path / "s.json", [
        {"thinking": "plan it", "signature": "sig", "text": "Let me write it.", "chunk": 4,
         "tool_calls": [{"id": "t1", "name": "bash", "input": {"command": "echo hi > out.txt"}}]},
        {"tool_calls": [{"id": "t2", "name": "todo_write", "input": {"todos": [
            {"content": "write out.txt", "status": "completed"}, {"content": "report", "status": "in_progress"}]}}]},
        {"text": "Done."},
    ])
    editor = Editor(["allow_once"])

    async def go() -> None:
        async with agent(editor, ws, s) as conn:
            caps = conn.init.agent_capabilities
            assert caps.load_session and caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
            assert caps.mcp_capabilities.http
            assert conn.init.auth_methods == []  # a script needs no key
            new = await conn.new_session(cwd=str(ws), mcp_servers=[])
            assert {m.id for m in new.modes.available_modes} >= {"default", "acceptEdits", "plan", "architect"}
            assert new.modes.current_mode_id == "default"
            answer = await conn.prompt(session_id=new.session_id, prompt=[text_block("write out.txt")])
            assert answer.stop_reason == "end_turn"
            sid = new.session_id
            await editor.wait(lambda: "available_commands_update" in editor.kinds())
            assert all(s == sid for s, _ in editor.updates)

    run(go())
    assert (ws / "out.txt").read_text() == "hi\n"
    assert editor.text() == "Let me write it.Done."
    kinds = editor.kinds()
    assert kinds.index("agent_message_chunk") < kinds.index("tool_call")  # the text as it came, before the call
    assert "".join(u.content.text for u in editor.of("agent_thought_chunk")) == "plan it"
    start = next(u for u in editor.of("tool_call") if u.tool_call_id == "t1")
    assert (start.kind, start.status, start.raw_input) == ("execute", "pending", {"command": "echo hi > out.txt"})
    assert editor.asked[0].tool_call_id == "t1"
    done = [u for u in editor.of("tool_call_update") if u.tool_call_id == "t1" and u.status == "completed"]
    assert done and done[0].raw_output["exit_code"] == 0
    assert kinds.index("tool_call") < kinds.index("tool_call_update")
    plan = editor.of("plan")[-1]
    assert [(e.content, e.status) for e in plan.entries] == [("write out.txt", "completed"), ("report", "in_progress")]


def test_an_edit_shows_its_diff_and_an_embedded_file_reaches_the_model(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    s = script(tmp_path / "s.json", [
        {"tool_calls": [{"id": "e1", "name": "edit", "input": {"path": "a.py", "old_string": "x = 1",
                                                                "new_string": "x = 2"}}]},
        {"text": "ok"},
    ])
    editor = Editor()

    async def go() -> None:
        async with agent(editor, ws, s, "--permission-mode", "acceptEdits") as conn:
            new = await conn.new_session(cwd=str(ws), mcp_servers=[])
            assert new.modes.current_mode_id == "acceptEdits"
            prompt = [text_block("fix a.py"), resource_block(embedded_text_resource("file:///notes.md", "NOTE-7731"))]
            assert (await conn.prompt(session_id=new.session_id, prompt=prompt)).stop_reason == "end_turn"

    run(go())
    assert (ws / "a.py").read_text() == "x = 2\n"
    assert editor.asked == []  # acceptEdits: the engine allowed it
    start = next(u for u in editor.of("tool_call") if u.tool_call_id == "e1")
    assert start.kind == "edit" and start.locations[0].path == str(ws / "a.py")
    diff = start.content[0]
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", str(ws / "a.py"), "x = 1", "x = 2")
    rollout = next((tmp_path / "cox-home").rglob("*.jsonl")).read_text()
    assert "NOTE-7731" in rollout and "file:///notes.md" in rollout
