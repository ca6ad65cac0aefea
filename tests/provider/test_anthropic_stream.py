"""The Anthropic adapter's stream side, over real HTTP on the loopback server.

Conformance: every recorded stream in ``../shared/testdata/sse/anthropic_*.txt`` (and cox's own
cases below) is served byte for byte, run through the adapter and the ProviderStream's own
assembler, and compared with the message the recording's ``.expected.json`` holds and with what
the real ``anthropic`` SDK assembles from the same bytes. Errors: HTTP statuses classified as the
SDK classifies them, an ``error`` event mid-stream, a cut stream, a slow one, a stalled one
cancelled.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cox.actors.provider.anthropic import MISSING_KEY, AnthropicProvider, decode_events
from cox.actors.provider.stream import _Assembler
from cox.actors.provider.transport import close_clients
from cox.actors.session.messages import StreamEnd, StreamNotice, StreamText
from cox.protocol.model import (
    ModelRequest,
    ProviderError,
    StreamDelta,
    TextPart,
)
from cox.supervisors import CancelScope
from tests.provider.loopback import Loopback, Reply, sse

SHARED_SSE = Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "sse"
RECORDINGS = sorted(SHARED_SSE.glob("anthropic_*.txt")) if SHARED_SSE.is_dir() else []


# -- helpers ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_api() -> Any:
    """One loopback server for the module (starting and stopping one costs 0.5 s)."""
    with Loopback() as server:
        yield server


@pytest.fixture
def api(shared_api: Loopback) -> Any:
    yield shared_api
    close_clients()  # ends the keep-alive connections, so their handler threads end with the test
    with shared_api.lock:
        shared_api.replies.clear()
        shared_api.requests.clear()


def request(**kw: Any) -> ModelRequest:
    base: dict[str, Any] = dict(model="claude-test", system=["[]", "prompt", "files", "volatile"], tools=[],
                                messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    base.update(kw)
    return ModelRequest(**base)


def provider(api: Loopback, **kw: Any) -> AnthropicProvider:
    return AnthropicProvider("claude-test", api_key="sk-test", base_url=api.url, **kw)


def assemble(deltas: list[StreamDelta]) -> _Assembler:
    """The deltas fed to the ProviderStream's assembler exactly as ``ProviderStreamActor._run``
    feeds them."""
    asm = _Assembler()
    for d in deltas:
        asm.feed(d)
    asm.finish()
    return asm


def run_adapter(api: Loopback, body: list[bytes], **reply: Any) -> _Assembler:
    api.add(Reply(body, **reply))
    return assemble(list(provider(api).stream(request(), CancelScope())))


def run_sdk(api: Loopback, body: list[bytes], **reply: Any) -> Any:
    """What anthropic's own stream helper assembles from the same bytes."""
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is the oracle for these tests")
    api.add(Reply(body, **reply))
    with anthropic.Anthropic(api_key="x", base_url=api.url, max_retries=0) as client:
        with client.messages.stream(model="claude-test", max_tokens=64,
                                    messages=[{"role": "user", "content": "hi"}]) as stream:
            return stream.get_final_message()


def ours_as_blocks(asm: _Assembler) -> list[dict[str, Any]]:
    """cox's assembled content in the neutral shape the comparisons use."""
    out: list[dict[str, Any]] = []
    for b in asm.content:
        if b["type"] == "text":
            out.append({"type": "text", "text": b["text"]})
        elif b["type"] == "thinking" and b.get("redacted"):
            out.append({"type": "redacted_thinking", "data": b["redacted"]})
        elif b["type"] == "thinking":
            out.append({"type": "thinking", "thinking": b["thinking"], "signature": b["signature"]})
        elif b["type"] == "tool_use":
            block = {"type": "tool_use", "id": b["id"], "name": b["name"]}
            if "input_error" in b:
                block["cut_input"] = b["input_error"]
            else:
                block["input"] = b["input"]
            out.append(block)
    return out


