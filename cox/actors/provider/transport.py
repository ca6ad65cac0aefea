"""One streaming POST and its server-sent events, shared by every provider adapter.

The adapters speak the APIs over httpx directly instead of through the anthropic/openai SDKs:
importing those SDKs costs 0.4–1.1 s, which would put cox's first request far behind the 150 ms
budget. What the SDKs do that matters is kept here and in the adapters: the same headers, the
same error classification (rate limits, overload, 5xx and connection resets are retryable, with
``retry-after`` / ``retry-after-ms`` honoured up to a cap), context-overflow detection, and an idle
timeout measured on events, not bytes (keep-alive pings do not reset it; ``waits``).
The tests feed the same bytes to the real SDKs and assert both assemble the same message.

Cancelling the token shuts the socket down (``cox.actors.net``), so a read blocked on a
stalled server returns within milliseconds.
"""

from __future__ import annotations

import email.utils
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from cox.protocol.interfaces import CancelToken
from cox.protocol.model import ProviderError

from .waits import IdleClock, is_keepalive, seconds

# Set once a model request has left this process. Work that may run in the background but would
# compete for the GIL with building and sending the first request (MCP's start: the SDK import
# alone is ~0.4 s of CPU) waits for it, bounded.
REQUEST_SENT = threading.Event()

CONNECT_TIMEOUT_S = 15.0

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def client(base_url: str) -> Any:
    """One pooled httpx client per base URL (keep-alive across the requests of a session)."""
    with _clients_lock:
        c = _clients.get(base_url)
        if c is None:
            import httpx

            # No read timeout of its own: each request passes its idle timeout (``post_sse``).
            c = _clients[base_url] = httpx.Client(follow_redirects=False)
        return c


def close_clients() -> None:
    """Close every pooled connection (at shutdown, and between tests)."""
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for c in clients:
        c.close()
    from .stdlib_http import close_idle

    close_idle()


OVERFLOW_MARKERS = (
    "prompt is too long",
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "too many tokens",
    "input is too long",
)


def should_retry(headers: Any) -> bool | None:
    """The server's own word on retrying (``x-should-retry``), which the SDKs obey."""
    value = str(headers.get("x-should-retry", "")).lower()
    return True if value == "true" else False if value == "false" else None


