"""The OpenAI adapters' shared pieces, stream builders the other OpenAI tests use, and a full turn
through the real session against the loopback API for each adapter (Responses and Chat).

The stream builders write SSE the way the APIs do (every event of an item's life, sequence
numbers, a full response object at the end), so the same bytes also satisfy the openai SDK,
which the conformance tests use as the oracle.
"""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cox.actors.provider.openai_chat import OpenAIChatProvider
from cox.actors.provider.openai_common import (
    check_key,
    refine_http_error,
    request_headers,
    retry_hint,
    stream_error,
    usage_delta,
)
from cox.actors.provider.openai_responses import OpenAIResponsesProvider
from cox.actors.provider.stream import _Assembler
from cox.actors.session.actor import SessionSettings
from cox.actors.tools.registry import builtin_tools
from cox.policy.permission import Engine
from cox.protocol import messages as m
from cox.protocol.interfaces import CancelToken, Provider
from cox.protocol.model import (
    ModelRequest,
    ProviderError,
    UsageDelta,
)
from cox.protocol.types import PermissionMode, StopReason, new_ulid
from cox.supervisors import CancelScope
from cox.surfaces.runtime import App
from tests.harness import Run, check_invariants
from tests.provider.loopback import Loopback, Reply, sse
from tests.waits import BOUND_S

# -- running an adapter ------------------------------------------------------------------------


def assemble(provider: Provider, request: ModelRequest, cancel: CancelToken | None = None) -> _Assembler:
    """Run ``provider`` and feed its deltas to the stream actor's own assembler (what enters
    history). ProviderError propagates."""
    asm = _Assembler()
    for d in provider.stream(request, cancel or CancelScope()):
        asm.feed(d)
    asm.finish()
    return asm


def simple_request(model: str = "gpt-5", text: str = "hi", **kw: Any) -> ModelRequest:
    return ModelRequest(model=model, system=["[tools]", "system prompt", "instructions", "volatile"], tools=[],
                        messages=[{"role": "user", "content": [{"type": "text", "text": text}]}], **kw)


def texts(asm: _Assembler) -> str:
    return "".join(b["text"] for b in asm.content if b["type"] == "text")


def calls(asm: _Assembler) -> list[tuple[str, str, Any]]:
    return [(b["id"], b["name"], b["input"]) for b in asm.content if b["type"] == "tool_use"]


# -- Responses streams, as the API sends them ---------------------------------------------------


def response_object(rid: str, status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None,
                    incomplete: str | None = None, error: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": rid, "object": "response", "created_at": 1750705330, "status": status, "background": False,
            "error": error, "incomplete_details": {"reason": incomplete} if incomplete else None,
            "instructions": None, "max_output_tokens": 2048, "model": "gpt-5-2025-08-07", "output": output,
            "parallel_tool_calls": True, "previous_response_id": None,
            "reasoning": {"effort": "medium", "summary": "auto"}, "service_tier": "default", "store": False,
            "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
            "top_p": 1.0, "truncation": "disabled", "usage": usage, "user": None, "metadata": {}}


