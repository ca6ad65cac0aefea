"""Bounded waits of a model request, on both wires, over real sockets (the loopback API).

What broke (issue 12, item 3): a 429 with ``retry-after: 3600`` waited the hour, up to four
times, and the notice did not say how long; a stream that sends only keep-alive pings stalled
forever; a silent stream cost 300 s per attempt. Each test below reproduces one of those with
small configured bounds, so none depends on machine speed: a wait that must *not* happen is
proved by the request ending long before it could have (an outer bound only a hang reaches), and
a wait that must happen is at least its configured length.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pykka
import pytest

from bench.provider import anthropic_text, chat_text, responses_text
from cox.actors.provider.anthropic import AnthropicProvider
from cox.actors.provider.openai_chat import OpenAIChatProvider
from cox.actors.provider.openai_responses import OpenAIResponsesProvider
from cox.actors.provider.stream import MAX_RETRIES, ProviderStreamActor, StreamResult
from cox.actors.provider.transport import _post_sse_httpx, close_clients
from cox.actors.provider.waits import is_keepalive
from cox.actors.session.messages import StreamEnd, StreamNotice
from cox.config.schema import ProviderConfig
from cox.protocol.model import ModelRequest, ProviderError
from cox.supervisors import CancelScope
from tests.provider.loopback import Loopback, Reply

HANG = 60.0  # an outer bound only a hang reaches
PING = b'event: ping\ndata: {"type": "ping"}\n\n'
COMMENT = b": keep-alive\n\n"
EMPTY = b"data: \n\n"

WIRES = {
    "anthropic": (lambda url, waits: AnthropicProvider("claude-test", api_key="sk-test", base_url=url, waits=waits),
                  anthropic_text, ""),
    "openai": (lambda url, waits: OpenAIResponsesProvider("gpt-5", api_key="sk-test", base_url=url, waits=waits),
               responses_text, "/v1"),
    "openai-chat": (lambda url, waits: OpenAIChatProvider("local", api_key="", base_url=url, waits=waits),
                    chat_text, "/v1"),
}


@pytest.fixture
def api() -> Any:
    with Loopback() as server:
        yield server


def request() -> ModelRequest:
    return ModelRequest(model="", system=["[tools]", "be brief", "", ""], tools=[],
                        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}])


def make(wire: str, api: Loopback, **waits: float) -> Any:
    build, _, suffix = WIRES[wire]
    return build(api.url + suffix, ProviderConfig(**waits))


def answer(wire: str, text: str = "fine") -> list[bytes]:
    return WIRES[wire][1]([text])


def rate_limited(headers: dict[str, str]) -> Reply:
    body = json.dumps({"error": {"type": "rate_limit_error", "message": "slow down"}}).encode()
    return Reply([body], status=429, headers={"content-type": "application/json", **headers})


def run_stream(provider: Any) -> tuple[list[Any], float]:
    """Run one request through the real ProviderStream actor; every message it told the session,
    up to its ``StreamEnd``, and the seconds it took."""
    got: queue.Queue[Any] = queue.Queue()

    class Sink(pykka.ThreadingActor):
        def on_receive(self, message: Any) -> None:
            got.put(message)

    sink = Sink.start()
    began = time.monotonic()
    ref = ProviderStreamActor.start(provider, request(), sink, 1, CancelScope())
    ref.tell("run")
    messages = []
    try:
        while True:
            message = got.get(timeout=HANG)
            messages.append(message)
            if isinstance(message, StreamEnd):
                return messages, time.monotonic() - began
    finally:
        sink.stop()


def notices(messages: list[Any]) -> list[str]:
    return [m.text for m in messages if isinstance(m, StreamNotice)]


def result(messages: list[Any]) -> StreamResult:
    end: StreamResult = messages[-1].result
    return end


# -- keep-alives ------------------------------------------------------------------------------


@pytest.mark.parametrize("event, data, alive", [
    ("ping", '{"type": "ping"}', True),  # Anthropic's
    ("message", '{"type": "ping"}', True),
    ("message", "", True),  # an empty event
    ("message", "  ", True),
    ("keepalive", "{}", True),
    ("message", '{"type": "message_stop"}', False),
    ("content_block_delta", '{"type": "content_block_delta", "index": 0}', False),
    ("message", "[DONE]", False),
    ("message", '{"type": "ping", "n": 1}', False),  # more than a ping: an event
])
def test_what_counts_as_a_keep_alive(event: str, data: str, alive: bool) -> None:
    assert is_keepalive(event, data) is alive


# -- the transport's idle timeout, measured on events ---------------------------------------------


def _stdlib(url: str, idle: float) -> list[Any]:
    from cox.actors.provider.transport import post_sse

    return list(post_sse(url, {}, {}, CancelScope(), provider="P", key_var="K", idle_s=idle))


def _httpx(url: str, idle: float) -> list[Any]:
    close_clients()
    return list(_post_sse_httpx(url, {}, {}, CancelScope(), provider="P", key_var="K", idle_s=idle))


PATHS = {"stdlib": _stdlib, "httpx": _httpx}


@pytest.mark.parametrize("path", PATHS)
def test_a_ping_only_stream_ends_after_the_idle_timeout(api: Loopback, path: str) -> None:
    """Pings, comments and empty events every 20 ms for as long as the client listens: the bytes
    keep coming, but no event does, so the stream ends after the idle timeout, retryable."""
    api.add(Reply([PING, COMMENT, EMPTY] * 20_000, pause_s=0.02))
    began = time.monotonic()
    with pytest.raises(ProviderError) as err:
        PATHS[path](api.url + "/v1/x", 1.0)
    took = time.monotonic() - began
    assert err.value.retryable
    assert "P sent only keep-alive pings for 1 s" in str(err.value)
    assert "provider.stream_idle_timeout_s" in str(err.value)
    assert 1.0 <= took < HANG


@pytest.mark.parametrize("path", PATHS)
def test_a_silent_stream_ends_after_the_idle_timeout(api: Loopback, path: str) -> None:
    api.add(Reply([b"data: {}\n\n"], stall_s=HANG * 2))  # headers, then nothing
    began = time.monotonic()
    with pytest.raises(ProviderError) as err:
        PATHS[path](api.url + "/v1/x", 0.5)
    assert err.value.retryable and "P sent nothing for 0.5 s" in str(err.value)
    assert 0.5 <= time.monotonic() - began < HANG


@pytest.mark.parametrize("path", PATHS)
def test_a_server_that_never_answers_ends_after_the_idle_timeout(api: Loopback, path: str) -> None:
    api.add(Reply([b""], hold_s=HANG * 2))  # not even a status line
    began = time.monotonic()
    with pytest.raises(ProviderError) as err:
        PATHS[path](api.url + "/v1/x", 0.5)
    assert err.value.retryable and "P sent no response for 0.5 s" in str(err.value)
    assert 0.5 <= time.monotonic() - began < HANG


@pytest.mark.parametrize("path", PATHS)
def test_events_reset_the_idle_clock_and_pings_in_between_are_dropped(api: Loopback, path: str) -> None:
    """Twelve events 0.1 s apart with pings between them, over 2.4 s in all, against an idle
    timeout of 2 s: every event resets the clock, so the whole stream arrives, pings left out."""
    pieces: list[bytes] = []
    for n in range(12):
        pieces += [f"data: {{\"n\": {n}}}\n\n".encode(), PING]
    api.add(Reply(pieces, pause_s=0.1))
    got = PATHS[path](api.url + "/v1/x", 2.0)
    assert got == [("message", f'{{"n": {n}}}') for n in range(12)]


# -- retry-after: capped, announced, configurable --------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("header", [{"retry-after": "3600"}, {"retry-after-ms": "3600000"}])
def test_a_retry_after_of_an_hour_fails_at_once(api: Loopback, wire: str, header: dict[str, str]) -> None:
    """The reproduction: a 429 asking for 3600 s. The request ends with an error naming what the
    server asked, the cap and the key that raises it; no retry, no wait."""
    api.add(rate_limited(header))
    messages, took = run_stream(make(wire, api))
    err = result(messages).error
    assert err is not None and not err.retryable and err.status == 429
    text = str(err)
    assert "answered 429" in text and "slow down" in text
    assert "asked to wait 3600 s" in text and "provider.max_retry_after_s = 60 s" in text
    assert "COX_PROVIDER_MAX_RETRY_AFTER_S" in text
    assert notices(messages) == [] and len(api.requests) == 1
    assert took < HANG  # the hour was not waited


@pytest.mark.parametrize("wire", WIRES)
def test_each_wait_is_announced_with_its_length(api: Loopback, wire: str) -> None:
    api.add(rate_limited({"retry-after": "0.2"}))
    api.add(Reply(answer(wire)))
    messages, took = run_stream(make(wire, api))
    assert result(messages).error is None
    assert notices(messages) == [f"model request failed ({notice_error(messages, api)}); retrying in 0.2 s "
                                 f"(retry 1 of {MAX_RETRIES})"]
    assert took >= 0.2 and len(api.requests) == 2


def notice_error(messages: list[Any], api: Loopback) -> str:
    text = notices(messages)[0]
    return text[len("model request failed ("):text.index("); retrying in")]


def test_the_cap_is_configurable(api: Loopback) -> None:
    """A lower cap refuses a wait the default would take; a higher one (from the person's own
    config) takes a wait the default would refuse — shown here without waiting long."""
    api.add(rate_limited({"retry-after": "1"}))
    messages, _ = run_stream(make("anthropic", api, max_retry_after_s=0.5))
    err = result(messages).error
    assert err is not None and "asked to wait 1 s" in str(err) and "provider.max_retry_after_s = 0.5 s" in str(err)
    assert len(api.requests) == 1

    api.add(rate_limited({"retry-after": "0.3"}))
    api.add(Reply(answer("anthropic")))
    messages, took = run_stream(make("anthropic", api, max_retry_after_s=0.3))
    assert result(messages).error is None and "retrying in 0.3 s" in notices(messages)[0]
    assert took >= 0.3 and len(api.requests) == 3


def test_a_hint_in_an_openai_message_is_capped_too(api: Loopback) -> None:
    """OpenAI puts the delay of an in-stream rate limit in its message ("try again in 900s")."""
    failed = {"type": "response.failed", "sequence_number": 1, "response": {
        "id": "r", "object": "response", "status": "failed", "output": [],
        "error": {"code": "rate_limit_exceeded", "message": "Rate limit reached. Please try again in 900s."}}}
    api.add(Reply([f"event: response.failed\ndata: {json.dumps(failed)}\n\n".encode()]))
    messages, _ = run_stream(make("openai", api))
    err = result(messages).error
    assert err is not None and "asked to wait 900 s" in str(err) and len(api.requests) == 1


# -- the stalled stream through the retry loop -----------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_a_ping_only_stream_is_retried_and_the_retry_answers(api: Loopback, wire: str) -> None:
    """The keep-alives never reach an adapter (an empty event is not "JSON the server garbled")."""
    api.add(Reply([PING, COMMENT, EMPTY] * 20_000, pause_s=0.02))
    api.add(Reply(answer(wire, "second time lucky")))
    messages, took = run_stream(make(wire, api, stream_idle_timeout_s=0.5))
    res = result(messages)
    assert res.error is None and res.content == [{"type": "text", "text": "second time lucky"}]
    [notice] = notices(messages)
    assert "sent only keep-alive pings for 0.5 s: the stream stalled" in notice
    assert "; retrying in " in notice and f"(retry 1 of {MAX_RETRIES})" in notice
    assert took >= 0.5 and len(api.requests) == 2


# -- the total bound per request ------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_the_request_deadline_ends_a_silent_attempt(api: Loopback, wire: str) -> None:
    """The idle timeout alone would wait a minute; the request's deadline of 1 s ends it."""
    api.add(Reply([b"data: {}\n\n"], stall_s=HANG * 2))
    messages, took = run_stream(make(wire, api, stream_idle_timeout_s=HANG, request_timeout_s=1.0))
    err = result(messages).error
    assert err is not None and not err.retryable
    assert "no answer started within provider.request_timeout_s = 1 s (1 attempt)" in str(err)
    assert "COX_PROVIDER_REQUEST_TIMEOUT_S" in str(err)
    assert 1.0 <= took < HANG


