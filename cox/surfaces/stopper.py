"""SIGINT and SIGTERM for ``cox run``, from the first line of ``main()`` to the process's exit.

A script that stops cox must always get a ``result`` line and exit 4 — whenever the signal lands.
So the handlers are installed before anything slow is imported and kept until the end, and what
a signal does depends on the phase:

- ``ARMED`` (arguments being parsed): recorded; start-up begins by acting on it.
- ``STARTING`` (config, provider, store, session being set up): raises ``StartupInterrupted`` in
  the main thread once, which ends start-up with an interrupted result.
- ``RUNNING`` (a session runs): the handler only records and writes a byte to a pipe; a relay
  thread calls the surface's callback (interrupt the turn, wake the loop). Nothing that takes a
  lock runs inside the handler, so a signal landing while the main thread holds one cannot
  deadlock.
- ``SETTLED`` (the result is decided): a signal changes nothing; the exit code stays the result's.
  A second one ends a teardown that hangs, at once, with that exit code.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

ARMED, STARTING, RUNNING, SETTLED = "armed", "starting", "running", "settled"
SIGNALS = (signal.SIGINT, signal.SIGTERM)


SWALLOWED = frozenset({"cb", "__del__", "_remove", "remove"})
"""Frames whose exceptions Python prints and drops: importlib's module-lock weakref callback
(``_get_module_lock.<locals>.cb``), finalisers, weak containers' callbacks."""


WRAPPED = "__set_name__"
"""A frame whose exceptions Python 3.11 turns into a ``RuntimeError`` ("Error calling
__set_name__"): a signal landing while a class is being defined (a dataclass field's
``__set_name__``) would end start-up as "could not start" rather than as interrupted."""


def _lost_or_disguised(frame: Any) -> bool:
    """Would an exception raised in ``frame`` be dropped or reported as something else?"""
    if frame is None:
        return False
    if frame.f_code.co_name in SWALLOWED:
        return True
    while frame is not None:
        if frame.f_code.co_name == WRAPPED:
            return True
        frame = frame.f_back
    return False


class StartupInterrupted(BaseException):
    """A signal arrived while the session was being set up (a BaseException, as KeyboardInterrupt
    is, so no ``except Exception`` on the way swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Stopper:
    def __init__(self) -> None:
        self.phase = ARMED
        self.signum: int | None = None
        """The first signal received, whatever the phase."""
        self.count = 0
        self.settled_count = 0
        self.exit_code: int | None = None
        """Set once the final result is written: what a hanging teardown's second signal exits with."""
        self._previous: dict[int, Any] = {}
        self._pipe: tuple[int, int] | None = None
        self._relay: threading.Thread | None = None
        self._on_signal: Callable[[], None] | None = None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else ""

    def install(self) -> bool:
        """Take SIGINT and SIGTERM (main thread only; elsewhere the process's handlers stay)."""
        if threading.current_thread() is not threading.main_thread() or self._previous:
            return False
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return True

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
        self._stop_relay()

    def starting(self) -> None:
        """Start-up begins: a signal from now on ends it; one received while parsing does now."""
        self.phase = STARTING
        if self.signum is not None:
            self.phase = SETTLED
            raise StartupInterrupted(self.signum)

    def running(self, on_signal: Callable[[], None]) -> None:
        """A session runs: each signal calls ``on_signal`` from the relay thread."""
        self._on_signal = on_signal
        if self._previous and self._pipe is None:
            r, w = os.pipe()
            os.set_blocking(w, False)
            self._pipe = (r, w)
            self._relay = threading.Thread(target=self._relay_loop, args=(r,), name="cox-signals", daemon=True)
            self._relay.start()
        self.phase = RUNNING
        if self.signum is not None:
            on_signal()

    def settle(self) -> None:
        """The result is being decided: signals change nothing any more."""
        self.phase = SETTLED
        self._stop_relay()

    def hold_until_exit(self) -> None:
        """The process is about to exit with its result's code. Python's own finalisation puts
        the default handlers back before the process ends, so a signal then would still kill it
        (-2, -15); blocking both signals closes that window. Only when no other non-daemon
        thread is left: one that hangs would make the process deaf to all but SIGKILL, so then
        the handlers stay (and a second signal exits at once)."""
        others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
        if self._previous and not others:
            signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.signum is None:
            self.signum = signum
        if self.phase == STARTING:
            if self.count == 1 and _lost_or_disguised(frame):
                # Raised in a weakref callback or a finaliser, the exception would be printed as
                # "Exception ignored" and lost; in a ``__set_name__``, wrapped in a RuntimeError.
                # The signal is kept: ``running()`` acts on it (a second one ends the start-up here).
                return
            self.phase = SETTLED  # once: the code that reports it must not be interrupted again
            raise StartupInterrupted(signum)
        if self.phase == RUNNING and self._pipe is not None:
            try:
                os.write(self._pipe[1], b"s")
            except OSError:  # the pipe is full: the relay has wake-ups enough
                pass
        elif self.phase == SETTLED:
            self.settled_count += 1
            if self.settled_count >= 2 and self.exit_code is not None:
                os._exit(self.exit_code)  # the result is out; a teardown that hangs must not hold the exit

    def _relay_loop(self, r: int) -> None:
        while True:
            try:
                data = os.read(r, 64)
            except OSError:
                return
            if not data or b"q" in data:
                os.close(r)
                return
            callback = self._on_signal
            if callback is not None and self.phase == RUNNING:
                callback()

    def _stop_relay(self) -> None:
        pipe, self._pipe = self._pipe, None
        if pipe is None:
            return
        try:
            os.write(pipe[1], b"q")
        finally:
            os.close(pipe[1])
        if self._relay is not None and self._relay is not threading.current_thread():
            self._relay.join(5)
        self._relay = None