def responses_stream(items: list[dict[str, Any]], *, usage: tuple[int, int, int] = (120, 30, 0),
                     incomplete: str | None = None, rid: str = "resp_1", cut_last_item: bool = False) -> list[bytes]:
    """SSE for one response. ``items``: ``{"reasoning": [summary parts], "encrypted": str}``,
    ``{"text": [deltas]}`` or ``{"call": name, "call_id": id, "args": [deltas]}``. With
    ``incomplete`` the response ends in ``response.incomplete`` and, with ``cut_last_item``, the
    last item never finishes (a call cut by the output limit)."""
    seq = iter(range(10_000))
    events: list[tuple[str | None, dict[str, Any] | str]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": next(seq), **fields}))

    emit("response.created", response=response_object(rid, "in_progress", [], None))
    emit("response.in_progress", response=response_object(rid, "in_progress", [], None))
    output: list[dict[str, Any]] = []
    for oi, spec in enumerate(items):
        last = oi == len(items) - 1
        if "reasoning" in spec:
            iid = spec.get("id", f"rs_{oi}")
            emit("response.output_item.added", output_index=oi, item={"id": iid, "type": "reasoning", "summary": []})
            summary = []
            for si, part in enumerate(spec["reasoning"]):
                emit("response.reasoning_summary_part.added", item_id=iid, output_index=oi, summary_index=si,
                     part={"type": "summary_text", "text": ""})
                for piece in part:
                    emit("response.reasoning_summary_text.delta", item_id=iid, output_index=oi, summary_index=si,
                         delta=piece)
                text = "".join(part)
                emit("response.reasoning_summary_text.done", item_id=iid, output_index=oi, summary_index=si, text=text)
                emit("response.reasoning_summary_part.done", item_id=iid, output_index=oi, summary_index=si,
                     part={"type": "summary_text", "text": text})
                summary.append({"type": "summary_text", "text": text})
            item = {"id": iid, "type": "reasoning", "summary": summary, "encrypted_content": spec.get("encrypted")}
        elif "text" in spec:
            iid = spec.get("id", f"msg_{oi}")
            emit("response.output_item.added", output_index=oi,
                 item={"id": iid, "type": "message", "status": "in_progress", "content": [], "role": "assistant"})
            emit("response.content_part.added", item_id=iid, output_index=oi, content_index=0,
                 part={"type": "output_text", "annotations": [], "text": ""})
            for piece in spec["text"]:
                emit("response.output_text.delta", item_id=iid, output_index=oi, content_index=0, delta=piece,
                     logprobs=[])
            text = "".join(spec["text"])
            part = {"type": "output_text", "annotations": [], "text": text}
            emit("response.output_text.done", item_id=iid, output_index=oi, content_index=0, text=text, logprobs=[])
            emit("response.content_part.done", item_id=iid, output_index=oi, content_index=0, part=part)
            item = {"id": iid, "type": "message", "status": "completed", "content": [part], "role": "assistant"}
        else:
            iid = spec.get("id", f"fc_{oi}")
            base = {"id": iid, "type": "function_call", "call_id": spec["call_id"], "name": spec["call"]}
            emit("response.output_item.added", output_index=oi, item={**base, "status": "in_progress", "arguments": ""})
            for piece in spec["args"]:
                emit("response.function_call_arguments.delta", item_id=iid, output_index=oi, delta=piece)
            if cut_last_item and last:
                break
            args = "".join(spec["args"])
            emit("response.function_call_arguments.done", item_id=iid, output_index=oi, arguments=args)
            item = {**base, "status": "completed", "arguments": args}
        if cut_last_item and last:
            break
        emit("response.output_item.done", output_index=oi, item=item)
        output.append(item)
    inp, out, cached = usage
    usage_obj = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": out,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": inp + out}
    if incomplete:
        emit("response.incomplete", response=response_object(rid, "incomplete", output, usage_obj, incomplete))
    else:
        emit("response.completed", response=response_object(rid, "completed", output, usage_obj))
    return sse(events)


def responses_failed(code: str, message: str) -> list[bytes]:
    err = {"code": code, "message": message}
    return sse([("response.created", {"type": "response.created", "sequence_number": 0,
                                      "response": response_object("resp_f", "in_progress", [], None)}),
                ("response.failed", {"type": "response.failed", "sequence_number": 1,
                                     "response": response_object("resp_f", "failed", [], None, error=err)})])


# -- Chat Completions streams ---------------------------------------------------------------------


def chat_chunk(delta: dict[str, Any] | None = None, finish: str | None = None,
               usage: dict[str, Any] | None = None, *, choices: bool = True) -> tuple[None, dict[str, Any]]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1750705330, "model": "local-model",
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}] if choices else [],
    }
    if usage is not None:
        body["usage"] = usage
    return (None, body)


