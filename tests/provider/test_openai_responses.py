"""The Responses adapter over real HTTP: recorded streams and our own, checked against their
``.expected.json`` and against what the openai SDK assembles from the same bytes; the request
layout (cache-stable prefix, reasoning echo, call/output pairing); errors, cut and slow streams,
and cancel."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import openai
import pytest

from cox.actors.provider.openai_responses import OpenAIResponsesProvider, input_items
from cox.actors.provider.stream import _Assembler
from cox.actors.provider.transport import close_clients
from cox.actors.session.request import Assembler
from cox.protocol.model import ProviderError, ToolSpec
from cox.supervisors import CancelScope
from tests.provider.loopback import Loopback, Reply, sse
from tests.provider.test_openai_common import (
    assemble,
    calls,
    response_object,
    responses_failed,
    responses_stream,
    simple_request,
    texts,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "sse"
FIXTURES = sorted(SHARED.glob("openai_*.txt")) if SHARED.is_dir() else []
needs_shared = pytest.mark.skipif(not FIXTURES, reason=f"shared SSE recordings not found at {SHARED} "
                                                       "(a clone outside the workplace has no ../shared)")


def provider(api: Loopback, model: str = "gpt-5", **kw: Any) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(model, api_key="sk-test", base_url=api.url + "/v1", **kw)


def served(body: bytes) -> list[bytes]:
    """The bytes in uneven pieces, so events and UTF-8 sequences straddle reads."""
    sizes = [1, 7, 64, 3, 500]
    out, i, k = [], 0, 0
    while i < len(body):
        out.append(body[i:i + sizes[k % len(sizes)]])
        i += sizes[k % len(sizes)]
        k += 1
    return out


def sdk_final(api: Loopback, body: bytes) -> Any:
    """What the openai SDK assembles from ``body`` (the final Response, or for an incomplete one
    the ``response.incomplete`` event's), or the exception it raises."""
    api.add(Reply([body]))
    client = openai.OpenAI(api_key="x", base_url=api.url + "/v1", max_retries=0)
    try:
        with client.responses.stream(model="gpt-5", input="hi") as stream:
            incomplete = None
            for event in stream:
                if event.type == "response.incomplete":  # no final response for these: take the event's
                    incomplete = event.response
            return incomplete if incomplete is not None else stream.get_final_response()
    except Exception as exc:  # the oracle's verdict, compared by the caller
        return exc
    finally:
        client.close()


def ours(api: Loopback, body: bytes) -> _Assembler | ProviderError:
    """What cox assembles from ``body`` (served in uneven pieces), or the error it raises."""
    api.add(Reply(served(body)))
    try:
        return assemble(provider(api), simple_request())
    except ProviderError as exc:
        return exc


def both(body: bytes) -> tuple[_Assembler | ProviderError, Any]:
    """cox's and the SDK's verdict on the same bytes."""
    with Loopback() as api:
        return ours(api, body), sdk_final(api, body)


def assert_same_as_sdk(asm: _Assembler, final: Any) -> None:
    """Text, calls, reasoning, usage and status: our assembly against the SDK's Response."""
    assert not isinstance(final, Exception), final
    assert texts(asm) == final.output_text
    sdk_calls = [(o.call_id, o.name, json.loads(o.arguments)) for o in final.output if o.type == "function_call"]
    assert calls(asm) == sdk_calls
    items = [o for o in final.output if o.type == "reasoning"]
    carried = [b for b in asm.content if b["type"] == "thinking" and b.get("openai_id")]
    assert [(b["openai_id"], b["encrypted_content"], b["summary"]) for b in carried] == [
        (o.id, o.encrypted_content, [s.model_dump() for s in o.summary]) for o in items]
    shown = [b["thinking"] for b in asm.content if b["type"] == "thinking" and b["thinking"]]
    assert shown == ["\n\n".join(s.text for s in o.summary) for o in items]
    if final.usage is not None:
        u = final.usage
        assert (asm.usage.input_tokens + asm.usage.cache_read_tokens, asm.usage.output_tokens,
                asm.usage.cache_read_tokens) == (u.input_tokens, u.output_tokens, u.input_tokens_details.cached_tokens)
    expected_stop = {"completed": "tool_use" if sdk_calls else "end_turn", "incomplete": "max_tokens"}[final.status]
    assert asm.stop == expected_stop


# -- recorded streams ---------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_recorded_stream_matches_expected_and_the_sdk(path: Path):
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    body = path.read_bytes()
    if not body.endswith(b"\n\n"):
        # Codex's fixture loader ends every line with a blank line; the raw file stops right
        # after the last event's data line, which per the SSE rules never dispatches it. Served
        # as is, cox and the SDK both see a stream cut before response.completed.
        cut, sdk_cut = both(body)
        assert isinstance(cut, ProviderError) and cut.retryable
        assert "response.completed" in str(sdk_cut)
        body = body.rstrip(b"\n") + b"\n\n"
    got, final = both(body)
    terminal = expected.get("terminal", expected.get("status"))
    if terminal == "failed":
        assert isinstance(got, ProviderError)
        assert expected["message"] in str(got) and expected["error_code"] in str(got)
        assert got.retryable is (expected.get("classification", expected.get("codex_classification")) == "retryable")
        assert got.retry_after == expected["retry_after_seconds"]
        assert not got.context_overflow
        if "sdk_error" in expected:  # the SDK raises on the `error` event with the same message
            assert isinstance(final, openai.APIError) and expected["message"] in str(final)
        return
    assert isinstance(got, _Assembler), got
    assert texts(got) == expected["output_text"]
    want_calls = [(o["call_id"], o["name"], json.loads(o["arguments"])) for o in expected["output"]
                  if o["type"] == "function_call"]
    assert calls(got) == want_calls
    for item in (o for o in expected["output"] if o["type"] == "reasoning"):
        block = next(b for b in got.content if b.get("openai_id") == item["id"])
        assert block["summary"] == [{"type": s["type"], "text": s["text"]} for s in item["summary"]]
        assert "".join(b["thinking"] for b in got.content if b["type"] == "thinking") == item["summary"][0]["text"]
    usage = expected.get("usage") or expected.get("token_usage")
    if usage:
        assert got.usage.input_tokens + got.usage.cache_read_tokens == usage["input_tokens"]
        assert got.usage.output_tokens == usage["output_tokens"]
        assert got.usage.cache_read_tokens == usage["input_tokens_details"]["cached_tokens"]
    assert got.stop == ("tool_use" if want_calls else "end_turn")
    if "sdk_event_types" in expected:
        assert_same_as_sdk(got, final)
    else:
        # Codex's minimal stream: cox, like Codex, takes each item from its output_item.done;
        # the SDK's final Response is the response.completed object, whose output is empty here.
        assert final.output == [] and expected["events_surfaced"][-1] == "completed"


# -- our own streams, against the SDK ----------------------------------------------------------------

OWN: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "reasoning_text_call": ([
        {"reasoning": [["**Plan**\n\n", "Read the file"], ["Then answer ", "ünïcødé ✓."]], "encrypted": "gAAAA-enc-1"},
        {"text": ["Let me ", "look."]},
        {"call": "read", "call_id": "call_1", "args": ['{"pa', 'th": "src/main.py"', "}"]},
    ], {"usage": (2048, 96, 1536)}),
    "two_reasoning_items": ([
        {"reasoning": [["first"]], "encrypted": "enc-a"},
        {"call": "grep", "call_id": "call_g", "args": ['{"pattern": "x"}']},
        {"reasoning": [["second"]], "encrypted": "enc-b"},
        {"text": ["done"]},
    ], {}),
    "incomplete_cuts_a_call": ([
        {"text": ["Writing the file"]},
        {"call": "write", "call_id": "call_w", "args": ['{"path": "a.txt", "content": "lo']},
    ], {"incomplete": "max_output_tokens", "cut_last_item": True}),
}


