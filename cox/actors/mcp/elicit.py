"""Elicitation on one MCP connection: who answers a server's ``elicitation/create``, and the
call clocks that stop while a person is being asked.

A server elicits during one of its tool calls, but over stdio nothing in the request names that
call. Each call in flight therefore registers its session's ``ask`` (``env.services.ask``, see
``cox/actors/mcp/questions.py``) with the connection's :class:`Elicitor`; a request goes to
the newest call that has one. With none (a server eliciting outside a call, or a call from a
surface that cannot ask), the server gets ``decline``.

While any question of this server is open, the calls' ``mcp.timeout_s`` clocks stand still: a
person thinking is not a hung server. The SDK cancels the callback when the server withdraws
its request (``notifications/cancelled``); that cancels the session's future, which withdraws
the open question.

Capabilities: the client declares ``elicitation`` (form and url) only when cox can ask a person
(the TUI and ``--plain``, ``ServerSettings.elicitation``). ``cox run -p`` declares none, and a
server that elicits anyway is answered ``decline`` by :class:`CoxClientSession`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import mcp_types
from mcp import ClientSession

__all__ = ["Ask", "CoxClientSession", "Elicitor"]

log = logging.getLogger(__name__)

Ask = Callable[[dict[str, Any]], "concurrent.futures.Future[dict[str, Any]]"]
T = TypeVar("T")

_SLICE_S = 0.25
"""How often a waiting call re-reads its deadline (it moves while a question is open)."""


class Elicitor:
    """The askers of one connection's calls in flight, and the pause clock."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._lock = threading.Lock()
        self._askers: dict[int, Ask] = {}
        self._seq = 0
        self._open = 0
        self._paused_since = 0.0
        self._paused_total = 0.0

    # -- calls in flight (any thread) --

    def enter(self, ask: Ask | None) -> int:
        with self._lock:
            self._seq += 1
            if ask is not None:
                self._askers[self._seq] = ask
            return self._seq

    def leave(self, token: int) -> None:
        with self._lock:
            self._askers.pop(token, None)

    def _asker(self) -> Ask | None:
        with self._lock:
            return self._askers[max(self._askers)] if self._askers else None

    @property
    def asking(self) -> bool:
        with self._lock:
            return self._open > 0

    def paused(self) -> float:
        """Seconds spent with a question open, so far (the current stretch included)."""
        with self._lock:
            extra = time.monotonic() - self._paused_since if self._open else 0.0
            return self._paused_total + extra

    def _pause(self) -> None:
        with self._lock:
            if self._open == 0:
                self._paused_since = time.monotonic()
            self._open += 1

    def _resume(self) -> None:
        with self._lock:
            self._open -= 1
            if self._open == 0:
                self._paused_total += time.monotonic() - self._paused_since

    def wait(self, future: concurrent.futures.Future[T], timeout: float) -> T:
        """``future.result(timeout)``, except that time with a question open does not count."""
        start, base = time.monotonic(), self.paused()
        while True:
            left = start + timeout + (self.paused() - base) - time.monotonic()
            if left <= 0 and not self.asking:
                raise TimeoutError
            try:
                return future.result(min(max(left, 0.01), _SLICE_S))
            except TimeoutError:
                if future.done():
                    raise
                continue

    # -- the SDK callback (on the connection's loop) --

    async def callback(self, context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        ask = self._asker()
        if ask is None:
            return mcp_types.ElicitResult(action="decline")
        url = params.url if isinstance(params, mcp_types.ElicitRequestURLParams) else None
        schema = params.requested_schema if isinstance(params, mcp_types.ElicitRequestFormParams) else None
        request = {"server": self.server, "mode": "url" if url is not None else "form",
                   "message": params.message, "schema": schema, "url": url}
        try:
            reply = ask(request)
        except Exception:  # noqa: BLE001 - the session is gone: nobody can answer
            log.exception("mcp server %s: handing an elicitation to the session failed", self.server)
            return mcp_types.ElicitResult(action="cancel")
        self._pause()
        try:
            outcome = await asyncio.wrap_future(reply)  # cancelled with us: the question is withdrawn
        finally:
            self._resume()
        action = outcome.get("action")
        if action == "accept":
            return mcp_types.ElicitResult(action="accept", content=outcome.get("content") if url is None else None)
        return mcp_types.ElicitResult(action="decline" if action == "decline" else "cancel")


class CoxClientSession(ClientSession):
    """The SDK's client session, declaring elicitation only with an :class:`Elicitor`; without
    one, a server that elicits anyway gets ``decline`` rather than a protocol error."""

    def __init__(self, read_stream: Any, write_stream: Any, *, elicitor: Elicitor | None = None) -> None:
        super().__init__(read_stream, write_stream, elicitation_callback=elicitor.callback if elicitor else None)
        self.cox_elicitor = elicitor

    async def dispatch_input_request(self, ctx: Any, request: Any) -> Any:
        if isinstance(request, mcp_types.ElicitRequest) and self.cox_elicitor is None:
            return mcp_types.ElicitResult(action="decline")
        return await super().dispatch_input_request(ctx, request)
