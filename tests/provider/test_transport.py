"""The shared SSE transport: parsing, errors and their retry hints, cancel of a stalled stream."""

from __future__ import annotations

import threading
import time

import pytest

from cox.actors.provider.transport import http_error, parse_sse, post_sse, retry_after
from cox.protocol.model import ProviderError
from cox.supervisors import CancelScope
from tests.provider.loopback import Loopback, Reply, sse

IDLE = 30.0  # the idle timeout of these requests: no test here waits for it (test_waits.py does)


def test_parse_sse_handles_split_chunks_crlf_comments_and_multiline_data():
    raw = b": keep-alive\r\nevent: a\r\ndata: {\"x\":\r\ndata: 1}\r\n\r\nevent: b\ndata: two\n\n"
    pieces = [raw[i : i + 3] for i in range(0, len(raw), 3)]
    assert list(parse_sse(iter(pieces))) == [("a", '{"x":\n1}'), ("b", "two")]


def test_parse_sse_drops_a_partial_event_at_the_end():
    assert list(parse_sse(iter([b"data: whole\n\ndata: cut"]))) == [("message", "whole")]


def test_retry_after_forms():
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({}) is None


@pytest.mark.parametrize("status, body, retryable, overflow", [
    (429, b'{"error": {"type": "rate_limit_error", "message": "slow down"}}', True, False),
    (529, b'{"error": {"type": "overloaded_error", "message": "Overloaded"}}', True, False),
    (500, b"oops", True, False),
    (400, b'{"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum"}}', False, True),
    (400, b'{"error": {"code": "context_length_exceeded", "message": "too long"}}', False, True),
    (401, b'{"error": {"message": "invalid x-api-key"}}', False, False),
])
def test_http_errors_are_classified(status, body, retryable, overflow):
    err = http_error(status, {"retry-after": "2"}, body, provider="Anthropic", key_var="ANTHROPIC_API_KEY")
    assert err.retryable is retryable and err.context_overflow is overflow and err.status == status
    if retryable:
        assert err.retry_after == 2.0
    if status == 401:
        assert "ANTHROPIC_API_KEY" in str(err)


def test_stream_and_error_over_real_http():
    with Loopback() as api:
        api.add(Reply(sse([("ping", {"n": 1}), (None, {"n": 2})])))
        api.add(Reply([b'{"error": {"message": "slow down"}}'], status=429,
                      headers={"content-type": "application/json", "retry-after": "1"}))
        got = list(post_sse(api.url + "/v1/x", {"x-k": "v"}, {"a": 1}, CancelScope(), provider="P", key_var="K",
                            idle_s=IDLE))
        assert got == [("message", '{"n": 2}')]  # the ping is a keep-alive: never reaches an adapter
        assert api.requests[0]["json"] == {"a": 1} and api.requests[0]["headers"]["x-k"] == "v"
        with pytest.raises(ProviderError) as err:
            list(post_sse(api.url + "/v1/x", {}, {}, CancelScope(), provider="P", key_var="K", idle_s=IDLE))
        assert err.value.retryable and err.value.retry_after == 1.0


def test_cancel_wakes_a_stalled_stream_within_milliseconds():
    with Loopback() as api:
        api.add(Reply(sse([(None, {"n": 1})]) + [b""], stall_s=0, pause_s=30))
        scope = CancelScope()
        seen = []

        def consume():
            for item in post_sse(api.url + "/v1/x", {}, {}, scope, provider="P", key_var="K", idle_s=IDLE):
                seen.append(item)

        t = threading.Thread(target=consume)
        t.start()
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:
            time.sleep(0.005)
        started = time.monotonic()
        scope.cancel()
        t.join(5)
        assert not t.is_alive() and time.monotonic() - started < 4.5  # the stalled stream never ends


def test_connection_refused_is_retryable():
    with pytest.raises(ProviderError) as err:
        list(post_sse("http://127.0.0.1:9/v1/x", {}, {}, CancelScope(), provider="P", key_var="K", idle_s=IDLE))
    assert err.value.retryable


def test_cancel_before_the_headers_arrive_on_a_new_connection():
    from cox.actors.provider.transport import close_clients

    with Loopback() as api:
        close_clients()  # a fresh connection, as on the first request of a run
        scope = CancelScope()
        errors = []
        # A server that accepts the request and says nothing: the handler waits before its status line.
        api.add(Reply(sse([(None, {"n": 1})])))
        gate = threading.Event()
        original = api.server.RequestHandlerClass.do_POST

        def stalled(handler):
            gate.wait(10)
            original(handler)

        api.server.RequestHandlerClass.do_POST = stalled

        def consume():
            try:
                list(post_sse(api.url + "/v1/x", {}, {}, scope, provider="P", key_var="K", idle_s=IDLE))
            except ProviderError as exc:
                errors.append(exc)

        t = threading.Thread(target=consume)
        t.start()
        time.sleep(0.2)
        started = time.monotonic()
        scope.cancel()
        t.join(5)
        gate.set()
        assert not t.is_alive() and time.monotonic() - started < 4.5  # the stalled stream never ends and not errors


def test_x_should_retry_wins():
    assert http_error(500, {"x-should-retry": "false"}, b"", provider="P", key_var="K").retryable is False
    assert http_error(400, {"x-should-retry": "true"}, b"", provider="P", key_var="K").retryable is True