FILLER = {  # an event each adapter reads and ignores: not a keep-alive, yet no answer either
    "anthropic": b'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 7}\n\n',
    "openai": b'event: response.in_progress\ndata: {"type": "response.in_progress", "sequence_number": 1}\n\n',
    "openai-chat": b'data: {"id": "c", "object": "chat.completion.chunk", "choices": []}\n\n',
}


@pytest.mark.parametrize("wire", WIRES)
def test_a_server_that_defeats_the_keep_alive_filter_is_still_bounded(api: Loopback, wire: str) -> None:
    """Events the adapters ignore reset the idle clock, but they start no answer: the request's
    deadline still ends the request, so its worst case stays known."""
    api.add(Reply([FILLER[wire]] * 20_000, pause_s=0.02))
    messages, took = run_stream(make(wire, api, stream_idle_timeout_s=0.5, request_timeout_s=1.5))
    err = result(messages).error
    assert err is not None and "no answer started within provider.request_timeout_s = 1.5 s (1 attempt)" in str(err)
    assert notices(messages) == [] and len(api.requests) == 1
    assert 1.5 <= took < HANG


def test_a_wait_past_the_deadline_is_not_begun(api: Loopback) -> None:
    api.add(rate_limited({"retry-after": "30"}))
    messages, took = run_stream(make("anthropic", api, request_timeout_s=5.0))
    err = result(messages).error
    assert err is not None and "a retry in 30 s would pass provider.request_timeout_s = 5 s" in str(err)
    assert "answered 429" in str(err) and notices(messages) == [] and took < HANG


