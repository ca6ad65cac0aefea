"""A streaming POST over ``http.client``: the fast path of the provider transport.

Connections are kept alive per (scheme, host, port) and reused by the next request, as an
HTTP client pool would; a connection the server closed while idle is detected when the request
fails before any response, and the request is sent once more on a fresh one. The socket is
reachable from the start, so cancelling shuts it down whatever the request is waiting for.

The idle timeout is exact: before each read the socket's timeout is set to what is left of it
since the last event (``waits.IdleClock``), so pings, which reach the socket but not the clock,
cannot stretch it.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from cox.protocol.interfaces import CancelToken
from cox.protocol.model import ProviderError

from .transport import CONNECT_TIMEOUT_S, REQUEST_SENT, http_error, live_events
from .waits import IdleClock, seconds

_idle: dict[tuple[str, str, int], list[http.client.HTTPConnection]] = {}
_lock = threading.Lock()
_ssl_context: Any = None


def _context() -> Any:
    global _ssl_context
    if _ssl_context is None:
        import ssl

        _ssl_context = ssl.create_default_context()
    return _ssl_context


def _acquire(scheme: str, host: str, port: int) -> tuple[http.client.HTTPConnection, bool]:
    with _lock:
        pool = _idle.get((scheme, host, port))
        if pool:
            return pool.pop(), True
    if scheme == "https":
        return http.client.HTTPSConnection(host, port, timeout=CONNECT_TIMEOUT_S, context=_context()), False
    return http.client.HTTPConnection(host, port, timeout=CONNECT_TIMEOUT_S), False


def _release(key: tuple[str, str, int], conn: http.client.HTTPConnection) -> None:
    with _lock:
        _idle.setdefault(key, []).append(conn)


def close_idle() -> None:
    with _lock:
        conns = [c for pool in _idle.values() for c in pool]
        _idle.clear()
    for c in conns:
        c.close()


def _shutdown(socks: list[Any]) -> None:
    # The socket object itself, not ``conn.sock``: http.client drops the connection's reference
    # once a response says it will close, while the response goes on reading from it.
    for sock in socks:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _reads(response: http.client.HTTPResponse, sock: Any, clock: IdleClock, provider: str) -> Iterator[bytes]:
    """The body's chunks as they arrive, each read bounded by what is left of the idle timeout."""
    while True:
        left = clock.left()
        if left <= 0:
            raise clock.stalled(provider)
        sock.settimeout(left)
        chunk = response.read1(65536)
        if not chunk:
            return
        clock.heard = True
        yield chunk


def post_sse_stdlib(url: str, headers: dict[str, str], body: dict[str, Any], cancel: CancelToken, *,
                    provider: str, key_var: str, idle_s: float) -> Iterator[tuple[str, str]]:
    parts = urlsplit(url)
    scheme = parts.scheme or "https"
    host = parts.hostname or ""
    port = parts.port or (443 if scheme == "https" else 80)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    key = (scheme, host, port)
    payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    send_headers = {**headers, "content-length": str(len(payload)), "connection": "keep-alive"}
    for attempt in (1, 2):
        conn, reused = _acquire(scheme, host, port)
        socks: list[Any] = [conn.sock] if conn.sock is not None else []
        unregister = cancel.on_cancel(lambda socks=socks: _shutdown(socks))  # type: ignore[misc]
        clock = IdleClock(idle_s)
        connected = responded = False
        try:
            try:
                if conn.sock is None:
                    conn.connect()
                    socks.append(conn.sock)
                    if cancel.cancelled:  # cancelled while connecting
                        _shutdown(socks)
                connected = True
                sock = socks[-1]
                sock.settimeout(idle_s)  # the wait for the status line is bounded like a silent stream
                conn.request("POST", path, body=payload, headers=send_headers)
                REQUEST_SENT.set()
                response = conn.getresponse()
                responded = True
                clock.beat()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                conn.close()
                if cancel.cancelled:
                    return
                if reused and attempt == 1:
                    continue  # the server closed the idle connection: once more on a fresh one
                raise ProviderError(f"the connection to {provider} failed: {type(exc).__name__}: {exc}",
                                    retryable=True) from None
            if response.status >= 400:
                data = response.read()
                conn.close()
                raise http_error(response.status, response.headers, data, provider=provider, key_var=key_var)
            finished = False
            try:
                yield from live_events(_reads(response, sock, clock, provider), clock)
                finished = True
            finally:
                reusable = False
                if finished and not response.will_close and not cancel.cancelled:
                    try:
                        response.read()  # the end of the body: marks the response closed
                        reusable = response.isclosed()
                    except (OSError, http.client.HTTPException):
                        reusable = False
                if reusable:
                    _release(key, conn)
                else:
                    conn.close()
            return
        except ProviderError:
            raise
        except TimeoutError:
            conn.close()
            if cancel.cancelled:
                return
            if not connected:
                raise ProviderError(f"could not connect to {provider} within {seconds(CONNECT_TIMEOUT_S)} s",
                                    retryable=True) from None
            raise clock.stalled(provider, responded=responded) from None
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            if cancel.cancelled:
                return
            raise ProviderError(f"the connection to {provider} failed: {type(exc).__name__}: {exc}",
                                retryable=True) from None
        finally:
            unregister()