@pytest.mark.parametrize("name", sorted(OWN))
def test_own_streams_assemble_like_the_sdk(name: str):
    items, kw = OWN[name]
    body = b"".join(responses_stream(items, **kw))
    got, final = both(body)
    assert isinstance(got, _Assembler), got
    if name == "incomplete_cuts_a_call":
        # The SDK leaves the unfinished call out of the incomplete response; cox keeps it, marked
        # as cut, so the session answers it with an error instead of running it.
        assert final.status == "incomplete" and final.incomplete_details.reason == "max_output_tokens"
        assert got.stop == "max_tokens" and texts(got) == final.output_text == "Writing the file"
        assert got.usage.output_tokens == final.usage.output_tokens
        (cut,) = [b for b in got.content if b["type"] == "tool_use"]
        assert cut["input_error"] == '{"path": "a.txt", "content": "lo'
        return
    assert_same_as_sdk(got, final)
    if name == "two_reasoning_items":
        carried = [b["encrypted_content"] for b in got.content if b.get("openai_id")]
        assert carried == ["enc-a", "enc-b"]


def test_whole_items_without_deltas_still_arrive_once():
    """A server that sends only ``output_item.done`` (no deltas) — and one that sends both."""
    msg = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "whole text"}]}
    fc = {"type": "function_call", "id": "fc_9", "call_id": "call_9", "name": "ls", "arguments": '{"path": "."}'}
    rs = {"type": "reasoning", "id": "rs_9", "summary": [{"type": "summary_text", "text": "why"}],
          "encrypted_content": "E"}
    body = sse([(None, {"type": "response.output_item.done", "output_index": 0, "item": rs}),
                (None, {"type": "response.output_item.done", "output_index": 1, "item": msg}),
                (None, {"type": "response.output_item.done", "output_index": 2, "item": fc}),
                (None, {"type": "response.completed", "response": {"id": "r", "output": [], "usage": None}})])
    with Loopback() as api:
        got = ours(api, b"".join(body))
    assert isinstance(got, _Assembler)
    assert texts(got) == "whole text" and calls(got) == [("call_9", "ls", {"path": "."})]
    thinking = [b for b in got.content if b["type"] == "thinking"]
    assert [b["thinking"] for b in thinking] == ["why"]  # the summary and its item: one block
    assert thinking[0]["openai_id"] == "rs_9" and thinking[0]["encrypted_content"] == "E"
    assert got.stop == "tool_use"