def chat_usage(prompt: int, completion: int, cached: int = 0) -> tuple[None, dict[str, Any]]:
    return chat_chunk(usage={"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion, "prompt_tokens_details": {"cached_tokens": cached}},
                      choices=False)


def chat_stream(*, text: Sequence[str] = (), reasoning: Sequence[str] = (),
                calls: Sequence[tuple[str, str, list[str]]] = (), interleave: bool = False,
                finish: str | None = None, usage: tuple[int, int, int] | None = (50, 10, 0),
                done: bool = True) -> list[bytes]:
    """SSE for one completion: a role chunk, reasoning and text deltas, tool calls (id and name
    in their first fragment; fragments of several calls interleaved when asked), the finish
    chunk, the usage chunk and ``[DONE]``."""
    events: list[tuple[str | None, dict[str, Any] | str]] = [chat_chunk({"role": "assistant", "content": ""})]
    events += [chat_chunk({"reasoning_content": piece}) for piece in reasoning]
    events += [chat_chunk({"content": piece}) for piece in text]
    heads = [chat_chunk({"tool_calls": [{"index": i, "id": cid, "type": "function",
                                         "function": {"name": name, "arguments": ""}}]})
             for i, (cid, name, _) in enumerate(calls)]
    frags = [[chat_chunk({"tool_calls": [{"index": i, "function": {"arguments": a}}]}) for a in args]
             for i, (_, _, args) in enumerate(calls)]
    if interleave:
        events += heads
        for row in range(max((len(f) for f in frags), default=0)):
            events += [f[row] for f in frags if row < len(f)]
    else:
        for head, frag in zip(heads, frags, strict=True):
            events += [head, *frag]
    events.append(chat_chunk(finish=finish or ("tool_calls" if calls else "stop")))
    if usage is not None:
        events.append(chat_usage(*usage))
    if done:
        events.append((None, "[DONE]"))
    return sse(events)


# -- shared helpers ---------------------------------------------------------------------------------


def test_retry_hint_reads_seconds_and_milliseconds():
    assert retry_hint("Rate limit reached. Please try again in 11.054s. Visit …") == 11.054
    assert retry_hint("please TRY AGAIN IN 20ms") == 0.02
    assert retry_hint("try again in 3 seconds") == 3.0
    assert retry_hint("try again later") is None


@pytest.mark.parametrize("err, retryable, overflow", [
    ({"code": "rate_limit_exceeded", "message": "slow down, try again in 2s"}, True, False),
    ({"code": "server_error", "message": "boom"}, True, False),
    ({"code": "server_is_overloaded", "message": "busy"}, True, False),
    ({"code": "context_length_exceeded", "message": "too long"}, False, True),
    ({"code": "insufficient_quota", "message": "pay up"}, False, False),
    ({"code": "invalid_prompt", "message": "flagged"}, False, False),
    ({"error": {"message": "This model's maximum context length is 8192 tokens", "code": 400}}, False, True),
    ({"object": "error", "message": "bad schema", "type": "BadRequestError", "code": 400}, False, False),
    ({"error": {"message": "upstream overloaded", "code": 503}}, True, False),
])
def test_in_stream_errors_are_classified(err, retryable, overflow):
    e = stream_error(err, where="test")
    assert e.retryable is retryable and e.context_overflow is overflow
    if "try again in 2s" in str(err):
        assert e.retry_after == 2.0


def test_a_missing_key_is_an_error_only_for_openai_itself():
    with pytest.raises(ProviderError, match="no OpenAI key: set OPENAI_API_KEY"):
        check_key("", "https://api.openai.com/v1")
    check_key("", "http://127.0.0.1:11434/v1")  # a local server needs none
    assert "authorization" not in request_headers("")
    assert request_headers("sk-x", organization="org", project="p") == {
        "content-type": "application/json", "accept": "text/event-stream",
        "user-agent": request_headers("")["user-agent"], "authorization": "Bearer sk-x",
        "openai-organization": "org", "openai-project": "p"}


def test_quota_429_is_not_retried_and_a_message_hint_fills_a_missing_header():
    quota = refine_http_error(ProviderError("OpenAI answered 429: You exceeded your current quota", status=429,
                                            retryable=True, retry_after=1.0))
    assert not quota.retryable and quota.retry_after is None
    hinted = refine_http_error(ProviderError("OpenAI answered 429: Please try again in 1.5s", status=429,
                                             retryable=True))
    assert hinted.retryable and hinted.retry_after == 1.5


def test_cached_tokens_are_split_out_of_input():
    assert usage_delta(1000, 50, 800) == UsageDelta(input_tokens=200, output_tokens=50, cache_read_tokens=800)
    assert usage_delta(None, None, None) == UsageDelta()


@pytest.mark.parametrize("make", [OpenAIResponsesProvider, OpenAIChatProvider])
def test_missing_key_fails_before_any_request(make):
    with Loopback() as api:
        provider = make("gpt-5", api_key="", base_url="https://api.openai.com/v1")
        with pytest.raises(ProviderError, match="OPENAI_API_KEY") as err:
            assemble(provider, simple_request())
        assert not err.value.retryable
        with pytest.raises(ProviderError):
            provider.check_key()
        assert api.requests == []
        # an empty key is fine for a local server, and no Authorization header is sent
        api.add(Reply(responses_stream([{"text": ["ok"]}]) if make is OpenAIResponsesProvider
                      else chat_stream(text=["ok"])))
        local = make("gpt-5", api_key="", base_url=api.url + "/v1")
        assert texts(assemble(local, simple_request())) == "ok"
        assert "authorization" not in {k.lower() for k in api.requests[0]["headers"]}


# -- a full turn through the real session --------------------------------------------------------


def run_turn(workspace: Path, home: Path, provider: OpenAIResponsesProvider | OpenAIChatProvider, prompt: str,
             timeout: float = BOUND_S) -> Run:
    """One user turn through a real App/session (real tools, store and permission engine) with
    ``provider`` talking to the loopback server; edits are allowed without asking."""
    engine = Engine.compile([], [], [], home=home, roots=[workspace])
    settings = SessionSettings(session_id=new_ulid(), cwd=workspace, roots=[workspace], model=provider.model,
                               permission_mode=PermissionMode.ACCEPT_EDITS, home=home, max_turns=10)
    app = App(home)
    run = Run(settings=settings)
    try:
        handle = app.open_session(settings, provider, builtin_tools(), engine)
        run.handle = handle
        handle.submit(m.UserTurn(text=prompt))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"the turn did not finish in {timeout} s: {run.types()}")
            try:
                event, line = handle.events.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            run.events.append(event)
            run.lines.append(line)
            if event.type == "turn_done":
                break
    finally:
        app.close()
    return run


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha from a\n")
    return ws


