"""What a session shares with the threads around it: the scope an interrupt cancels, and the
timer that reaps what a finished turn's commands left behind."""

from __future__ import annotations

import threading
from typing import Any

import pykka

from cox.supervisors import CancelScope
from cox.supervisors.timer import scheduler

from . import messages as fx

REAP_AFTER_S = 1.0
"""How long the calls of a finished turn have to reap their own processes before the session does."""


def reap_later(me: pykka.ActorRef[Any], processes: list[Any]) -> None:
    """Processes of a finished turn that their calls have not reaped yet (a call that crashed
    or was killed). Usually there are none: the exited ones nobody waited for are reaped now, and
    nothing waits. Otherwise the calls get ``REAP_AFTER_S`` to do it themselves (each removes its
    own from ``processes``), then the session ends and reaps what is left — a timer task telling
    the session, not a thread of its own."""
    from cox.actors.tools.bash import reap, reap_strays

    if not processes:
        reap_strays()
        return

    def end_them() -> None:
        reap(processes)
        reap_strays()

    def due() -> None:
        try:
            me.tell(fx.Reap(processes))
        except pykka.ActorDeadError:  # the session is gone: nobody else will
            threading.Thread(target=end_them, name="cox-reaper", daemon=True).start()

    scheduler.call_later(REAP_AFTER_S, due)


class ScopeHolder:
    """Shared between the session and its handle so an interrupt can cancel the running turn
    from the caller's thread, before the Interrupt message waits in the session's queue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scope: CancelScope | None = None
        self.finished = threading.Event()
        """Set when the session has said its last word (stopped, or its crash reported): the
        actor leaves the registry before its failure handling emits, so "not alive" alone does
        not mean every event is in the surface's queue."""

    def set(self, scope: CancelScope | None) -> None:
        with self._lock:
            self._scope = scope

    def cancel(self) -> bool:
        with self._lock:
            scope = self._scope
        if scope is None:
            return False
        scope.cancel()
        return True