def test_the_deadline_counts_every_attempt(api: Loopback) -> None:
    """A 429 asking for 0.2 s, then a silent stream, against a deadline of 3 s: the retry is
    taken, and the second attempt is cut at the deadline; the error names the last failure the
    request saw and both attempts."""
    api.add(rate_limited({"retry-after": "0.2"}))
    api.add(Reply([b"data: {}\n\n"], stall_s=HANG * 2))
    messages, took = run_stream(make("anthropic", api, stream_idle_timeout_s=HANG, request_timeout_s=3.0))
    err = result(messages).error
    assert err is not None and len(notices(messages)) == 1 and len(api.requests) == 2
    assert "answered 429" in str(err)
    assert "no answer started within provider.request_timeout_s = 3 s (2 attempts)" in str(err)
    assert 3.0 <= took < HANG


def test_a_stalled_attempt_is_not_retried_past_the_deadline(api: Loopback) -> None:
    """A ping-only stream stalls at 0.6 s; any backoff (≥ 0.5 s) would end past the 1 s deadline,
    so the request fails then instead of waiting."""
    api.add(Reply([PING] * 20_000, pause_s=0.02))
    messages, took = run_stream(make("anthropic", api, stream_idle_timeout_s=0.6, request_timeout_s=1.0))
    err = result(messages).error
    assert err is not None and notices(messages) == [] and len(api.requests) == 1
    assert "sent only keep-alive pings for 0.6 s" in str(err)
    assert "would pass provider.request_timeout_s = 1 s (1 attempt)" in str(err)
    assert 0.6 <= took < HANG


