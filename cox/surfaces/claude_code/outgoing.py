"""cox's own control requests to the client (``can_use_tool``, ``hook_callback``,
``mcp_message``), each answered by a ``control_response`` the stdin reader hands to
:meth:`Outgoing.resolve`.

Two ways to wait: ``send`` with a callback (the driver's approvals: the loop never blocks on the
client) and ``ask``, blocking, bounded by a timeout and by the turn's cancel scope (hooks and
MCP calls, which run on threads that wait for their answer anyway). A client that never answers
costs the one call its timeout, never the session; stdin closing fails every request still
open, with a sentence saying so.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from typing import Any

from .wire import Wire

Answer = Callable[[dict[str, Any] | None, str | None], None]
"""Called once with (the response's payload, None) or (None, why it failed)."""


class ClientGone(Exception):
    """The client did not answer: stdin closed, the timeout passed, or the turn was cancelled."""


class Outgoing:
    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self._lock = threading.Lock()
        self._open: dict[str, tuple[str, Answer]] = {}
        self._ids = itertools.count(1)
        self._prefix = os.urandom(3).hex()
        self.closed: str | None = None

    def send(self, request: dict[str, Any], answer: Answer) -> str:
        """Write one control request; ``answer`` is called when its response comes (or never
        will). Returns the request id."""
        request_id = f"cox_{self._prefix}_{next(self._ids)}"
        with self._lock:
            if self.closed is not None:
                why = self.closed
                request_id = ""
            else:
                self._open[request_id] = (str(request.get("subtype", "")), answer)
                why = None
        if why is not None:
            answer(None, why)
            return request_id
        if not self.wire.send({"type": "control_request", "request_id": request_id, "request": request}):
            self._fail(request_id, "stdout is closed: the client went away")
        return request_id

    def ask(self, request: dict[str, Any], timeout: float, cancel: Any = None) -> dict[str, Any]:
        """Send and wait for the answer; raises ``ClientGone`` (the reason in its message)."""
        done = threading.Event()
        box: list[Any] = []

        def answer(payload: dict[str, Any] | None, why: str | None) -> None:
            box.append((payload, why))
            done.set()

        request_id = self.send(request, answer)
        unregister = cancel.on_cancel(lambda: self._fail(request_id, "the turn was interrupted")) \
            if cancel is not None and request_id else None
        try:
            if not done.wait(timeout):
                self.cancel(request_id, f"the client did not answer {request.get('subtype')} within {timeout:g} s")
        finally:
            if unregister is not None:
                unregister()
        payload, why = box[0]
        if why is not None:
            raise ClientGone(why)
        return payload or {}

    def resolve(self, response: dict[str, Any]) -> bool:
        """A ``control_response``'s ``response`` object; False when no request of ours has its id."""
        request_id = str(response.get("request_id", ""))
        with self._lock:
            entry = self._open.pop(request_id, None)
        if entry is None:
            return False
        _, answer = entry
        if response.get("subtype") == "error":
            answer(None, str(response.get("error") or "the client answered with an error"))
        else:
            payload = response.get("response")
            answer(payload if isinstance(payload, dict) else {}, None)
        return True

    def cancel(self, request_id: str, why: str) -> None:
        """Give up on one request: tell the client (``control_cancel_request``) and fail it here."""
        if self._fail(request_id, why):
            self.wire.send({"type": "control_cancel_request", "request_id": request_id})

    def close(self, why: str) -> None:
        """No answer can come any more (stdin closed): fail what is open, refuse what follows."""
        with self._lock:
            self.closed = why
            entries = list(self._open.values())
            self._open.clear()
        for _, answer in entries:
            answer(None, why)

    def _fail(self, request_id: str, why: str) -> bool:
        with self._lock:
            entry = self._open.pop(request_id, None)
        if entry is None:
            return False
        entry[1](None, why)
        return True
