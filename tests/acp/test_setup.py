"""What a client meets before and around a turn: authentication when no key is set, the slash
commands (listed, and expanded when prompted), and a failed turn answered as an error."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError, text_block

from .driver import Editor, agent, run, script


def test_without_a_key_initialize_offers_auth_and_new_session_names_the_variable(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    editor = Editor()

    async def go() -> tuple[list[str], str, str]:
        async with agent(editor, ws, None) as conn:
            methods = [m.id for m in conn.init.auth_methods]
            with pytest.raises(RequestError) as new:
                await conn.new_session(cwd=str(ws), mcp_servers=[])
            with pytest.raises(RequestError) as auth:
                await conn.authenticate(method_id="anthropic-api-key")
            return methods, f"{new.value.code} {new.value.data}", f"{auth.value.code} {auth.value.data}"

    methods, new, auth = run(go())
    assert methods == ["anthropic-api-key", "openai-api-key"]
    assert new.startswith("-32000") and "ANTHROPIC_API_KEY" in new  # auth_required, saying what to set
    assert auth.startswith("-32000") and "set ANTHROPIC_API_KEY" in auth


def test_commands_are_listed_and_expanded_and_a_failed_turn_is_an_error(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".cox" / "commands").mkdir(parents=True)
    (ws / ".cox" / "commands" / "review.md").write_text(
        "---\ndescription: review a file\nargument-hint: FILE\n---\nReview $ARGUMENTS carefully (CMD-4471).\n")
    s = script(tmp_path / "s.json", [
        {"text": "reviewed"},
        {"error": {"message": "upstream returned 500", "status": 500, "retryable": False}},
    ])
    editor = Editor()

    async def go() -> str:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            await editor.wait(lambda: bool(editor.of("available_commands_update")))
            assert (await conn.prompt(session_id=sid, prompt=[text_block("/review a.py")])).stop_reason == "end_turn"
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=sid, prompt=[text_block("again")])
            return str(failed.value.data)

    said = run(go())
    assert "upstream returned 500" in said
    listed = editor.of("available_commands_update")[0].available_commands
    assert [c.name for c in listed] == ["init", "review"]
    review = next(c for c in listed if c.name == "review")
    assert review.description == "review a file" and review.input.root.hint == "FILE"
    rollout = next((tmp_path / "cox-home").rglob("*.jsonl")).read_text()
    assert "Review a.py carefully (CMD-4471)." in rollout
