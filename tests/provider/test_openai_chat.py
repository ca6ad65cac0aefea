"""The Chat Completions adapter over real HTTP: our own chunk streams (text, reasoning, parallel
tool calls interleaved, usage, finish_reason length) checked against what the openai SDK
assembles from the same bytes; the request layout; errors, cut and slow streams, and cancel."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import openai
import pytest

from cox.actors.provider.openai_chat import OpenAIChatProvider
from cox.actors.provider.stream import _Assembler
from cox.actors.provider.transport import close_clients
from cox.actors.session.request import Assembler
from cox.protocol.model import ProviderError
from cox.supervisors import CancelScope
from tests.provider.loopback import Loopback, Reply, sse
from tests.provider.test_openai_common import (
    assemble,
    calls,
    chat_chunk,
    chat_stream,
    chat_usage,
    simple_request,
    texts,
)
from tests.provider.test_openai_responses import TOOLS, error_reply, history


def provider(api: Loopback, model: str = "local-model", **kw: Any) -> OpenAIChatProvider:
    return OpenAIChatProvider(model, api_key="sk-test", base_url=api.url + "/v1", **kw)


def both(body: bytes) -> tuple[_Assembler | ProviderError, Any]:
    """cox's assembly and the SDK's final completion (or the exception it raises) from the same
    bytes. The SDK's ``chat.completions.stream`` helper accumulates chunks into a message."""
    with Loopback() as api:
        api.add(Reply([body[i:i + 37] for i in range(0, len(body), 37)]))  # events straddle reads
        api.add(Reply([body]))
        got: _Assembler | ProviderError
        try:
            got = assemble(provider(api), simple_request(model="local-model"))
        except ProviderError as exc:
            got = exc
        client = openai.OpenAI(api_key="x", base_url=api.url + "/v1", max_retries=0)
        try:
            with client.chat.completions.stream(model="local-model", messages=[{"role": "user", "content": "hi"}],
                                                stream_options={"include_usage": True}) as stream:
                for _ in stream:
                    pass
                final: Any = stream.get_final_completion()
        except openai.LengthFinishReasonError as exc:  # the helper refuses to parse a cut message,
            final = exc.completion  # but hands over what it accumulated
        except Exception as exc:  # the oracle's verdict
            final = exc
        finally:
            client.close()
    return got, final


STOPS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def assert_same_as_sdk(asm: _Assembler, final: Any) -> None:
    assert not isinstance(final, Exception), final
    choice = final.choices[0]
    assert texts(asm) == (choice.message.content or "")
    sdk_calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or []]
    assert calls(asm) == sdk_calls
    thinking = "".join(b["thinking"] for b in asm.content if b["type"] == "thinking")
    assert thinking == ((choice.message.model_extra or {}).get("reasoning_content") or "")
    u = final.usage
    assert (asm.usage.input_tokens + asm.usage.cache_read_tokens, asm.usage.output_tokens,
            asm.usage.cache_read_tokens) == (u.prompt_tokens, u.completion_tokens,
                                             (u.prompt_tokens_details.cached_tokens if u.prompt_tokens_details else 0))
    assert asm.stop == STOPS[choice.finish_reason]