# -- the request --------------------------------------------------------------------------------

TOOLS = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}},
                                          "required": ["path"]}),
         ToolSpec("bash", "Run a command", {"type": "object", "properties": {"command": {"type": "string"}}})]

REASONING = {"type": "thinking", "thinking": "", "signature": None, "openai_id": "rs_1",
             "encrypted_content": "gAAAA-secret", "summary": [{"type": "summary_text", "text": "plan"}]}
PNG = {"media_type": "image/png", "data": "iVBORw0KGgo="}


def history() -> list[dict[str, Any]]:
    """Two turns: a reasoning item, text and two parallel calls (one returning an image), then
    a plain answer, then the second prompt."""
    return [
        {"role": "user", "content": [{"type": "text", "text": "look at the screenshot"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan", "signature": None},  # streamed summary text: not echoed
            dict(REASONING),
            {"type": "text", "text": "Reading both."},
            {"type": "tool_use", "id": "call_a", "name": "read", "input": {"path": "shot.png"}},
            {"type": "tool_use", "id": "call_b", "name": "bash", "input": {"command": "ls -la"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_a", "content": "an image", "is_error": False,
             "images": [PNG]},
            {"type": "tool_result", "tool_use_id": "call_b", "content": "a.txt\nb.txt", "is_error": False},
        ]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "anthropic-sig"},
                                          {"type": "text", "text": "It shows a login form."}]},
        {"role": "user", "content": [{"type": "text", "text": "now fix it"}]},
    ]


