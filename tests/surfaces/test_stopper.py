"""The stopper turns a signal during start-up into ``StartupInterrupted`` unless Python would
lose or disguise that exception where it lands; then the signal waits for ``running()``."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from cox.surfaces.stopper import StartupInterrupted, Stopper


@pytest.fixture
def stopper() -> Any:
    s = Stopper()
    assert s.install()
    yield s
    s.restore()


def test_a_signal_during_start_up_interrupts_it(stopper: Stopper) -> None:
    stopper.starting()
    with pytest.raises(StartupInterrupted):
        signal.raise_signal(signal.SIGTERM)
    assert stopper.name == "SIGTERM"


class SignalledField:
    """A descriptor whose ``__set_name__`` (run while its class is defined) gets a SIGINT."""

    def __set_name__(self, owner: type, name: str) -> None:
        signal.raise_signal(signal.SIGINT)


def test_a_signal_while_a_class_is_defined_is_kept_for_the_session_not_wrapped(stopper: Stopper) -> None:
    # Python 3.11 wraps whatever a __set_name__ raises in a RuntimeError: had the stopper raised
    # there, start-up would end as "could not start" instead of as interrupted
    stopper.starting()

    class Defined:
        f = SignalledField()

    assert Defined.f is not None and stopper.name == "SIGINT"
    called: list[bool] = []
    stopper.running(lambda: called.append(True))
    assert called == [True]  # the session hears of it as soon as it runs


def test_a_second_signal_there_still_ends_start_up(stopper: Stopper) -> None:
    stopper.starting()

    class Defined:
        f = SignalledField()

    with pytest.raises(StartupInterrupted):
        signal.raise_signal(signal.SIGINT)
