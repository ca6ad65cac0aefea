"""The application tree and the handle every surface drives a session through.

    root (one_for_one)
    ├── store     permanent   the one writer of cox.db, rollouts and the archive
    └── sessions  one_for_one one Session actor per session (temporary)

Surfaces never touch an actor's state: they ``submit`` Submissions and read ``(event, line)``
pairs from the handle's queue. ``interrupt`` cancels the running turn out of band first, so a
handler blocked in I/O cannot delay it, then tells the session so its state changes in order.
"""

from __future__ import annotations

import os
import queue
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pykka

from cox.actors.session.actor import ScopeHolder, SessionActor, SessionSettings
from cox.actors.store.actor import StoreActor
from cox.actors.store.layout import Layout
from cox.actors.tools.base import BaseTool
from cox.protocol import messages as m
from cox.protocol.interfaces import Provider
from cox.slim import dataclass
from cox.supervisors import ChildSpec, Restart, shutdown, start_supervisor

if TYPE_CHECKING:
    from cox.actors.session.resume import Rebuilt

SESSION_START_TIMEOUT_S = 30.0
"""How long ``open_session`` waits for the session supervisor to start the session. Starts are
served one at a time (each O(1)), so a start asked together with a thousand others waits its turn
behind them; the bound is there for a supervisor that hangs, not for that queue."""


class App:
    """One process's supervisor tree. ``close()`` stops every actor (threads are non-daemon)."""

    def __init__(self, home: Path) -> None:
        self.layout = Layout(home).ensure()
        self.root = start_supervisor("root", strategy="one_for_one", max_restarts=5, period_s=10.0)
        self.root.start_child(ChildSpec("store", lambda: StoreActor.start(self.layout), restart=Restart.PERMANENT,
                                        shutdown_timeout=10.0))
        self.sessions = start_supervisor("sessions", strategy="one_for_one", max_restarts=100, period_s=1.0,
                                         parent=self.root)
        self._closed = False
        self.on_close: list[Any] = []
        """Callables run first thing in ``close()`` (the MCP manager's ``cancel_launch``)."""

    def store(self) -> pykka.ActorRef[Any] | None:
        return self.root.whereis("store")

    def open_session(self, settings: SessionSettings, provider: Provider, tools: dict[str, BaseTool], engine: Any,
                     resumed: Rebuilt | None = None, hooks: Any = None,
                     deferred: dict[str, BaseTool] | None = None) -> SessionHandle:
        events: queue.Queue[tuple[Any, str]] = queue.Queue()
        holder = ScopeHolder()
        name = f"session:{settings.session_id}"

        def sink(event: Any, line: str) -> None:
            events.put((event, line))

        self.sessions.start_child(ChildSpec(
            name,
            lambda: SessionActor.start(settings, provider, tools, engine, self.store, [sink], holder, resumed, hooks,
                                       deferred),
            restart=Restart.TEMPORARY, shutdown_timeout=10.0,
        ), timeout=SESSION_START_TIMEOUT_S)
        return SessionHandle(self, settings.session_id, name, holder, events)

    def close(self, timeout: float = 10.0) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            for hook in self.on_close:
                hook()
            shutdown(timeout=timeout)  # the tree top-down, then anything left
        finally:
            import gc

            from cox.actors.tools.bash import reap_strays

            if _exited_child_waiting():  # a full collection costs ~0.1 s on a big heap: only when it can help
                gc.collect()  # a Popen dropped by a dead call is parked for reaping only once freed
            reap_strays()


def _exited_child_waiting() -> bool:
    """Whether a child of this process has exited and waits to be reaped (a zombie). Without one
    there is nothing for ``close`` to reap, so it need not collect garbage to find dropped Popens."""
    try:
        return os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # no children at all
        return False


@dataclass
class SessionHandle:
    app: App
    session_id: str
    name: str
    holder: ScopeHolder
    events: queue.Queue[tuple[Any, str]]

    def ref(self) -> pykka.ActorRef[Any] | None:
        return self.app.sessions.whereis(self.name)

    def alive(self) -> bool:
        ref = self.ref()
        return ref is not None and ref.is_alive()

    def submit(self, submission: Any) -> bool:
        if isinstance(submission, m.Interrupt):
            self.holder.cancel()
        ref = self.ref()
        if ref is None:
            return False
        try:
            ref.tell(submission)
        except pykka.ActorDeadError:
            return False
        return True

    def interrupt(self) -> bool:
        return self.submit(m.Interrupt())

    def shutdown(self, timeout: float = 10.0) -> None:
        ref = self.ref()
        if ref is not None:
            try:
                ref.stop(block=True, timeout=timeout)
            except Exception:  # already gone or timed out: close() stops everything anyway
                pass
