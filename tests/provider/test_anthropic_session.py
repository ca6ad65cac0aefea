"""Whole turns through the real stack with the Anthropic adapter: App → Session actor →
ProviderStream actor → ``AnthropicProvider`` → HTTP → the loopback API, which answers as the API
would (a rate limit first, then a ``read``, then a ``write``, then the final text). The tools run
for real in a temporary workspace."""

from __future__ import annotations

import json
import queue
import time
from pathlib import Path
from typing import Any

from cox.actors.provider.anthropic import AnthropicProvider
from cox.actors.session.actor import SessionSettings
from cox.actors.tools.registry import builtin_tools
from cox.policy.permission import Engine
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode, new_ulid
from cox.surfaces.runtime import App
from tests.provider.loopback import Loopback, Reply, sse
from tests.waits import BOUND_S


def message(blocks: list[dict[str, Any]], stop: str, *, cache_read: int = 0, cache_write: int = 0) -> list[bytes]:
    """A whole Messages stream for ``blocks`` (text or tool_use), streamed in small deltas."""
    events: list[tuple[str | None, dict[str, Any] | str]] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_x", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 900, "output_tokens": 1, "cache_read_input_tokens": cache_read,
                  "cache_creation_input_tokens": cache_write}}}), ("ping", {"type": "ping"})]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            text = block["text"]
            for j in range(0, len(text), 5):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "text_delta", "text": text[j : j + 5]}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
            raw = block.get("raw", json.dumps(block.get("input", {})))
            for j in range(0, len(raw), 9):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": raw[j : j + 9]}}))
        if not block.get("cut"):
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 40}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events)


def run_turns(api: Loopback, ws: Path, home: Path, prompts: list[str], timeout: float = BOUND_S) -> list[Any]:
    provider = AnthropicProvider("claude-test", api_key="sk-test", base_url=api.url)
    engine = Engine.compile([], [], [], home=home, roots=[ws])
    settings = SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="claude-test",
                               permission_mode=PermissionMode.ACCEPT_EDITS, home=home, checkpoints=False)
    app = App(home)
    events: list[Any] = []
    try:
        handle = app.open_session(settings, provider, builtin_tools(), engine)
        pending = list(prompts)
        handle.submit(m.UserTurn(text=pending.pop(0)))
        done = 0
        deadline = time.monotonic() + timeout
        while done < len(prompts):
            assert time.monotonic() < deadline, f"no turn_done in time: {[e.type for e in events]}"
            try:
                event, _line = handle.events.get(timeout=0.5)
            except queue.Empty:
                continue
            events.append(event)
            if event.type == "turn_done":
                done += 1
                if pending:
                    handle.submit(m.UserTurn(text=pending.pop(0)))
    finally:
        app.close()
    return events


def cache_marks(body: dict[str, Any]) -> list[str]:
    found = [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    found += [f"system[{i}]" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    for mi, msg in enumerate(body["messages"]):
        found += [f"messages[{mi}].content[{bi}]" for bi, b in enumerate(msg["content"]) if "cache_control" in b]
    return found


def test_a_read_then_write_turn_runs_the_tools_for_real(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n", encoding="utf-8")
    home = tmp_path / "home"
    with Loopback() as api:
        api.add(Reply([json.dumps({"type": "error", "error": {"type": "rate_limit_error",
                                                              "message": "slow down"}}).encode()],
                      status=429, headers={"content-type": "application/json", "retry-after-ms": "20"}))
        api.add(Reply(message([{"type": "text", "text": "Let me read it."},
                               {"type": "tool_use", "id": "toolu_r", "name": "read", "input": {"path": "a.txt"}}],
                              "tool_use", cache_write=3000)))
        api.add(Reply(message([{"type": "tool_use", "id": "toolu_w", "name": "write",
                                "input": {"path": "b.txt", "content": "ALPHA\n"}}], "tool_use", cache_read=3000)))
        api.add(Reply(message([{"type": "text", "text": "Copied a.txt to b.txt in upper case."}], "end_turn",
                              cache_read=3400)))
        api.add(Reply(message([{"type": "text", "text": "You're welcome."}], "end_turn", cache_read=3600)))
        events = run_turns(api, ws, home, ["copy a.txt to b.txt in upper case", "thanks"])
        sent = [r for r in api.requests]
    assert (ws / "b.txt").read_text(encoding="utf-8") == "ALPHA\n"
    types = [e.type for e in events]
    assert types.count("turn_done") == 2 and all(e.stop == "end_turn" for e in events if e.type == "turn_done")
    assert any(e.type == "notice" and "retry 1" in e.message for e in events)  # the 429, retried
    done = {e.call_id: e.result for e in events if e.type == "tool_call_done"}
    assert set(done) == {"toolu_r", "toolu_w"} and all(r.ok for r in done.values())
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert "Copied a.txt to b.txt in upper case." in text
    usage = [e.usage for e in events if e.type == "usage"]
    assert [u.cache_read_tokens for u in usage] == [0, 3000, 3400, 3600] and usage[0].cache_write_tokens == 3000

    bodies = [r["json"] for r in sent]
    assert len(bodies) == 5  # the rate-limited attempt, then one request per model call
    assert bodies[0] == bodies[1]  # the retry resends the same bytes
    # the cache-stable prefix: tools and the stable system blocks byte-identical on every request
    assert len({json.dumps([b["tools"], b["system"][:2]]) for b in bodies}) == 1
    # the read's result went back as a tool_result, then the write's
    second, third = bodies[2]["messages"], bodies[3]["messages"]
    (read_result,) = [b for b in second[-1]["content"] if b["type"] == "tool_result"]
    assert read_result["tool_use_id"] == "toolu_r" and "alpha" in json.dumps(read_result["content"])
    assert second[1]["content"][-1] == {"type": "tool_use", "id": "toolu_r", "name": "read",
                                        "input": {"path": "a.txt"}}
    (write_result,) = [b for b in third[-1]["content"] if b["type"] == "tool_result"]
    assert write_result["tool_use_id"] == "toolu_w" and write_result["is_error"] is False
    # breakpoints: the stable system and the moving one in turn 1; turn 2 adds the end of turn 1
    for body in bodies[1:4]:
        assert cache_marks(body) == ["system[1]", f"messages[{len(body['messages']) - 1}].content[0]"]
    fifth = bodies[4]
    end_of_turn_1 = len(bodies[3]["messages"])  # turn 1's final assistant message
    assert fifth["messages"][end_of_turn_1]["role"] == "assistant"
    assert cache_marks(fifth) == ["system[1]", f"messages[{end_of_turn_1}].content[0]",
                                  f"messages[{len(fifth['messages']) - 1}].content[0]"]


def test_a_write_cut_by_max_tokens_is_not_run(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    cut = '{"path": "big.txt", "content": "line 1\\nline 2\\nli'
    with Loopback() as api:
        api.add(Reply(message([{"type": "text", "text": "Writing the big file."},
                               {"type": "tool_use", "id": "toolu_big", "name": "write", "raw": cut, "cut": True}],
                              "max_tokens")))
        api.add(Reply(message([{"type": "text", "text": "I'll split it up next time."}], "end_turn")))
        events = run_turns(api, ws, home, ["write a big file"])
        bodies = [r["json"] for r in api.requests]
    assert not (ws / "big.txt").exists()
    (done,) = [e for e in events if e.type == "tool_call_done"]
    assert not done.result.ok and "max_tokens" in done.result.visible
    (result,) = [b for b in bodies[1]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert result["tool_use_id"] == "toolu_big" and result["is_error"] is True
    assert "input_error" not in json.dumps(bodies[1])