def test_request_layout_reasoning_echo_and_pairing(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    req = Assembler("gpt-5", TOOLS, tmp_path).build(history(), turn=2, session_id="sess-1")
    with Loopback() as api:
        api.add(Reply(responses_stream([{"text": ["ok"]}])))
        assemble(provider(api, reasoning_effort="medium"), req)
    sent = api.requests[0]
    body = sent["json"]
    assert sent["path"] == "/v1/responses" and sent["headers"]["authorization"] == "Bearer sk-test"
    assert body["store"] is False and body["stream"] is True and body["parallel_tool_calls"] is True
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["prompt_cache_key"] == "sess-1"
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["max_output_tokens"] == req.max_output_tokens
    assert [t["name"] for t in body["tools"]] == ["bash", "read"]  # native, sorted; not system[0]'s text
    assert body["tools"][1] == {"type": "function", "name": "read", "description": "Read a file",
                                "parameters": TOOLS[0].input_schema, "strict": False}
    assert body["instructions"] == req.system[1]
    assert req.system[0] not in json.dumps(body)
    dev = body["input"][:2]
    assert [d["role"] for d in dev] == ["developer", "developer"]
    assert [d["content"][0]["text"] for d in dev] == [req.system[2], req.system[3]]
    assert "Use tabs." in req.system[2]
    items = body["input"][2:]
    assert items == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look at the screenshot"}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}],
         "encrypted_content": "gAAAA-secret"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading both."}]},
        {"type": "function_call", "call_id": "call_a", "name": "read", "arguments": '{"path": "shot.png"}'},
        {"type": "function_call", "call_id": "call_b", "name": "bash", "arguments": '{"command": "ls -la"}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "an image"},
        {"type": "function_call_output", "call_id": "call_b", "output": "a.txt\nb.txt"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Image returned by tool call call_a:"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "It shows a login form."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "now fix it"}]},
    ]


def encoded(body: dict[str, Any]) -> bytes:
    """The body as the transport puts it on the wire."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def test_bytes_before_the_history_repeat_across_a_session(tmp_path):
    asm = Assembler("gpt-5", TOOLS, tmp_path)
    turn1 = history()[:1]
    turn2 = history()
    with Loopback() as api:
        api.add(Reply(responses_stream([{"text": ["a"]}])))
        api.add(Reply(responses_stream([{"text": ["b"]}])))
        p = provider(api)
        assemble(p, asm.build(turn1, turn=1, session_id="s"))
        assemble(p, asm.build(turn2, turn=2, session_id="s"))
    one, two = (encoded(r["json"]) for r in api.requests)
    # the history's first item, as the transport encodes it
    marker = b'{"type":"message","role":"user","content":[{"type":"input_text","text":"look at the screenshot"}]}'
    assert one.count(marker) == 1
    prefix = one[:one.index(marker)]
    assert two.startswith(prefix) and b'"instructions":' in prefix and b'"developer"' in prefix
    # and all of request 1 up to the end of its history is a byte prefix of request 2: the
    # history only grows at the end, and the per-request knobs come after it
    end_of_history = one.rindex(b'],"reasoning":')
    assert two[:end_of_history] == one[:end_of_history]


def test_reasoning_effort_follows_the_tier_and_the_model():
    with Loopback() as api:
        for _ in range(4):
            api.add(Reply(responses_stream([{"text": ["x"]}])))
        assemble(provider(api), simple_request())
        assemble(provider(api), simple_request(thinking_budget=16_000))
        assemble(provider(api, reasoning_effort="low"), simple_request())
        assemble(provider(api, model="gpt-4.1"), simple_request(model="gpt-4.1", thinking_budget=16_000))
    bodies = [r["json"] for r in api.requests]
    assert bodies[0]["reasoning"] == {"summary": "auto"}
    assert bodies[1]["reasoning"] == {"effort": "high", "summary": "auto"}
    assert bodies[2]["reasoning"] == {"effort": "low", "summary": "auto"}
    assert "reasoning" not in bodies[3] and "include" not in bodies[3]  # gpt-4.1 takes no reasoning


def test_the_request_model_wins_over_the_configured_one():
    with Loopback() as api:
        api.add(Reply(responses_stream([{"text": ["x"]}])))
        assemble(provider(api, model="gpt-5"), simple_request(model="gpt-5-mini"))
    assert api.requests[0]["json"]["model"] == "gpt-5-mini"


def test_the_sdk_accepts_the_same_request_fields():
    """Our body, handed to the SDK's own ``responses.create``, goes out unchanged: every field
    and input item is one the SDK knows how to send."""
    req = Assembler("gpt-5", TOOLS, Path("/")).build(history(), turn=2, session_id="sess-1")
    with Loopback() as api:
        api.add(Reply(responses_stream([{"text": ["ok"]}])))
        api.add(Reply(responses_stream([{"text": ["ok"]}])))
        p = provider(api)
        assemble(p, req)
        body = p.build_body(req)
        client = openai.OpenAI(api_key="x", base_url=api.url + "/v1", max_retries=0)
        try:
            with client.responses.stream(**{k: v for k, v in body.items() if k != "stream"}) as stream:
                final = stream.get_final_response()
        finally:
            client.close()
    assert final.output_text == "ok"
    assert api.requests[1]["json"] == api.requests[0]["json"]


# -- errors -----------------------------------------------------------------------------------


def error_reply(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return Reply([json.dumps(body).encode()], status=status,
                 headers={"content-type": "application/json", **(headers or {})})


@pytest.mark.parametrize("status, body, headers, retryable, retry_after, overflow", [
    (429, {"error": {"message": "Rate limit reached for gpt-5", "type": "requests", "code": "rate_limit_exceeded"}},
     {"retry-after": "3"}, True, 3.0, False),
    (429, {"error": {"message": "Rate limit reached. Please try again in 250ms.", "code": "rate_limit_exceeded"}},
     {}, True, 0.25, False),
    (429, {"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                     "type": "insufficient_quota", "code": "insufficient_quota"}}, {}, False, None, False),
    (500, {"error": {"message": "The server had an error while processing your request.", "type": "server_error"}},
     {}, True, None, False),
    (401, {"error": {"message": "Incorrect API key provided: sk-test.", "code": "invalid_api_key"}},
     {}, False, None, False),
    (400, {"error": {"message": "Your input exceeds the context window of this model.",
                     "code": "context_length_exceeded", "type": "invalid_request_error"}}, {}, False, None, True),
])
def test_http_errors(status, body, headers, retryable, retry_after, overflow):
    with Loopback() as api:
        api.add(error_reply(status, body, headers))
        with pytest.raises(ProviderError) as err:
            assemble(provider(api), simple_request())
    e = err.value
    assert (e.status, e.retryable, e.retry_after, e.context_overflow) == (status, retryable, retry_after, overflow)
    assert body["error"]["message"] in str(e)
    if status == 401:
        assert "OPENAI_API_KEY" in str(e)
    # the SDK agrees on what kind of failure it is
    with Loopback() as api:
        api.add(error_reply(status, body, headers))
        client = openai.OpenAI(api_key="x", base_url=api.url + "/v1", max_retries=0)
        try:
            with pytest.raises(openai.APIStatusError) as sdk:
                client.responses.create(model="gpt-5", input="hi", stream=True)
        finally:
            client.close()
    assert sdk.value.status_code == status and body["error"]["message"] in str(sdk.value)


def test_failed_response_with_a_rate_limit_is_retryable_with_the_hint():
    msg = "Rate limit reached for gpt-5 on tokens per min (TPM). Please try again in 1.5s."
    with Loopback() as api:
        api.add(Reply(responses_failed("rate_limit_exceeded", msg)))
        with pytest.raises(ProviderError) as err:
            assemble(provider(api), simple_request())
    assert err.value.retryable and err.value.retry_after == 1.5 and msg in str(err.value)


def test_failed_response_for_context_length_is_an_overflow():
    with Loopback() as api:
        api.add(Reply(responses_failed("context_length_exceeded", "Your input exceeds the context window.")))
        with pytest.raises(ProviderError) as err:
            assemble(provider(api), simple_request())
    assert err.value.context_overflow and not err.value.retryable


def test_a_cut_stream_is_retryable():
    body = responses_stream([{"text": ["Hello ", "wor", "ld"]}])
    with Loopback() as api:
        api.add(Reply(body[:5] + [body[5][:20]], cut=True))  # stops inside an event, no response.completed
        with pytest.raises(ProviderError) as err:
            assemble(provider(api), simple_request())
    assert err.value.retryable and "response.completed" in str(err.value)


def test_a_slow_stream_arrives_whole():
    body = responses_stream([{"text": [f"w{i} " for i in range(8)]}])
    with Loopback() as api:
        api.add(Reply(body, pause_s=0.03, stall_s=0.2))
        got = assemble(provider(api), simple_request())
    assert texts(got) == "".join(f"w{i} " for i in range(8)) and got.stop == "end_turn"


def test_cancel_of_a_stalled_stream_returns_promptly():
    body = responses_stream([{"text": ["first", " never"]}])
    with Loopback() as api:
        # the server goes quiet after the first delta, connection open (no content-length)
        api.add(Reply([b"".join(body[:5]), b""], pause_s=30, cut=True))
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
    assert not t.is_alive() and elapsed < 0.5
    assert errors == []  # a cancelled stream ends quietly: no retry, no error


@pytest.mark.parametrize("err", [
    {"type": "error", "sequence_number": 2, "code": "server_error", "message": "An error occurred.", "param": None},
    {"type": "error", "sequence_number": 2, "error": {"type": "server_error", "code": "server_error",
                                                      "message": "An error occurred.", "param": None}},
], ids=["documented", "nested"])
def test_an_error_event_fails_the_response_as_in_the_sdk(err):
    created = {"type": "response.created", "sequence_number": 0,
               "response": response_object("resp_e", "in_progress", [], None)}
    body = b"".join(sse([("response.created", created), ("error", err)]))
    got, final = both(body)
    assert isinstance(got, ProviderError) and got.retryable and "An error occurred." in str(got)
    assert "server_error" in str(got)
    # The SDK raises APIError for the nested form; for the documented one it passes the event on
    # and then has no response to return. Either way there is no response.
    assert isinstance(final, Exception)
    if "error" in err:
        assert isinstance(final, openai.APIError) and "An error occurred." in str(final)


def test_only_replayable_reasoning_is_echoed():
    """A reasoning item without ``encrypted_content`` (a server that ignored ``include``) cannot be
    replayed under ``store: false``; streamed summary text and another provider's thinking are
    not OpenAI items at all. None of them is sent; the ``rs_`` id never is."""
    blocks = [{"type": "thinking", "thinking": "", "signature": None, "openai_id": "rs_x", "encrypted_content": None,
               "summary": []},
              {"type": "thinking", "thinking": "summary text", "signature": None},
              {"type": "thinking", "thinking": "claude", "signature": "sig"},
              dict(REASONING),
              {"type": "text", "text": "hi"}]
    items = input_items([{"role": "assistant", "content": blocks}])
    assert items == [{"type": "reasoning", "summary": REASONING["summary"], "encrypted_content": "gAAAA-secret"},
                     {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}]