CASES = {
    "text": chat_stream(text=["Hel", "lo, ", "wörld ✓"], usage=(42, 5, 0)),
    "reasoning_then_text": chat_stream(reasoning=["Let me ", "think."], text=["Answer."], usage=(60, 9, 32)),
    "two_parallel_calls_interleaved": chat_stream(text=["Checking both."], calls=[
        ("call_a", "read", ['{"pa', 'th": "a', '.txt"}']),
        ("call_b", "bash", ['{"com', 'mand": "ls', ' -la"}']),
    ], interleave=True, usage=(1200, 40, 1024)),
    "length": chat_stream(text=["This answer is cut sho"], finish="length", usage=(30, 16, 0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_streams_assemble_like_the_sdk(name: str):
    got, final = both(b"".join(CASES[name]))
    assert isinstance(got, _Assembler), got
    assert_same_as_sdk(got, final)


def test_parallel_calls_keep_their_order_and_ids():
    got, _ = both(b"".join(CASES["two_parallel_calls_interleaved"]))
    assert isinstance(got, _Assembler)
    assert calls(got) == [("call_a", "read", {"path": "a.txt"}), ("call_b", "bash", {"command": "ls -la"})]
    assert got.stop == "tool_use" and (got.usage.input_tokens, got.usage.cache_read_tokens) == (176, 1024)


def test_a_call_cut_by_length_is_not_parsed():
    body = chat_stream(calls=[("call_w", "write", ['{"path": "a.txt", "content": "lo'])], finish="length")
    got, final = both(b"".join(body))
    assert isinstance(got, _Assembler) and got.stop == "max_tokens"
    assert final.choices[0].finish_reason == "length"
    (block,) = [b for b in got.content if b["type"] == "tool_use"]
    assert block["input"] == {} and block["input_error"] == '{"path": "a.txt", "content": "lo'


def test_a_whole_call_in_one_chunk_and_stop_instead_of_tool_calls():
    """Some servers (older Ollama) send a call complete in one chunk, with no index, and finish
    with ``stop``: it is still a tool call."""
    body = sse([chat_chunk({"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": {"path": "."}}}]}),
                chat_chunk(finish="stop"), (None, "[DONE]")])
    with Loopback() as api:
        api.add(Reply(body))
        got = assemble(provider(api), simple_request())
    assert calls(got) == [("call_1", "ls", {"path": "."})] and got.stop == "tool_use"


def test_done_ends_the_stream_even_without_a_usage_chunk():
    with Loopback() as api:
        api.add(Reply(chat_stream(text=["ok"], usage=None)))
        got = assemble(provider(api), simple_request())
    assert texts(got) == "ok" and got.stop == "end_turn" and got.usage.input_tokens == 0


# -- the request --------------------------------------------------------------------------------


