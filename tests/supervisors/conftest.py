"""Every test here starts and stops real actors: afterwards nothing may be left running."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pykka
import pytest

from cox.supervisors import registry
from tests.waits import BOUND_S, join_new_threads


@pytest.fixture(autouse=True)
def no_leftover_actors() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    pykka.ActorRegistry.stop_all(timeout=BOUND_S)
    leftover = join_new_threads(before)
    assert not leftover, f"threads left running: {leftover}"
    assert not registry.supervisors(), "a supervisor is still registered"
