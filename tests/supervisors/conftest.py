"""Every test here starts and stops real actors: afterwards nothing may be left running."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pykka
import pytest

from cox.supervisors import registry


@pytest.fixture(autouse=True)
def no_leftover_actors() -> Iterator[None]:
    before = threading.active_count()
    yield
    pykka.ActorRegistry.stop_all(timeout=5)
    deadline = time.monotonic() + 3.0
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    leftover = [t.name for t in threading.enumerate()]
    assert threading.active_count() <= before, f"threads left running: {leftover}"
    assert not registry.supervisors(), "a supervisor is still registered"
