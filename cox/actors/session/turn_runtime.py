"""What a running turn holds outside its machine: the processes its commands started (reaped when
the turn ends) and the watchdog timer that finds children which vanished without a report.

Why its own module: the machine is pure and knows nothing of processes or timers; the actor only
says "a turn began" and "a turn ended". Between the two, this object owns the turn's timer task
and the list of processes the turn's calls share.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

import pykka

from cox.supervisors.timer import scheduler

from . import messages as fx
from .holder import reap_later

if TYPE_CHECKING:
    from .watchdog import Watchdog

WATCHDOG_S = 0.5
"""How often a running turn checks that its children are still alive (``watchdog.py``)."""


class TurnRuntime:
    def __init__(self, me: pykka.ActorRef[Any], gen: int) -> None:
        self.processes: list[Any] = []  # the turn's commands' processes, shared with their calls
        self.ran_commands = False
        self.watchdog: Watchdog | None = None  # made when a tick first finds a child dead

        def tick() -> bool:
            try:
                me.tell(fx.WatchdogTick(gen))
            except pykka.ActorDeadError:
                return False
            return True

        self._stop_ticks: Callable[[], None] = scheduler.call_every(WATCHDOG_S, tick)

    def end(self, me: pykka.ActorRef[Any]) -> None:
        """The turn is over: no more ticks, and what its commands left is reaped soon."""
        self._stop_ticks()
        if self.ran_commands:
            reap_later(me, self.processes)

    def vanished(self, watched: Iterable[tuple[str, Hashable]],
                 alive: Callable[[str, Hashable], bool | None]) -> list[tuple[str, Hashable]]:
        """The watched children found dead on this tick and the last (``alive`` None: not known)."""
        dead = [(kind, ident) for kind, ident in watched if alive(kind, ident) is False]
        if self.watchdog is None:
            if not dead:  # as a fresh watchdog's tick of no one: no suspects, none vanished
                return []
            from .watchdog import Watchdog  # a turn whose children all live (most turns) never needs it

            self.watchdog = Watchdog()
        return self.watchdog.tick(dead)  # type: ignore[return-value]