def test_a_full_turn_over_responses(tmp_path, cox_home):
    ws = _workspace(tmp_path)
    with Loopback() as api:
        # first a rate limit: the stream actor retries after the server's retry-after
        api.add(Reply([b'{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}'], status=429,
                      headers={"content-type": "application/json", "retry-after": "0"}))
        api.add(Reply(responses_stream([
            {"reasoning": [["Read a, then ", "write b."]], "encrypted": "ENC-1"},
            {"call": "read", "call_id": "call_read", "args": ['{"path":', ' "a.txt"}']},
            {"call": "write", "call_id": "call_write", "args": ['{"path": "b.txt", ', '"content": "beta\\n"}']},
        ], usage=(900, 40, 0))))
        api.add(Reply(responses_stream([{"text": ["Read a.txt ", "and wrote b.txt."]}], usage=(1100, 12, 896))))
        provider = OpenAIResponsesProvider("gpt-5", api_key="sk-test", base_url=api.url + "/v1")
        run = run_turn(ws, cox_home, provider, "copy a to b")
    check_invariants(run)
    assert run.of("turn_done")[-1].stop == StopReason.END_TURN
    assert (ws / "b.txt").read_text() == "beta\n"
    done = {e.call_id: e.result for e in run.of("tool_call_done")}
    assert "alpha from a" in done["call_read"].visible and done["call_write"].ok
    assert any("Rate limit reached" in e.message and "retry 1" in e.message for e in run.of("notice"))
    assert len(api.requests) == 3 and api.requests[0]["json"] == api.requests[1]["json"]
    first, second = (r["json"] for r in api.requests[1:])
    assert api.requests[2]["path"] == "/v1/responses"
    assert api.requests[2]["headers"]["authorization"] == "Bearer sk-test"
    assert first["prompt_cache_key"] == second["prompt_cache_key"] == run.settings.session_id
    tail = second["input"][len(first["input"]):]
    assert tail[0] == {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Read a, then write b."}],
                       "encrypted_content": "ENC-1"}
    assert [(i["type"], i["call_id"]) for i in tail[1:]] == [
        ("function_call", "call_read"), ("function_call", "call_write"),
        ("function_call_output", "call_read"), ("function_call_output", "call_write")]
    assert json.loads(tail[1]["arguments"]) == {"path": "a.txt"}
    assert "alpha from a" in tail[3]["output"] and tail[3]["output"] == done["call_read"].visible
    assert second["input"][:len(first["input"])] == first["input"]  # append-only: the cache prefix holds
    assert "".join(e.text for e in run.of("text_delta")) == "Read a.txt and wrote b.txt."
    usage = run.of("usage")[-1].usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (204, 896, 12)


