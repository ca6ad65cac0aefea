"""``CancelScope``: out-of-band cancellation for a turn and everything started for it.

A pykka stop or cancel *message* waits behind a handler blocked in I/O, so cancelling has to
happen from the interrupting thread: each child registers what cancelling means for it (close the
HTTP response, kill the process group, send MCP ``notifications/cancelled``) and ``cancel()`` runs
those callbacks right there. The session then tells itself a message so its state changes in order.

Callbacks run in the thread that calls ``cancel()`` (or, for a late registration, in the
registering thread), outside the scope's lock, so a callback may itself cancel scopes or register
callbacks without deadlocking.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cox.protocol.interfaces import CancelToken

__all__ = ["CancelScope", "Cancelled"]

log = logging.getLogger(__name__)

Callback = Callable[[], object]


class Cancelled(Exception):
    """Raised by :meth:`CancelScope.raise_if_cancelled`: the work was cancelled, not broken —
    supervisors and turns must not treat it as a crash."""


def _noop() -> None:
    return None


class CancelScope:
    """A thread-safe, one-shot cancellation signal with callbacks and child scopes.

    - ``cancel()`` is idempotent; the first call runs every registered callback exactly once, in
      registration order; a callback that raises is logged and the others still run.
    - ``on_cancel(cb)`` returns a function that unregisters ``cb``; registering after the scope
      was cancelled runs ``cb`` at once.
    - ``child()`` returns a scope cancelled together with this one (but not the other way round).
    """

    def __init__(self, name: str = "", parent: CancelScope | None = None) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._callbacks: dict[int, Callback] = {}
        self._ids = itertools.count()
        self._reason: str | None = None
        self._parent = parent
        self._detach: Callback = _noop
        if parent is not None:
            self._detach = parent.on_cancel(self._cancel_from_parent)

    def __repr__(self) -> str:
        state = f"cancelled: {self._reason}" if self.cancelled else "active"
        return f"<CancelScope {self.name or hex(id(self))} {state}>"

    @property
    def cancelled(self) -> bool:
        """True once ``cancel()`` was called here or on an ancestor."""
        return self._event.is_set()

    @property
    def reason(self) -> str | None:
        """What the first ``cancel()`` said (say ``"interrupt"``), or ``None``."""
        return self._reason

    def cancel(self, reason: str = "cancelled") -> bool:
        """Cancel the scope and run its callbacks. Returns True for the call that did it, False
        when it was cancelled already (so a caller can tell whether it owns the cancellation)."""
        with self._lock:
            if self._event.is_set():
                return False
            self._reason = reason
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
            # A cancelled scope needs nothing more from its parent; don't keep its list growing.
            detach, self._detach = self._detach, _noop
            # Set before the callbacks run so waiters wake at once, not after a slow close().
            self._event.set()
        for callback in callbacks:
            self._run(callback)
        detach()
        return True

    def on_cancel(self, callback: Callback) -> Callable[[], None]:
        """Run ``callback`` once when the scope is cancelled (now, if it already is).

        Returns an idempotent function that unregisters it: call it when the work finished
        normally, so a long-lived scope does not accumulate callbacks of finished children.
        """
        with self._lock:
            if not self._event.is_set():
                key = next(self._ids)
                self._callbacks[key] = callback
                return lambda: self._unregister(key)
        self._run(callback)
        return _noop

    def child(self, name: str = "") -> CancelScope:
        """A scope cancelled when this one is; cancelling the child leaves this one alone. Call
        ``close()`` on a child that finished, so the parent forgets it."""
        return CancelScope(name=name, parent=self)

    def close(self) -> None:
        """Detach from the parent scope without cancelling (the work finished normally)."""
        with self._lock:
            detach, self._detach = self._detach, _noop
        detach()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds passed; True if cancelled. An
        interruptible ``sleep`` for retry loops and pollers."""
        return self._event.wait(timeout)

    def raise_if_cancelled(self) -> None:
        """Raise :class:`Cancelled` if the scope was cancelled: a check point in a work loop."""
        if self._event.is_set():
            raise Cancelled(self._reason or "cancelled")

    def _cancel_from_parent(self) -> None:
        parent_reason = self._parent.reason if self._parent is not None else None
        self.cancel(parent_reason or "parent cancelled")

    def _unregister(self, key: int) -> None:
        with self._lock:
            self._callbacks.pop(key, None)

    def _run(self, callback: Callback) -> None:
        try:
            callback()
        except Exception:
            log.exception("cancel callback %r of %r failed", callback, self)


if TYPE_CHECKING:
    # CancelScope is what a tool or a provider sees as its CancelToken.
    _token: CancelToken = CancelScope()


def wait_cancelled(token: Any, seconds: float) -> bool:
    """Sleep up to ``seconds`` unless ``token`` (anything with ``cancelled`` and ``on_cancel``)
    is cancelled first; True when it was. For waits inside work a turn may interrupt."""
    if seconds <= 0:
        return bool(token.cancelled)
    ev = threading.Event()
    unregister = token.on_cancel(ev.set)
    try:
        return ev.wait(seconds) or bool(token.cancelled)
    finally:
        unregister()