def reference_blocks(content: list[dict[str, Any]], cut: bool) -> list[dict[str, Any]]:
    """The SDK's (or an expected.json's) content in the same shape. In a response cut by
    ``max_tokens`` the SDK keeps a partially parsed input; cox keeps the raw JSON instead, as an
    input the session refuses to run."""
    out: list[dict[str, Any]] = []
    for b in content:
        if b["type"] == "text":
            if out and out[-1]["type"] == "text":  # cox's assembler joins adjacent text blocks
                out[-1]["text"] += b["text"]
            else:
                out.append({"type": "text", "text": b["text"]})
        elif b["type"] == "thinking":
            out.append({"type": "thinking", "thinking": b["thinking"], "signature": b["signature"]})
        elif b["type"] == "redacted_thinking":
            out.append({"type": "redacted_thinking", "data": b["data"]})
        elif b["type"] == "tool_use":
            block = {"type": "tool_use", "id": b["id"], "name": b["name"]}
            if cut and "raw_input_json" in b:
                block["cut_input"] = b["raw_input_json"]
            elif not cut:
                block["input"] = b["input"]
            out.append(block)
    return out


def sdk_usage(message: Any) -> dict[str, int]:
    u = message.usage
    return {"input": u.input_tokens, "output": u.output_tokens, "cache_read": u.cache_read_input_tokens or 0,
            "cache_write": u.cache_creation_input_tokens or 0}


def our_usage(asm: _Assembler) -> dict[str, int]:
    u = asm.usage
    return {"input": u.input_tokens, "output": u.output_tokens, "cache_read": u.cache_read_tokens,
            "cache_write": u.cache_write_tokens}


def check_against_sdk(api: Loopback, body: list[bytes]) -> _Assembler:
    ours = run_adapter(api, body)
    message = run_sdk(api, body)
    cut = message.stop_reason == "max_tokens"
    sdk_content = [b.model_dump() for b in message.content]
    if cut:  # the SDK has no raw JSON for a cut block: take it from what cox kept
        for sb, ob in zip(sdk_content, ours.content, strict=False):
            if sb["type"] == "tool_use" and "input_error" in ob:
                sb["raw_input_json"] = ob["input_error"]
    assert ours_as_blocks(ours) == reference_blocks(sdk_content, cut)
    assert ours.stop == message.stop_reason
    assert our_usage(ours) == sdk_usage(message)
    return ours


# -- conformance with the recordings ---------------------------------------------------------------


@pytest.mark.skipif(not RECORDINGS, reason=f"no recorded streams at {SHARED_SSE} (a clone outside the workplace)")
@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_recording_matches_expected_and_the_sdk(api: Loopback, path: Path) -> None:
    raw = path.read_bytes()
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text(encoding="utf-8"))
    cut = expected["stop_reason"] == "max_tokens"
    ours = check_against_sdk(api, [raw])
    # the same bytes in 7-byte pieces: events and JSON split anywhere assemble the same
    pieces = [raw[i : i + 7] for i in range(0, len(raw), 7)]
    assert ours_as_blocks(run_adapter(api, pieces)) == ours_as_blocks(ours)
    assert ours_as_blocks(ours) == reference_blocks(expected["content"], cut)
    assert ours.stop == expected["stop_reason"]
    assert (ours.usage.input_tokens, ours.usage.output_tokens) == (
        expected["usage"]["input_tokens"], expected["usage"]["output_tokens"])
    if cut:
        (tool,) = [b for b in ours.content if b["type"] == "tool_use"]
        assert tool["input"] == {} and tool["input_error"] == expected["content"][-1]["raw_input_json"]
        with pytest.raises(ValueError):
            json.loads(tool["input_error"])  # incomplete: the session answers it with an error, unrun


def test_recorded_refusal_keeps_the_thinking_signature_exactly(api: Loopback) -> None:
    path = SHARED_SSE / "anthropic_thinking_signature_refusal.txt"
    if not path.is_file():
        pytest.skip(f"no recorded streams at {SHARED_SSE}")
    ours = run_adapter(api, [path.read_bytes()])
    thinking = ours.content[0]
    assert thinking["signature"] == "c3ludGhldGljLXNpZ25hdHVyZS1maXh0dXJlLWEtbm90LWEtcmVhbC1zaWduYXR1cmU="
    assert thinking["thinking"].startswith("Simple educational question") and ours.stop == "refusal"


# -- cox's own cases, also checked against the SDK -------------------------------------------------

START = ("message_start", {"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
    "stop_reason": None, "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 3000,
              "cache_creation_input_tokens": 450}}})
STOP = ("message_stop", {"type": "message_stop"})


