"""The checks every request to ``cox serve`` passes before a route sees it, as one ASGI layer.

Why each one:

- **Host**: a page on ``evil.example`` whose name the attacker re-points at 127.0.0.1 (DNS
  rebinding) talks to this server as if same-origin. Its requests carry ``Host: evil.example``,
  so every request — the page too, since the page holds the token — must name a loopback host
  (or the host the person's own config binds to).
- **Token**: a cross-origin page can still send a simple POST (a form) to 127.0.0.1. Every POST
  must carry ``X-Cox-Token``, a secret of this process written only into the page; a browser
  lets no other origin read the page, and a custom header from another origin needs a CORS
  preflight this server never grants. A token of another ``cox serve`` (another process) is not
  this one's.
- **Origin**: when a browser says where a POST comes from, it must be this server's own origin
  (a loopback name and this port).
- **Size**: a body over 8 MB is refused before it is read (``validate.MAX_BODY``).

Each refusal is a JSON ``{"error": sentence}`` that says what was wrong and what to do, and it
happens before any session, model call or tool is touched.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from .validate import MAX_BODY

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
TOKEN_HEADER = "x-cox-token"


def new_token() -> str:
    """This process's secret: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def host_name(value: str) -> str:
    """The host part of a ``Host`` header (``[::1]:8765`` → ``::1``), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else ""
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def allowed_hosts(bound: str) -> frozenset[str]:
    """The names a request may address this server by: loopback, and the host the person's
    config binds to when it is another (then they chose to serve it there)."""
    bound = host_name(bound)
    return LOOPBACK if bound in ("", "0.0.0.0", "::") else LOOPBACK | {bound}


class Guard:
    """ASGI middleware: Host on every request, Origin, token and size on every POST."""

    def __init__(self, app: ASGIApp, token: str, hosts: frozenset[str]) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        problem = self.problem(scope)
        if problem is not None:
            if scope["type"] == "websocket":  # none is served; a foreign one is not even routed
                await send({"type": "websocket.close", "code": 1008})
                return
            status, message = problem
            await refuse(send, status, message)
            return
        await self.app(scope, receive, send)

    def problem(self, scope: Scope) -> tuple[int, str] | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = host_name(headers.get("host", ""))
        if host not in self.hosts:
            return 403, (f"refused: the Host header {headers.get('host', '')!r} is not this machine; open cox serve "
                         "at http://127.0.0.1:PORT/ (a name that points here is not enough: DNS rebinding)")
        if scope.get("method") != "POST":
            return None
        origin = headers.get("origin")
        if origin is not None and not self._own(origin, scope):
            return 403, (f"refused: a POST from the page {origin!r}, another site; only the page cox serve "
                         "itself serves may post")
        given = headers.get(TOKEN_HEADER, "").encode()
        if not given or not hmac.compare_digest(given, self.token):
            return 403, ("refused: this POST has no valid X-Cox-Token header; the token of this cox serve "
                         "process is in its page (reload the page after a restart)")
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return 422, f"the request body is over {MAX_BODY // (1024 * 1024)} MB; send less"
        return None

    def _own(self, origin: str, scope: Scope) -> bool:
        """``origin`` is this server's: a loopback name and this port (another local app's page on
        localhost:3000 is another origin)."""
        try:
            parts = urlsplit(origin)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return False
        server = scope.get("server") or (None, None)
        return (parts.hostname or "") in self.hosts and (server[1] is None or port == server[1])


async def refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
