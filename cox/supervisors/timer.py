"""One timer thread for the whole process: watchdog probes and backoff restarts.

pykka has no timers. A thread per supervisor (or per pending restart) would double the thread
count; this scheduler runs every delayed call on one daemon thread that exists only while
something is scheduled, so an idle process (and a test that stopped all its actors) has no extra
thread. Scheduled functions run on that thread and must be quick: they ``tell`` an actor and
return.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import field

from cox.slim import dataclass

__all__ = ["Scheduler", "scheduler"]

log = logging.getLogger(__name__)


@dataclass(order=True, slots=True)
class _Entry:
    due: float
    seq: int
    fn: Callable[[], bool | None] = field(compare=False)
    interval: float | None = field(compare=False, default=None)
    cancelled: bool = field(compare=False, default=False)


class Scheduler:
    """``call_later`` / ``call_every`` on a shared, lazily started daemon thread."""

    def __init__(self, name: str = "cox-timer") -> None:
        self._name = name
        self._cond = threading.Condition()
        self._heap: list[_Entry] = []
        self._live = 0
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def call_later(self, delay: float, fn: Callable[[], object]) -> Callable[[], None]:
        """Run ``fn()`` once after ``delay`` seconds. Returns an idempotent cancel function."""

        def once() -> bool:
            fn()
            return False

        return self._add(_Entry(time.monotonic() + delay, next(self._seq), once))

    def call_every(self, interval: float, fn: Callable[[], bool]) -> Callable[[], None]:
        """Run ``fn()`` every ``interval`` seconds until it returns False or is cancelled."""
        if interval <= 0:
            raise ValueError("interval must be positive")
        return self._add(_Entry(time.monotonic() + interval, next(self._seq), fn, interval))

    def _add(self, entry: _Entry) -> Callable[[], None]:
        with self._cond:
            heapq.heappush(self._heap, entry)
            self._live += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif self._heap[0] is entry:  # due before what the thread waits for: it must wait less
                self._cond.notify()
        return lambda: self._cancel(entry)

    def _cancel(self, entry: _Entry) -> None:
        """The thread is woken only when nothing is left (so it ends now): a cancelled entry
        it waits for is dropped when it comes due. Two hundred subagents ending their turns
        together cancel two hundred watchdog ticks; waking the timer for each put two hundred
        thread switches in the middle of their reports."""
        with self._cond:
            if not entry.cancelled:
                entry.cancelled = True
                self._live -= 1
                if self._live == 0:
                    self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                entry = self._next_due()
                if entry is None:
                    self._heap.clear()
                    self._thread = None
                    return
            again = self._call(entry)
            with self._cond:
                if entry.cancelled:
                    continue
                if again and entry.interval is not None:
                    entry.due = time.monotonic() + entry.interval
                    heapq.heappush(self._heap, entry)
                else:
                    entry.cancelled = True
                    self._live -= 1

    def _next_due(self) -> _Entry | None:
        """Under the lock: wait for the earliest live entry and pop it; None once nothing is live."""
        while self._live > 0:
            while self._heap and self._heap[0].cancelled:
                heapq.heappop(self._heap)
            if not self._heap:  # cannot happen: every live entry is in the heap here
                return None
            wait = self._heap[0].due - time.monotonic()
            if wait <= 0:
                return heapq.heappop(self._heap)
            self._cond.wait(wait)
        return None

    @staticmethod
    def _call(entry: _Entry) -> bool:
        try:
            return bool(entry.fn())
        except Exception:
            log.exception("scheduled call %r failed", entry.fn)
            return False


scheduler = Scheduler()
"""The process's scheduler."""
