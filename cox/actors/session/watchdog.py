"""The child watchdog: a turn's child whose thread is gone without any report is a crash.

A child that dies normally or crashes tells the session so through its link (``ChildExit``).
One whose thread vanished without a word would leave the turn waiting forever; the session's
timer ticks every ``turn_runtime.WATCHDOG_S`` while a turn runs and asks which children are dead. A child
found dead is only suspected at first — its last messages may still be queued behind the tick —
and is declared vanished when it is found dead again on the next tick.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable


class Watchdog:
    def __init__(self) -> None:
        self.suspects: set[Hashable] = set()

    def tick(self, dead_now: Iterable[Hashable]) -> list[Hashable]:
        """Record the children found dead on this tick; those also dead on the last one."""
        dead = set(dead_now)
        vanished = [key for key in dead if key in self.suspects]
        self.suspects = dead
        return vanished