def test_a_full_turn_over_chat_completions(tmp_path, cox_home):
    ws = _workspace(tmp_path)
    with Loopback() as api:
        # first a stream cut before its finish_reason: retried (nothing had reached the session)
        api.add(Reply(chat_stream(calls=[("call_read", "read", ['{"pa'])])[:2], cut=True))
        api.add(Reply(chat_stream(reasoning=["I should read ", "then write."], calls=[
            ("call_read", "read", ['{"path":', ' "a.txt"}']),
            ("call_write", "write", ['{"path": "b.txt", ', '"content": "beta\\n"}']),
        ], interleave=True)))
        api.add(Reply(chat_stream(text=["Done: ", "b.txt written."], usage=(300, 8, 256))))
        provider = OpenAIChatProvider("qwen3-coder", api_key="", base_url=api.url + "/v1")
        run = run_turn(ws, cox_home, provider, "copy a to b")
    check_invariants(run)
    assert run.of("turn_done")[-1].stop == StopReason.END_TURN
    assert (ws / "b.txt").read_text() == "beta\n"
    done = {e.call_id: e.result for e in run.of("tool_call_done")}
    assert "alpha from a" in done["call_read"].visible and done["call_write"].ok
    assert any("finish_reason" in e.message and "retry 1" in e.message for e in run.of("notice"))
    assert len(api.requests) == 3 and api.requests[2]["path"] == "/v1/chat/completions"
    first, second = (r["json"] for r in api.requests[1:])
    tail = second["messages"][len(first["messages"]):]
    assert tail[0]["role"] == "assistant" and tail[0]["content"] is None
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in tail[0]["tool_calls"]] == [
        ("call_read", "read", {"path": "a.txt"}), ("call_write", "write", {"path": "b.txt", "content": "beta\n"})]
    assert [(t["role"], t["tool_call_id"]) for t in tail[1:]] == [("tool", "call_read"), ("tool", "call_write")]
    assert tail[1]["content"] == done["call_read"].visible
    assert second["messages"][:len(first["messages"])] == first["messages"]
    assert "".join(e.text for e in run.of("text_delta")) == "Done: b.txt written."
