"""What a session shares with the threads around it: the scope an interrupt cancels, the timer
that reaps what a finished turn's commands left behind, and the subagent runner its tools call."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pykka

from cox.supervisors import CancelScope
from cox.supervisors.timer import scheduler

from . import messages as fx

if TYPE_CHECKING:
    from cox.agents.runner import AgentReport, AgentTask
    from cox.protocol.interfaces import CancelToken

    from .agents import AgentHost

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

    defer: Callable[[Callable[[], object]], None] | None = None
    """A subagent's: how the closing of its model streams waits for its host (``AgentHost.defer``)."""

    def for_stream(self, scope: CancelScope) -> CancelScope:
        """The scope a model stream of this session's turn runs under: the turn's own, or, for a
        subagent, one the turn's cancel closes through its host (after the crowd's ends)."""
        defer = self.defer
        if defer is None:
            return scope
        stream = CancelScope("stream")
        scope.on_cancel(lambda: defer(lambda: stream.cancel(scope.reason or "cancelled")))
        return stream

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


class LazyAgents:
    """The session's subagents, made on the first need (from a tool's thread, hence the lock): a
    session that never starts an agent never imports their machinery. Once closed, none starts."""

    def __init__(self, make: Callable[[], AgentHost]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._closed = False
        self.made: AgentHost | None = None

    def host(self) -> AgentHost:
        with self._lock:
            if self.made is None:
                from .agents import AgentError

                if self._closed:
                    raise AgentError("the session is closing; no agent starts now")
                self.made = self._make()
            return self.made

    def close_all(self) -> None:
        """The session ends: every agent stops, and none starts from now on."""
        with self._lock:
            self._closed = True
            made = self.made
        if made is not None:
            made.close_all()

    def run(self, task: AgentTask, cancel: CancelToken, call_id: str = "") -> AgentReport:
        return self.host().run(task, cancel, call_id)

    def start(self, task: AgentTask, call_id: str = "") -> str:
        return self.host().start(task, call_id)

    def wait(self, ids: list[str], timeout_s: float, cancel: CancelToken) -> dict[str, AgentReport | None]:
        return self.host().wait(ids, timeout_s, cancel)

    def send(self, agent_id: str, text: str) -> str | None:
        return self.host().send(agent_id, text)

    def close(self, agent_id: str) -> str | None:
        return self.host().close(agent_id)
