"""The web chat goes through cox's own Anthropic adapter against a model API on loopback: the key
is used on the server and never reaches the page; the system prompt (with the workspace's
AGENTS.md) is byte-identical on every request; effort and cache control reach the request."""

from __future__ import annotations

import json
from pathlib import Path

from tests.provider.loopback import Loopback, Reply
from tests.provider.test_anthropic_session import message

from .served import Served, text_of

KEY = "sk-ant-api03-web-chat-secret-0123456789"


def test_the_chat_uses_the_servers_adapter_and_key(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Answer like a pirate.\n", encoding="utf-8")
    with Loopback() as api:
        for text in ("ahoy there", "ahoy again", "aye, working"):
            api.add(Reply(message([{"type": "text", "text": text}], "end_turn")))
        served = Served(ws, None, tmp_path, extra_env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.url})
        try:
            seen = [served.client.get("/").text, served.client.get("/api/config").text]
            config = json.loads(seen[1])
            assert config["provider"] == "anthropic" and config["default_model"] == "claude-sonnet-4-5"
            history = [{"role": "user", "content": "hi"}]
            frames = list(served.stream("/api/chat", {"messages": history, "effort": "low"}))
            assert text_of(frames) == "ahoy there"
            history = [*frames[-1][1]["history"], {"role": "user", "content": "again"}]
            frames2 = list(served.stream("/api/chat", {"messages": history}))
            assert text_of(frames2) == "ahoy again"
            seen += [json.dumps(frames), json.dumps(frames2)]
            agent_turn = served.turn(served.session(), "fix it", effort="medium")  # an agent turn's own effort
            assert text_of(agent_turn) == "aye, working"
        finally:
            assert served.stop() == 0
    assert all(KEY not in text for text in seen), "the key reached the browser"
    first, second, third = api.requests
    assert third["json"]["output_config"] == {"effort": "medium"}  # the turn's effort on the agent's request
    assert KEY in json.dumps(first["headers"])  # used by the server, toward the model API only
    assert first["json"]["system"] == second["json"]["system"]  # built once: the cache prefix holds
    assert "Answer like a pirate." in json.dumps(first["json"]["system"])
    assert first["json"]["thinking"] == {"type": "adaptive", "display": "summarized"}  # the design's fields
    assert first["json"]["output_config"] == {"effort": "low"}  # the message's own effort
    assert "cache_control" in json.dumps(second["json"]["messages"])
    assert second["json"]["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "ahoy there"}]}