def test_a_streaming_answer_is_not_cut_by_the_deadline(api: Loopback) -> None:
    """The deadline bounds the time before the answer starts, not a long answer: thirty deltas
    0.1 s apart (3 s) arrive whole under a request deadline of 2 s."""
    body = anthropic_text([f"w{i} " for i in range(30)])
    api.add(Reply(body, pause_s=0.1))
    messages, took = run_stream(make("anthropic", api, request_timeout_s=2.0))
    res = result(messages)
    assert res.error is None and "".join(b["text"] for b in res.content) == "".join(f"w{i} " for i in range(30))
    assert took >= 2.0


# -- end to end: `cox run`, and a repository cannot lengthen a wait -------------------------------


def test_cox_run_fails_at_once_and_a_project_cannot_raise_the_cap(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".cox").mkdir(parents=True)
    (ws / ".cox" / "config.toml").write_text("[provider]\nmax_retry_after_s = 7200\nrequest_timeout_s = 9000\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "COX_"))}
    with Loopback() as api:
        api.add(rate_limited({"retry-after": "3600"}))
        env.update(COX_HOME=str(tmp_path / "home"), ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=api.url)
        out = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "hi", "--output-format", "json"],
                             cwd=ws, env=env, capture_output=True, text=True, timeout=HANG, check=False)
        assert len(api.requests) == 1
    assert out.returncode == 1, out.stderr[-2000:]
    assert "ignored provider.max_retry_after_s" in out.stderr and "ignored provider.request_timeout_s" in out.stderr
    line = json.loads(out.stdout.strip().splitlines()[-1])
    assert line["type"] == "result" and line["is_error"]
    assert "asked to wait 3600 s" in json.dumps(line) and "provider.max_retry_after_s = 60 s" in json.dumps(line)


def test_cox_run_waits_longer_when_your_own_config_says_so(tmp_path: Path) -> None:
    """``COX_PROVIDER_MAX_RETRY_AFTER_S`` (yours) raises the cap: a 0.5 s wait refused by a cap of
    0.1 s from your config file is taken with the variable set to 1."""
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[provider]\nmax_retry_after_s = 0.1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "COX_"))}
    env.update(COX_HOME=str(home), ANTHROPIC_API_KEY="sk-test")
    cmd = [sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "hi", "--output-format", "stream-json"]
    with Loopback() as api:
        env["ANTHROPIC_BASE_URL"] = api.url
        api.add(rate_limited({"retry-after": "0.5"}))
        refused = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=HANG, check=False)
        api.add(rate_limited({"retry-after": "0.5"}))
        api.add(Reply(anthropic_text(["waited"])))
        taken = subprocess.run(cmd, cwd=ws, env={**env, "COX_PROVIDER_MAX_RETRY_AFTER_S": "1"}, capture_output=True,
                               text=True, timeout=HANG, check=False)
    assert refused.returncode == 1 and "provider.max_retry_after_s = 0.1 s" in refused.stdout
    assert taken.returncode == 0, taken.stdout[-2000:] + taken.stderr[-2000:]
    events = [json.loads(line) for line in taken.stdout.splitlines()]
    assert any("retrying in 0.5 s (retry 1 of 4)" in json.dumps(e) for e in events)
    assert events[-1]["type"] == "result" and events[-1]["result"] == "waited"