def retry_after(headers: Any) -> float | None:
    """Seconds to wait, from ``retry-after-ms``, ``retry-after`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


def http_error(status: int, headers: Any, body: bytes, *, provider: str, key_var: str) -> ProviderError:
    """A failed response as the error the stream actor knows how to treat."""
    text = body.decode("utf-8", "replace")
    message = text.strip()[:500]
    try:
        data = json.loads(text)
        err = data.get("error", data) if isinstance(data, dict) else {}
        if isinstance(err, dict):
            message = str(err.get("message") or err.get("type") or message)
    except ValueError:
        pass
    overflow = status in (400, 413) and any(m in text.lower() for m in OVERFLOW_MARKERS)
    if status in (401, 403):
        return ProviderError(f"{provider} rejected the credentials in {key_var} ({status}): {message}",
                             status=status)
    if status == 404:
        return ProviderError(f"{provider} answered 404: {message} (is the model name or base URL right?)",
                             status=status)
    retryable = status in (408, 409, 429, 500, 502, 503, 504, 529) or status >= 500
    told = should_retry(headers)
    if told is not None:
        retryable = told
    return ProviderError(f"{provider} answered {status}: {message}", status=status, retryable=retryable,
                         retry_after=retry_after(headers) if retryable else None, context_overflow=overflow)


def post_sse(url: str, headers: dict[str, str], body: dict[str, Any], cancel: CancelToken, *, provider: str,
             key_var: str, idle_s: float) -> Iterator[tuple[str, str]]:
    """POST ``body`` and yield ``(event, data)`` for each server-sent event but keep-alives.
    Raises ProviderError; one retryable when ``idle_s`` pass without an event (``waits``).

    Without a proxy the request goes through the standard library's ``http.client`` (importing
    httpx costs ~55 ms, a third of cox's start-up budget, and http.client hands over its socket,
    so a cancel can shut it down at any moment, even before the response headers). With an
    ``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY`` that applies to the host, httpx does it, because
    it speaks proxies (and ``NO_PROXY``) properly."""
    if proxy_for(url) is not None:
        return _post_sse_httpx(url, headers, body, cancel, provider=provider, key_var=key_var, idle_s=idle_s)
    from .stdlib_http import post_sse_stdlib

    return post_sse_stdlib(url, headers, body, cancel, provider=provider, key_var=key_var, idle_s=idle_s)


def live_events(chunks: Iterator[bytes], clock: IdleClock) -> Iterator[tuple[str, str]]:
    """The server-sent events of ``chunks`` without the keep-alives; each one resets ``clock``."""
    for event, data in parse_sse(chunks):
        if is_keepalive(event, data):
            continue
        clock.beat()
        yield event, data


def proxy_for(url: str, env: dict[str, str] | None = None) -> str | None:
    """The proxy the environment names for ``url`` (None: connect directly)."""
    import os
    from urllib.parse import urlsplit

    env = dict(os.environ) if env is None else env
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    no_proxy = env.get("no_proxy") or env.get("NO_PROXY") or ""
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*" or (entry and (host == entry.lstrip(".") or host.endswith("." + entry.lstrip(".")))):
            return None
    if host in ("127.0.0.1", "localhost", "::1"):
        return None
    names = (["https_proxy", "HTTPS_PROXY"] if parts.scheme == "https" else ["http_proxy", "HTTP_PROXY"]) + [
        "all_proxy", "ALL_PROXY"]
    for name in names:
        if env.get(name):
            return env[name]
    return None


def _post_sse_httpx(url: str, headers: dict[str, str], body: dict[str, Any], cancel: CancelToken, *,
                    provider: str, key_var: str, idle_s: float) -> Iterator[tuple[str, str]]:
    """The httpx path (used behind a proxy). httpx's read timeout restarts with every chunk, so a
    stream of pings is caught by the clock as each chunk arrives: it ends at most one ping
    interval after ``idle_s``."""
    import httpx

    from cox.actors.net import abort_response

    base = url.split("/v1/")[0] if "/v1/" in url else url
    payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    # Until the response headers arrive there is no response to abort. A new connection's
    # socket is caught as it opens, so a cancel can shut it down even then; a reused
    # keep-alive connection that stalls before its headers is bounded by the read timeout.
    opened: list[Any] = []

    def trace(name: str, info: dict[str, Any]) -> None:
        if name.endswith(".send_request_body.complete"):
            REQUEST_SENT.set()
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            if stream is not None:
                opened.append(stream)

    def early_abort() -> None:
        for stream in opened:
            try:
                sock = stream.get_extra_info("socket")
                if sock is not None:
                    import socket

                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    clock = IdleClock(idle_s)
    responded = False

    def chunks(response: Any) -> Iterator[bytes]:
        for chunk in response.iter_raw():
            if clock.left() <= 0:
                raise clock.stalled(provider)
            clock.heard = True
            yield chunk

    unregister_early = cancel.on_cancel(early_abort)
    try:
        with client(base).stream("POST", url, headers=headers, content=payload,
                                 timeout=httpx.Timeout(idle_s, connect=CONNECT_TIMEOUT_S),
                                 extensions={"trace": trace}) as response:
            responded = True
            clock.beat()
            unregister_early()
            unregister = cancel.on_cancel(lambda: abort_response(response))
            try:
                if response.status_code >= 400:
                    raise http_error(response.status_code, response.headers, response.read(), provider=provider,
                                     key_var=key_var)
                yield from live_events(chunks(response), clock)
            finally:
                unregister()
    except ProviderError:
        raise
    except httpx.ConnectTimeout:
        if cancel.cancelled:
            return
        raise ProviderError(f"could not connect to {provider} within {seconds(CONNECT_TIMEOUT_S)} s",
                            retryable=True) from None
    except httpx.TimeoutException:
        if cancel.cancelled:
            return
        raise clock.stalled(provider, responded=responded) from None
    except (httpx.TransportError, httpx.StreamError) as exc:
        if cancel.cancelled:
            return
        raise ProviderError(f"the connection to {provider} failed: {type(exc).__name__}: {exc}",
                            retryable=True) from None
    finally:
        unregister_early()


def parse_sse(chunks: Iterator[bytes]) -> Iterator[tuple[str, str]]:
    """Server-sent events from raw byte chunks: ``event:``/``data:`` fields, a blank line ends an
    event, ``:`` lines are comments, CRLF and LF both end lines. A stream that ends inside an
    event drops that partial event (the caller sees the missing stop and reports a cut stream).
    Linear in the bytes: each chunk is scanned once, only its unfinished tail is carried over."""
    pending = b""
    event = ""
    data: list[str] = []
    for chunk in chunks:
        if pending:
            chunk = pending + chunk
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                break
            end = nl - 1 if nl > start and chunk[nl - 1] == 13 else nl
            raw = chunk[start:end]
            start = nl + 1
            if not raw:
                if data or event:
                    yield event or "message", "\n".join(data)
                event = ""
                data = []
                continue
            line = raw.decode("utf-8", "replace")
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "data":
                data.append(value)
            elif field == "event":
                event = value
        pending = chunk[start:]
