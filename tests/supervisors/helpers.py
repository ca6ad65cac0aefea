"""Actors and waits shared by the supervisor tests."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pykka

from cox.supervisors import ChildSpec, CoxActor, Exit, Restart
from tests.waits import BOUND_S


def wait_until(predicate: Callable[[], object], timeout: float = BOUND_S) -> bool:
    """Poll ``predicate`` until it is truthy or ``timeout`` passes; every wait in these tests
    is bounded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.002)
    return bool(predicate())


class Worker(CoxActor):
    """Answers ``"ping"``; fails on ``"crash"`` (told); raises what ``("raise", exc)`` carries;
    stops itself on ``"stop"``. Counts its starts in ``starts[tag]``."""

    def __init__(self, tag: str = "w", starts: Counter[str] | None = None) -> None:
        super().__init__()
        self.tag = tag
        if starts is not None:
            starts[tag] += 1

    def on_receive(self, message: Any) -> Any:
        if message == "ping":
            return "pong"
        if message == "crash":
            raise RuntimeError(f"{self.tag} crashed")
        if message == "stop":
            self.stop()
            return None
        if isinstance(message, tuple) and message[0] == "raise":
            raise message[1]
        return super().on_receive(message)


class Plain(pykka.ThreadingActor):
    """A plain pykka actor: it never reports its exit, only the watchdog can notice it."""

    def on_receive(self, message: Any) -> Any:
        return "pong" if message == "ping" else None


def spec(
    name: str,
    starts: Counter[str] | None = None,
    restart: Restart = Restart.PERMANENT,
    **kwargs: Any,
) -> ChildSpec:
    """A ChildSpec starting a ``Worker`` tagged with its name."""
    return ChildSpec(name, lambda: Worker.start(name, starts), restart=restart, **kwargs)


class ExitLog:
    """An exit listener that records every exit it is given."""

    def __init__(self) -> None:
        self.exits: list[Exit] = []
        self.event = threading.Event()

    def __call__(self, exit_: Exit) -> None:
        self.exits.append(exit_)
        self.event.set()

    def wait(self, timeout: float = BOUND_S) -> Exit:
        assert self.event.wait(timeout), "no exit reported"
        return self.exits[0]