def delta(index: int, **d: Any) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}


def block_start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}


def block_stop(index: int) -> tuple[str, dict[str, Any]]:
    return "content_block_stop", {"type": "content_block_stop", "index": index}


def message_delta(stop: str, usage: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                             "usage": usage}


INTERLEAVED = [
    START,
    block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
    ("ping", {"type": "ping"}),
    delta(0, type="thinking_delta", thinking="First, read "),
    delta(0, type="thinking_delta", thinking="the file."),
    delta(0, type="signature_delta", signature="sig-one"),
    block_stop(0),
    block_start(1, {"type": "redacted_thinking", "data": "opaque-redacted-payload"}),
    block_stop(1),
    block_start(2, {"type": "thinking", "thinking": "", "signature": ""}),
    delta(2, type="thinking_delta", thinking="Then write."),
    delta(2, type="signature_delta", signature="sig-two"),
    block_stop(2),
    block_start(3, {"type": "text", "text": ""}),
    delta(3, type="text_delta", text="Reading \u00e9t\u00e9 and "),
    delta(3, type="text_delta", text="writing."),
    block_stop(3),
    block_start(4, {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {}}),
    delta(4, type="input_json_delta", partial_json=""),
    delta(4, type="input_json_delta", partial_json='{"path": "a.'),
    delta(4, type="input_json_delta", partial_json='txt"}'),
    block_stop(4),
    block_start(5, {"type": "tool_use", "id": "toolu_b", "name": "ls", "input": {}}),
    block_stop(5),
    message_delta("tool_use", {"output_tokens": 77, "input_tokens": 12, "cache_read_input_tokens": 3000,
                               "cache_creation_input_tokens": 450}),
    STOP,
]


def test_interleaved_thinking_redacted_and_tools_match_the_sdk(api: Loopback) -> None:
    ours = check_against_sdk(api, sse(INTERLEAVED))
    assert [b["type"] for b in ours.content] == ["thinking", "thinking", "thinking", "text", "tool_use", "tool_use"]
    assert ours.content[1]["redacted"] == "opaque-redacted-payload"
    assert ours.content[2] == {"type": "thinking", "thinking": "Then write.", "signature": "sig-two"}
    assert ours.content[4]["input"] == {"path": "a.txt"} and ours.content[5]["input"] == {}
    assert our_usage(ours) == {"input": 12, "output": 77, "cache_read": 3000, "cache_write": 450}
    assert ours.stop == "tool_use"


@pytest.mark.parametrize("stop", ["end_turn", "tool_use", "max_tokens", "pause_turn", "refusal", "stop_sequence"])
def test_every_stop_reason_comes_through(api: Loopback, stop: str) -> None:
    events = [START, block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="x"),
              block_stop(0), message_delta(stop, {"output_tokens": 2}), STOP]
    assert check_against_sdk(api, sse(events)).stop == stop


def test_crlf_line_endings_and_padded_json(api: Loopback) -> None:
    body = b"".join(sse([START, block_start(0, {"type": "text", "text": ""})]))
    body += b'event: content_block_delta\r\ndata: {"type":"content_block_delta","index":0,' \
            b'"delta":{"type":"text_delta","text":"ok"}    }\r\n\r\n'
    body += b"".join(sse([block_stop(0), message_delta("end_turn", {"output_tokens": 1}), STOP]))
    ours = check_against_sdk(api, [body])
    assert ours.content == [{"type": "text", "text": "ok"}]


def test_decoder_yields_usage_and_stop_once_at_the_end() -> None:
    events = [(n, json.dumps(d)) for n, d in INTERLEAVED]
    deltas = list(decode_events(iter(events)))
    kinds = [type(d).__name__ for d in deltas]
    assert kinds.count("UsageDelta") == 1 and kinds.count("StopDelta") == 1
    assert kinds[-2:] == ["UsageDelta", "StopDelta"]


# -- errors ----------------------------------------------------------------------------------------


def error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message},
                       "request_id": "req_1"}).encode()


HTTP_ERRORS = [
    # status, error type, message, headers, retryable, overflow, SDK exception
    (429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit",
     {"retry-after": "7"}, True, False, "RateLimitError"),
    (529, "overloaded_error", "Overloaded", {}, True, False, "OverloadedError"),
    (500, "api_error", "Internal server error", {}, True, False, "InternalServerError"),
    (401, "authentication_error", "invalid x-api-key", {}, False, False, "AuthenticationError"),
    (400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum", {}, False, True,
     "BadRequestError"),
]


