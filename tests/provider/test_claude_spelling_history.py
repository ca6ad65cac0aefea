"""The model's own history keeps the tool name and fields it used (Claude Code's ``Bash`` with a
timeout in ms), on every wire: cox runs ``bash`` but the provider is shown what the model said,
next to the result of that call id (each API pairs a call and its result by id, not by name)."""

from __future__ import annotations

import json

from cox.actors.provider.anthropic import messages_body
from cox.actors.provider.openai_chat import chat_messages
from cox.actors.provider.openai_responses import input_items
from cox.actors.session.history import normalize, result_block, tool_results, user_text

SAID = {"command": "ls", "timeout": 5000, "description": "list"}
HISTORY = normalize([
    user_text("go"),
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": dict(SAID)}]},
    tool_results([result_block("toolu_1", "a.txt", False)]),
])


def test_anthropic_sends_the_models_own_tool_use() -> None:
    body = messages_body(HISTORY, [])
    [use] = [b for m in body if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
    assert (use["id"], use["name"], use["input"]) == ("toolu_1", "Bash", SAID)


def test_openai_responses_sends_the_models_own_function_call() -> None:
    [call] = [i for i in input_items(HISTORY) if i.get("type") == "function_call"]
    assert (call["call_id"], call["name"], json.loads(call["arguments"])) == ("toolu_1", "Bash", SAID)
    assert [i["call_id"] for i in input_items(HISTORY) if i.get("type") == "function_call_output"] == ["toolu_1"]


def test_openai_chat_sends_the_models_own_tool_call() -> None:
    [msg] = [m for m in chat_messages(HISTORY) if m.get("tool_calls")]
    [call] = msg["tool_calls"]
    assert (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])) == ("toolu_1", "Bash", SAID)
