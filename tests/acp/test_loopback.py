"""``cox acp`` against a model API on 127.0.0.1 (the loopback Anthropic server): a prompt with
text and an image reaches the model as sent, its streamed text and tool call reach the client,
and the tool's result goes back to the model."""

from __future__ import annotations

import base64
from pathlib import Path

from acp import image_block, text_block

from bench.provider import anthropic_text
from tests.provider.loopback import Loopback, Reply
from tests.provider.test_cli_e2e import anthropic_tool

from .driver import Editor, agent, run

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")).decode()


def test_a_prompt_with_an_image_streams_text_and_a_tool_call_from_the_model(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    editor = Editor(["allow_once"])
    with Loopback() as api:
        api.add(Reply(anthropic_tool("toolu_1", "bash", {"command": "echo LOOP-6120 > seen.txt"})))
        api.add(Reply(anthropic_text(["The image ", "is one ", "pixel."])))
        env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "test-key"}

        async def go() -> str:
            async with agent(editor, ws, None, env=env) as conn:
                assert conn.init.auth_methods == []  # a key is set
                sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
                prompt = [text_block("what is this?"), image_block(PNG, "image/png")]
                return str((await conn.prompt(session_id=sid, prompt=prompt)).stop_reason)

        assert run(go()) == "end_turn"
        first, second = (r["json"] for r in api.requests)
    sent = first["messages"][-1]["content"]
    image = next(b for b in sent if b["type"] == "image")
    assert image["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
    assert any(b.get("type") == "text" and b["text"] == "what is this?" for b in sent)
    assert (ws / "seen.txt").read_text() == "LOOP-6120\n"
    results = [b for m in second["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])
               if b.get("type") == "tool_result"]
    assert results and results[-1]["tool_use_id"] == "toolu_1"
    assert editor.text() == "The image is one pixel."
    call = next(u for u in editor.of("tool_call") if u.tool_call_id == "toolu_1")
    assert call.kind == "execute" and editor.asked[0].tool_call_id == "toolu_1"