@pytest.mark.parametrize("status, kind, message, headers, retryable, overflow, sdk_error", HTTP_ERRORS,
                         ids=[str(e[0]) for e in HTTP_ERRORS])
def test_http_errors_are_classified_like_the_sdk(api: Loopback, status: int, kind: str, message: str,
                                                 headers: dict[str, str], retryable: bool, overflow: bool,
                                                 sdk_error: str) -> None:
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is the oracle for these tests")
    body = [error_body(kind, message)]
    reply_headers = {"content-type": "application/json", **headers}
    api.add(Reply(body, status=status, headers=reply_headers))
    with pytest.raises(ProviderError) as caught:
        list(provider(api).stream(request(), CancelScope()))
    api.add(Reply(body, status=status, headers=reply_headers))
    with anthropic.Anthropic(api_key="x", base_url=api.url, max_retries=0) as client:
        with pytest.raises(anthropic.APIStatusError) as sdk_caught:
            client.messages.create(model="m", max_tokens=1, messages=[{"role": "user", "content": "hi"}],
                                   stream=True)
        assert type(sdk_caught.value).__name__ == sdk_error
        assert client._should_retry(sdk_caught.value.response) is retryable  # the SDK's retry policy
    err = caught.value
    assert err.status == status and err.retryable is retryable and err.context_overflow is overflow
    assert message in str(err)
    if status == 429:
        assert err.retry_after == 7.0
    if status == 401:
        assert "ANTHROPIC_API_KEY" in str(err)


def test_a_missing_key_fails_before_any_request(api: Loopback) -> None:
    p = AnthropicProvider("claude-test", api_key=None, base_url=api.url)
    with pytest.raises(ProviderError) as caught:
        list(p.stream(request(), CancelScope()))
    assert str(caught.value) == MISSING_KEY and not caught.value.retryable
    assert api.requests == []


@pytest.mark.parametrize("kind, retryable, status", [("overloaded_error", True, 529), ("api_error", True, 500),
                                                     ("invalid_request_error", False, 400)])
def test_an_error_event_mid_stream(api: Loopback, kind: str, retryable: bool, status: int) -> None:
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is the oracle for these tests")
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        START, block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="Hel"),
        ("error", {"type": "error", "error": {"type": kind, "message": "Overloaded"}})]
    api.add(Reply(sse(events)))
    seen: list[StreamDelta] = []
    with pytest.raises(ProviderError) as caught:
        for d in provider(api).stream(request(), CancelScope()):
            seen.append(d)
    assert seen == [TextPart("Hel")]
    assert caught.value.retryable is retryable and caught.value.status == status
    assert kind in str(caught.value)
    api.add(Reply(sse(events)))
    with anthropic.Anthropic(api_key="x", base_url=api.url, max_retries=0) as client:
        with pytest.raises(anthropic.APIStatusError):  # the SDK fails the stream on it too
            with client.messages.stream(model="m", max_tokens=8,
                                        messages=[{"role": "user", "content": "hi"}]) as s:
                s.get_final_message()


@pytest.mark.parametrize("upto", [1, 3, 5])
def test_a_stream_cut_mid_event_is_a_retryable_error(api: Loopback, upto: int) -> None:
    body = b"".join(sse(INTERLEAVED[:upto]))
    body += b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"ty'
    api.add(Reply([body], cut=True))
    with pytest.raises(ProviderError) as caught:
        list(provider(api).stream(request(), CancelScope()))
    assert caught.value.retryable and "the stream was cut" in str(caught.value)


def test_a_stream_that_ends_after_message_delta_is_whole(api: Loopback) -> None:
    """``message_stop`` carries nothing: once ``message_delta`` gave the stop reason and the final
    usage the message is complete (three of the recordings end so, and the SDK accepts them)."""
    events = [START, block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="done"),
              block_stop(0), message_delta("end_turn", {"output_tokens": 4})]
    ours = check_against_sdk(api, sse(events))
    assert ours.content == [{"type": "text", "text": "done"}] and ours.stop == "end_turn"
    assert ours.usage.output_tokens == 4


