"""Killing an actor's thread the way a crash would: an exception raised asynchronously in it
(``PyThreadState_SetAsyncExc``), which ``CoxActor`` turns into an ordinary failure.

Shared by the chaos tests; :func:`unsafe_to_interrupt` says where such an exception must not land.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

LOGGING_DIR = os.path.dirname(logging.__file__)
THREADING_BOOKKEEPING = frozenset({"start", "join", "is_alive", "_wait_for_tstate_lock", "_stop", "_delete",
                                   "_set_tstate_lock", "_maintain_shutdown_locks"})
"""threading's own functions that hold its module-wide locks (``_shutdown_locks_lock``,
``_active_limbo_lock``): killed inside one, a thread can leave such a lock held, and every later
thread start or join in the process waits forever."""
LOCKING = (queue.__file__, threading.__file__)


class ChaosKill(SystemExit):
    """Injected into a victim thread; CoxActor turns it into an ordinary failure."""


def unsafe_to_interrupt(ident: int) -> bool:
    """True while the thread is outside its actor's loop (still being started by threading), or
    inside ``Popen.__init__``, an import, ``logging``, a queue's ``put`` or threading's own lock
    bookkeeping (``THREADING_BOOKKEEPING``). Killed while threading
    starts it, a thread never says it started, and whoever started it waits forever; in
    ``Popen.__init__`` it leaves a child whose pid nobody ever learns; in an import or ``logging``
    it can land between a lock's acquire and the ``with``/``try`` that releases it (the import
    lock, a handler's lock), and every later import or log line in the process deadlocks; in a
    ``put`` it can leave an event delivered that its sender believes was not. Only an
    asynchronous exception can do that — a real crash is raised by code, never from inside
    threading's thread start, CPython's fork/exec or a library's lock bookkeeping — so the
    schedule waits. Everywhere else (cox's code, pykka, waits, the actor runtime's own failure
    handling) is fair game."""
    frame = sys._current_frames().get(ident)
    inside_actor = False  # only an actor's own loop runs code that can crash; threading's start does not
    probe = frame
    while probe is not None:
        inside_actor = inside_actor or probe.f_code.co_name == "_actor_loop"
        probe = probe.f_back
    if not inside_actor:
        return True
    while frame is not None:
        code = frame.f_code
        if code.co_filename == subprocess.__file__ and code.co_name in ("__init__", "_execute_child"):
            return True
        if code.co_filename.startswith(("<frozen importlib", LOGGING_DIR)):
            return True
        if code.co_filename == queue.__file__ and code.co_name == "put":
            return True
        if code.co_filename == threading.__file__ and code.co_name in THREADING_BOOKKEEPING:
            return True
        frame = frame.f_back
    return False


def inject(thread: threading.Thread) -> bool:
    """Raise :class:`ChaosKill` in ``thread`` unless it is somewhere unsafe; True if raised."""
    if thread.ident is None or not thread.is_alive() or unsafe_to_interrupt(thread.ident):
        return False
    n = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(ChaosKill))
    return bool(n == 1)


def kill_at_random(rng: random.Random, stop: threading.Event, kills: list[str], victims: tuple[str, ...], *,
                   pause: tuple[float, float], thread_odds: float, process_odds: float = 0.0,
                   processes: Callable[[], list[int]] | None = None) -> None:
    """The chaos schedule, until ``stop``: after each pause, with ``thread_odds`` kill one
    thread whose name starts with one of ``victims``; with ``process_odds`` SIGKILL every process
    ``processes`` lists. What was killed goes into ``kills`` (a thread's name, or ``pid N``)."""
    while not stop.is_set():
        time.sleep(rng.uniform(*pause))
        named = [t for t in threading.enumerate() if t.name.startswith(victims)]
        if named and rng.random() < thread_odds:
            t = rng.choice(named)
            if inject(t):
                kills.append(t.name)
        if processes is not None and rng.random() < process_odds:
            for pid in processes():
                try:
                    os.kill(pid, signal.SIGKILL)
                    kills.append(f"pid {pid}")
                except ProcessLookupError:
                    pass
