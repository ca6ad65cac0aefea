"""``session/load`` replays the stored session as updates (the same rollout every surface
writes) and goes on from it; ``session/set_mode`` changes what the engine allows."""

from __future__ import annotations

from pathlib import Path

from acp import RequestError, text_block

from .driver import Editor, agent, run, script


def test_load_replays_the_stored_session_and_set_mode_plan_holds(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path / "s.json", [
        {"text": "I read it.", "tool_calls": [{"id": "r1", "name": "bash", "input": {"command": "echo first"}}]},
        {"text": "First answer."},
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "plan.txt", "content": "x"}}]},
        {"text": "I will describe it instead."},
    ])
    first = Editor(["allow_once"])

    async def before() -> str:
        async with agent(first, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("remember PELICAN")])
            return str(sid)

    sid = run(before())
    later = Editor()

    async def after() -> str:
        async with agent(later, ws, s) as conn:
            loaded = await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
            assert loaded.modes.current_mode_id == "default"
            replayed = list(later.updates)
            await conn.set_session_mode(session_id=sid, mode_id="plan")
            answer = await conn.prompt(session_id=sid, prompt=[text_block("now write plan.txt")])
            kinds = [u.session_update for _, u in replayed]
            assert kinds[0] == "user_message_chunk" and replayed[0][1].content.text == "remember PELICAN"
            assert "".join(u.content.text for _, u in replayed if u.session_update == "agent_message_chunk") \
                == "I read it.First answer."
            call = next(u for _, u in replayed if u.session_update == "tool_call")
            assert (call.tool_call_id, call.kind) == ("r1", "execute")
            assert any(u.session_update == "tool_call_update" and u.tool_call_id == "r1" and u.status == "completed"
                       for _, u in replayed)
            return str(answer.stop_reason)

    # The script's replies start over in the new process: skip the two the first one used.
    script(tmp_path / "s.json", [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "plan.txt", "content": "x"}}]},
        {"text": "I will describe it instead."},
    ])
    assert run(after()) == "end_turn"
    assert [u.current_mode_id for u in later.of("current_mode_update")] == ["plan"]
    assert later.asked == []  # plan mode denies the write: nobody is asked
    assert not (ws / "plan.txt").exists()
    failed = [u for u in later.of("tool_call_update") if u.tool_call_id == "w1"]
    assert failed[-1].status == "failed" and "plan mode" in failed[-1].content[0].content.text
    # The model was sent the stored conversation: the load continued the session, not a new one.
    rollout = (tmp_path / "cox-home").rglob(f"{sid}*.jsonl")
    assert "now write plan.txt" in next(rollout).read_text()


def test_bad_requests_are_refused_with_a_sentence_and_architect_is_a_preset(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path / "s.json", [])
    editor = Editor()

    async def go() -> list[str]:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            await conn.set_session_mode(session_id=sid, mode_id="architect")
            said = []
            for bad in (conn.set_session_mode(session_id=sid, mode_id="yolo"),
                        conn.load_session(cwd=str(ws), session_id="../../etc/passwd", mcp_servers=[]),
                        conn.load_session(cwd=str(ws), session_id="01NOSUCHSESSION", mcp_servers=[])):
                try:
                    await bad
                except RequestError as exc:  # the error answer, as the client raises it
                    said.append(str(exc.data))
            return said

    mode, path, missing = run(go())
    assert "unknown mode 'yolo'" in mode and "acceptEdits" in mode
    assert "is not a cox session id" in path and "no stored session 01NOSUCHSESSION" in missing
    assert [u.current_mode_id for u in editor.of("current_mode_update")] == ["architect"]