def test_a_rejected_token_names_its_variable(api: Loopback) -> None:
    api.add(Reply([error_body("authentication_error", "invalid bearer token")], status=401,
                  headers={"content-type": "application/json"}))
    p = AnthropicProvider("claude-test", api_key=None, auth_token="tok", base_url=api.url)
    with pytest.raises(ProviderError) as caught:
        list(p.stream(request(), CancelScope()))
    assert "ANTHROPIC_AUTH_TOKEN" in str(caught.value) and not caught.value.retryable


def test_an_empty_200_is_a_cut_stream(api: Loopback) -> None:
    api.add(Reply([b""]))
    with pytest.raises(ProviderError) as caught:
        list(provider(api).stream(request(), CancelScope()))
    assert caught.value.retryable and "before the message started" in str(caught.value)


def test_a_slow_stream_delivers_each_delta_as_it_arrives(api: Loopback) -> None:
    events = [START, block_start(0, {"type": "text", "text": ""})]
    events += [delta(0, type="text_delta", text=f"w{i} ") for i in range(8)]
    events += [block_stop(0), message_delta("end_turn", {"output_tokens": 9}), STOP]
    api.add(Reply(sse(events), pause_s=0.05))
    began = time.monotonic()
    arrivals: list[float] = []
    deltas: list[StreamDelta] = []
    for d in provider(api).stream(request(), CancelScope()):
        deltas.append(d)
        if isinstance(d, TextPart):
            arrivals.append(time.monotonic() - began)
    asm = assemble(deltas)
    assert asm.content == [{"type": "text", "text": "".join(f"w{i} " for i in range(8))}]
    assert asm.stop == "end_turn"
    # the first word came long before the last piece was sent: nothing is buffered to the end
    assert arrivals[0] < arrivals[-1] - 0.1


def test_cancel_of_a_stalled_stream_returns_promptly_and_quietly() -> None:
    first = b"".join(sse([START, block_start(0, {"type": "text", "text": ""}),
                          delta(0, type="text_delta", text="thinking about it")]))
    with Loopback() as api:
        api.add(Reply([first, b"never sent before the test ends"], pause_s=30))
        scope = CancelScope()
        seen: list[StreamDelta] = []
        errors: list[BaseException] = []

        def consume() -> None:
            try:
                for d in provider(api).stream(request(), scope):
                    seen.append(d)
            except BaseException as exc:  # noqa: BLE001 (the test reports whatever escaped)
                errors.append(exc)

        t = threading.Thread(target=consume)
        t.start()
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:
            time.sleep(0.005)
        assert seen == [TextPart("thinking about it")]
        began = time.monotonic()
        scope.cancel()
        t.join(5)
        assert not t.is_alive() and time.monotonic() - began < 4.5  # the stalled stream never ends
    assert errors == []  # an interrupted stream is not a failure


def test_retries_through_the_provider_stream_actor(api: Loopback) -> None:
    """A 529 then a good stream: the real ProviderStream actor retries (honouring
    ``retry-after-ms``), tells the session a notice, and delivers the second answer."""
    import queue

    import pykka

    from cox.actors.provider.stream import ProviderStreamActor, StreamResult

    got: queue.Queue[Any] = queue.Queue()

    class Sink(pykka.ThreadingActor):
        def on_receive(self, message: Any) -> None:
            got.put(message)

    good = [START, block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="fine"),
            block_stop(0), message_delta("end_turn", {"output_tokens": 3}), STOP]
    api.add(Reply([error_body("overloaded_error", "Overloaded")], status=529,
                  headers={"content-type": "application/json", "retry-after-ms": "20"}))
    api.add(Reply(sse(good)))
    sink = Sink.start()
    ref = ProviderStreamActor.start(provider(api), request(), sink, 1, CancelScope())
    ref.tell("run")
    messages = []
    while True:
        m = got.get(timeout=10)
        messages.append(m)
        if isinstance(m, StreamEnd):
            break
    sink.stop()
    assert [type(m) for m in messages] == [StreamNotice, StreamText, StreamEnd]
    result: StreamResult = messages[-1].result
    assert result.error is None and result.content == [{"type": "text", "text": "fine"}]
    assert result.usage.cache_read_tokens == 3000 and len(api.requests) == 2