def test_request_layout(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    req = Assembler("local-model", TOOLS, tmp_path).build(history(), turn=2, session_id="sess-1")
    with Loopback() as api:
        api.add(Reply(chat_stream(text=["ok"])))
        assemble(provider(api), req)
    sent = api.requests[0]
    body = sent["json"]
    assert sent["path"] == "/v1/chat/completions" and sent["headers"]["authorization"] == "Bearer sk-test"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == req.max_output_tokens
    assert "prompt_cache_key" not in body and "tool_choice" not in body  # OpenAI-only / vLLM-hostile
    assert [t["function"]["name"] for t in body["tools"]] == ["bash", "read"]
    assert body["tools"][1] == {"type": "function", "function": {
        "name": "read", "description": "Read a file", "parameters": TOOLS[0].input_schema}}
    system, *rest = body["messages"]
    assert system == {"role": "system", "content": "\n\n".join(req.system[1:4])}
    assert system["content"].index(req.system[1]) < system["content"].index("Use tabs.")
    assert req.system[0] not in json.dumps(body)
    assert rest == [
        {"role": "user", "content": "look at the screenshot"},
        {"role": "assistant", "content": "Reading both.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read", "arguments": '{"path": "shot.png"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls -la"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": "an image"},
        {"role": "tool", "tool_call_id": "call_b", "content": "a.txt\nb.txt"},
        {"role": "user", "content": [
            {"type": "text", "text": "Image returned by tool call call_a:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
        {"role": "assistant", "content": "It shows a login form."},
        {"role": "user", "content": "now fix it"},
    ]


def test_openai_itself_gets_its_own_fields():
    p = OpenAIChatProvider("gpt-4.1", api_key="sk-x")
    body = p.build_body(simple_request(model="gpt-4.1", session_id="s-9"))
    assert body["prompt_cache_key"] == "s-9" and body["max_completion_tokens"] == 8192 and "max_tokens" not in body


def test_the_sdk_sends_the_same_messages():
    """Our body, handed to the SDK's own ``chat.completions.create``, goes out unchanged."""
    req = Assembler("local-model", TOOLS, Path("/")).build(history(), turn=2)
    with Loopback() as api:
        api.add(Reply(chat_stream(text=["ok"])))
        p = provider(api)
        body = p.build_body(req)
        client = openai.OpenAI(api_key="x", base_url=api.url + "/v1", max_retries=0)
        try:
            for _ in client.chat.completions.create(**body):
                pass
        finally:
            client.close()
    assert api.requests[0]["json"] == body


def test_bytes_before_the_history_repeat_across_a_session(tmp_path):
    asm = Assembler("local-model", TOOLS, tmp_path)
    with Loopback() as api:
        api.add(Reply(chat_stream(text=["a"])))
        api.add(Reply(chat_stream(text=["b"])))
        p = provider(api)
        assemble(p, asm.build(history()[:1], turn=1, session_id="s"))
        assemble(p, asm.build(history(), turn=2, session_id="s"))
    one, two = (json.dumps(r["json"], separators=(",", ":"), ensure_ascii=False).encode() for r in api.requests)
    end_of_history = one.rindex(b'],"max_tokens":')
    assert two[:end_of_history] == one[:end_of_history] and b'"role":"system"' in one[:end_of_history]


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status, body, headers, retryable, retry_after, overflow", [
    (429, {"error": {"message": "Too many requests", "code": "rate_limit_exceeded"}}, {"retry-after-ms": "1500"},
     True, 1.5, False),
    (503, {"error": {"message": "server overloaded"}}, {}, True, None, False),
    (401, {"error": {"message": "Incorrect API key provided."}}, {}, False, None, False),
    (400, {"object": "error", "message": "This model's maximum context length is 32768 tokens. However, you "
           "requested 40000 tokens.", "type": "BadRequestError", "param": None, "code": 400}, {}, False, None, True),
])
def test_http_errors(status, body, headers, retryable, retry_after, overflow):
    with Loopback() as api:
        api.add(error_reply(status, body, headers))
        with pytest.raises(ProviderError) as err:
            assemble(provider(api), simple_request())
    e = err.value
    assert (e.status, e.retryable, e.retry_after, e.context_overflow) == (status, retryable, retry_after, overflow)


def test_an_error_chunk_mid_stream_is_raised():
    body = sse([chat_chunk({"content": "par"}),
                (None, {"error": {"message": "upstream provider overloaded", "code": 503}})])
    with Loopback() as api:
        api.add(Reply(body))
        with pytest.raises(ProviderError) as err:
            assemble(provider(api), simple_request())
    assert err.value.retryable and "overloaded" in str(err.value)


def test_a_cut_stream_is_retryable():
    body = chat_stream(text=["Hello ", "wor", "ld"])
    with Loopback() as api:
        api.add(Reply(body[:3], cut=True))  # no finish_reason, no [DONE]
        with pytest.raises(ProviderError) as err:
            assemble(provider(api), simple_request())
    assert err.value.retryable and "finish_reason" in str(err.value)


def test_a_slow_stream_arrives_whole():
    with Loopback() as api:
        api.add(Reply(chat_stream(text=[f"w{i} " for i in range(8)]), pause_s=0.03, stall_s=0.2))
        got = assemble(provider(api), simple_request())
    assert texts(got) == "".join(f"w{i} " for i in range(8))


def test_cancel_of_a_stalled_stream_returns_promptly():
    body = chat_stream(text=["first", " never"])
    with Loopback() as api:
        api.add(Reply([b"".join(body[:2]), b""], pause_s=30, cut=True))  # goes quiet after the first delta
        scope = CancelScope()
        seen: list[Any] = []
        errors: list[BaseException] = []

        def consume() -> None:
            try:
                for d in provider(api).stream(simple_request(), scope):
                    seen.append(d)
            except BaseException as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)

        t = threading.Thread(target=consume)
        t.start()
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:
            time.sleep(0.005)
        assert seen, "the first delta never arrived"
        started = time.monotonic()
        scope.cancel()
        t.join(5)
        elapsed = time.monotonic() - started
        close_clients()
    assert not t.is_alive() and elapsed < 0.5 and errors == []


def test_usage_only_chunk_is_not_mistaken_for_a_choice():
    body = sse([chat_chunk({"content": "x"}), chat_chunk(finish="stop"), chat_usage(10, 2, 4), (None, "[DONE]")])
    with Loopback() as api:
        api.add(Reply(body))
        got = assemble(provider(api), simple_request())
    assert (got.usage.input_tokens, got.usage.output_tokens, got.usage.cache_read_tokens) == (6, 2, 4)
