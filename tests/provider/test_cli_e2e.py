"""`cox run -p` end to end against a model API on 127.0.0.1, one real multi-tool turn per
provider: the model reads a file, writes another, and answers; cox runs the tools for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.provider import anthropic_text, chat_text, responses_text
from tests.provider.loopback import Loopback, Reply, sse

pytestmark = pytest.mark.xdist_group("headless")


def anthropic_tool(call_id: str, name: str, args: dict[str, Any]) -> list[bytes]:
    return sse([
        ("message_start", {"type": "message_start", "message": {
            "id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1200, "output_tokens": 1,
                                                                  "cache_read_input_tokens": 900}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": call_id, "name": name, "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": json.dumps(args)}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def responses_tool(call_id: str, name: str, args: dict[str, Any]) -> list[bytes]:
    item = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "arguments": "",
            "status": "in_progress"}
    arguments = json.dumps(args)
    done = {**item, "arguments": arguments, "status": "completed"}
    resp = {"id": "r", "object": "response", "status": "in_progress", "model": "gpt-5", "output": []}
    return sse([
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": resp}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
                                        "item": item}),
        ("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta",
                                                    "sequence_number": 2, "item_id": item["id"], "output_index": 0,
                                                    "delta": arguments}),
        ("response.function_call_arguments.done", {"type": "response.function_call_arguments.done",
                                                   "sequence_number": 3, "item_id": item["id"], "output_index": 0,
                                                   "arguments": arguments}),
        ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 4, "output_index": 0,
                                       "item": done}),
        ("response.completed", {"type": "response.completed", "sequence_number": 5, "response": {
            **resp, "status": "completed", "output": [done],
            "usage": {"input_tokens": 1200, "output_tokens": 9, "total_tokens": 1209,
                      "input_tokens_details": {"cached_tokens": 900}, "output_tokens_details": {"reasoning_tokens": 0}}}}),
    ])


def chat_tool(call_id: str, name: str, args: dict[str, Any]) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "local",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    return sse([
        (None, chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                                          "function": {"name": name, "arguments": ""}}]})),
        (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(args)}}]})),
        (None, chunk({}, "tool_calls")),
        (None, {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "local", "choices": [],
                "usage": {"prompt_tokens": 1200, "completion_tokens": 9, "total_tokens": 1209}}),
        (None, "[DONE]"),
    ])


CASES = {
    "anthropic": (anthropic_tool, anthropic_text, {"ANTHROPIC_API_KEY": "test-key"}, "ANTHROPIC_BASE_URL", ""),
    "openai": (responses_tool, responses_text, {"OPENAI_API_KEY": "test-key", "COX_CORE_PROVIDER": "openai",
                                                "COX_CORE_MODEL": "gpt-5"}, "OPENAI_BASE_URL", "/v1"),
    "openai-chat": (chat_tool, chat_text, {"OPENAI_API_KEY": "test-key", "COX_CORE_MODEL": "local-model"},
                    "OPENAI_BASE_URL", "/v1"),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_multi_tool_turn_end_to_end(kind: str, tmp_path: Path, cox_home: Path):
    tool, text, env_extra, base_var, suffix = CASES[kind]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the answer is 42\n")
    with Loopback() as api:
        api.add(Reply(tool("call_1", "read", {"path": "notes.txt"})))
        api.add(Reply(tool("call_2", "write", {"path": "out.txt", "content": "42\n"})))
        api.add(Reply(text(["Wrote ", "out.txt."])))
        env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
        env.update(env_extra)
        env[base_var] = api.url + suffix
        p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "copy the answer",
                            "--permission-mode", "acceptEdits", "--output-format", "stream-json"],
                           cwd=ws, env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr + p.stdout[-2000:]
        events = [json.loads(x) for x in p.stdout.splitlines()]
        assert (ws / "out.txt").read_text() == "42\n"
        assert events[-1]["type"] == "result" and events[-1]["result"] == "Wrote out.txt."
        assert events[-1]["num_turns"] == 3 and events[-1]["usage"]["input_tokens"] > 0
        assert len(api.requests) == 3
        # the second request carries the read's result; the third the write's
        second = json.dumps(api.requests[1]["json"])
        assert "the answer is 42" in second and "call_1" in second
        assert "call_2" in json.dumps(api.requests[2]["json"])
