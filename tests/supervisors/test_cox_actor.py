"""CoxActor: failures stay local, BaseExceptions are tamed, every exit is reported once."""

from __future__ import annotations

import asyncio
import inspect
import queue
import threading
import time
from typing import Any

import pykka
import pytest

from cox.supervisors import ActorCrash, CoxActor, ExitKind, spawn_linked
from tests.waits import BOUND_S

from .helpers import ExitLog, Plain, Worker, wait_until

pytestmark = pytest.mark.timeout(300)  # only a hang: waits inside are bounded by BOUND_S

BASE_EXCEPTIONS = [
    asyncio.CancelledError(),
    SystemExit(3),
    GeneratorExit(),
    KeyboardInterrupt(),
]


def start_linked(cls: type[CoxActor], *args: Any) -> tuple[pykka.ActorRef[Any], ExitLog]:
    exits = ExitLog()
    with spawn_linked(exits, parent="test") as link:
        ref = cls.start(*args)
    assert link.urn == ref.actor_urn
    return ref, exits


def test_the_pykka_internals_cox_actor_overrides_still_exist() -> None:
    """A pykka upgrade that renames these would silently switch supervision off."""
    for name in ("_actor_loop", "_handle_receive", "_handle_failure", "_stop"):
        assert callable(getattr(pykka.Actor, name)), name
    assert callable(pykka.ThreadingActor._create_actor_inbox)
    assert isinstance(pykka.ThreadingActor._create_actor_inbox(), queue.Queue)  # _Inbox's base
    assert isinstance(pykka.messages._ActorStop(), object)
    # pykka's _stop reports a failing on_stop through _handle_failure (CoxActor records it there).
    assert "_handle_failure" in inspect.getsource(pykka.Actor._stop)


@pytest.mark.parametrize("exc", BASE_EXCEPTIONS, ids=lambda e: type(e).__name__)
def test_base_exception_in_tell_handler_fails_only_that_actor(exc: BaseException) -> None:
    bystander = Plain.start()
    cox_bystander = Worker.start("bystander")
    victim, exits = start_linked(Worker, "victim")
    victim.tell(("raise", exc))
    exit_ = exits.wait()
    assert exit_.kind is ExitKind.FAILURE
    assert isinstance(exit_.error, ActorCrash) and exit_.error.original is exc
    assert not victim.is_alive()
    assert bystander.ask("ping", timeout=BOUND_S) == "pong"
    assert cox_bystander.ask("ping", timeout=BOUND_S) == "pong"


@pytest.mark.parametrize("exc", BASE_EXCEPTIONS, ids=lambda e: type(e).__name__)
def test_base_exception_in_ask_handler_goes_to_the_caller(exc: BaseException) -> None:
    bystander = Plain.start()
    ref, exits = start_linked(Worker, "w")
    with pytest.raises(ActorCrash) as info:
        ref.ask(("raise", exc), timeout=BOUND_S)
    assert info.value.original is exc
    assert ref.ask("ping", timeout=BOUND_S) == "pong"
    assert bystander.ask("ping", timeout=BOUND_S) == "pong"
    assert not exits.exits


class BadStart(CoxActor):
    def __init__(self, exc: BaseException, gate: threading.Event | None = None) -> None:
        super().__init__()
        self.exc = exc
        self.gate = gate

    def on_start(self) -> None:
        if self.gate is not None:
            self.gate.wait(2)
        raise self.exc

    def on_receive(self, message: Any) -> Any:
        return "pong"


@pytest.mark.parametrize("exc", [*BASE_EXCEPTIONS, RuntimeError("no config")], ids=lambda e: type(e).__name__)
def test_exception_in_on_start_stops_the_actor_answers_pending_asks_and_is_reported(
    exc: BaseException,
) -> None:
    bystander = Plain.start()
    gate = threading.Event()
    ref, exits = start_linked(BadStart, exc, gate)
    pending = ref.ask("ping", block=False)  # queued before on_start fails
    gate.set()
    exit_ = exits.wait()
    assert exit_.kind is ExitKind.FAILURE
    assert exit_.error is exc
    assert wait_until(lambda: not ref.is_alive())
    with pytest.raises(pykka.ActorDeadError):
        pending.get(timeout=BOUND_S)  # answered, not left hanging
    assert bystander.ask("ping", timeout=BOUND_S) == "pong"


class BadStop(CoxActor):
    def __init__(self, exc: BaseException, calls: list[str]) -> None:
        super().__init__()
        self.exc = exc
        self.calls = calls

    def on_stop(self) -> None:
        self.calls.append("on_stop")
        raise self.exc


@pytest.mark.parametrize("exc", [RuntimeError("flush failed"), asyncio.CancelledError()])
def test_exception_in_on_stop_still_stops_and_reports_a_failure(exc: BaseException) -> None:
    """Bare pykka runs on_stop twice and never answers the stop for a BaseException there."""
    bystander = Plain.start()
    calls: list[str] = []
    ref, exits = start_linked(BadStop, exc, calls)
    assert ref.stop(timeout=BOUND_S) is True
    exit_ = exits.wait()
    assert exit_.kind is ExitKind.FAILURE
    assert exit_.error is exc or (isinstance(exit_.error, ActorCrash) and exit_.error.original is exc)
    assert calls == ["on_stop"]
    assert bystander.ask("ping", timeout=BOUND_S) == "pong"


class BadFailureHook(Worker):
    def on_failure(self, *exc_info: Any) -> None:
        raise asyncio.CancelledError()


def test_base_exception_in_on_failure_still_tears_down_and_reports() -> None:
    """Bare pykka leaves the asks queued behind the failure unanswered forever."""
    bystander = Plain.start()
    ref, exits = start_linked(BadFailureHook, "w")
    ref.tell("crash")
    pending = ref.ask("ping", block=False)
    exit_ = exits.wait()
    assert exit_.kind is ExitKind.FAILURE
    assert isinstance(exit_.error, RuntimeError)  # the first failure is the reason
    with pytest.raises(pykka.ActorDeadError):
        pending.get(timeout=BOUND_S)
    assert bystander.ask("ping", timeout=BOUND_S) == "pong"


def test_normal_stop_is_reported_exactly_once() -> None:
    ref, exits = start_linked(Worker, "w")
    ref.stop(timeout=BOUND_S)
    assert exits.wait().kind is ExitKind.NORMAL
    ref.stop(timeout=BOUND_S)  # stopping a dead actor again reports nothing more
    time.sleep(0.05)
    assert len(exits.exits) == 1


def test_failure_is_reported_exactly_once() -> None:
    ref, exits = start_linked(Worker, "w")
    ref.tell("crash")
    ref.tell("crash")
    assert exits.wait().kind is ExitKind.FAILURE
    time.sleep(0.05)
    assert len(exits.exits) == 1


def test_self_stop_is_normal_and_cox_fail_is_a_failure_with_on_stop() -> None:
    ref, exits = start_linked(Worker, "w")
    ref.tell("stop")
    assert exits.wait().kind is ExitKind.NORMAL

    stopped = threading.Event()

    class Failing(CoxActor):
        def on_receive(self, message: Any) -> Any:
            self._cox_fail(ConnectionError("connection closed"))

        def on_stop(self) -> None:
            stopped.set()

    ref, exits = start_linked(Failing)
    ref.tell("go")
    exit_ = exits.wait()
    assert exit_.kind is ExitKind.FAILURE and isinstance(exit_.error, ConnectionError)
    assert stopped.is_set()


def test_only_the_first_actor_constructed_takes_the_link() -> None:
    exits = ExitLog()
    with spawn_linked(exits, parent="sup") as link:
        first = Worker.start("first")
        second = Worker.start("second")
    assert link.urn == first.actor_urn
    second.stop(timeout=BOUND_S)
    first.stop(timeout=BOUND_S)
    assert exits.wait().urn == first.actor_urn
    time.sleep(0.05)
    assert len(exits.exits) == 1


def test_a_class_attribute_named_like_a_pykka_internal_is_rejected() -> None:
    with pytest.raises(TypeError, match="_stop"):

        class Clashing(CoxActor):
            def _stop(self) -> None: ...


class InstanceClash(CoxActor):
    def __init__(self) -> None:
        super().__init__()
        self._stop = threading.Event()  # type: ignore[assignment]  # the classic mistake


def test_an_instance_attribute_named_like_a_pykka_internal_fails_the_actor() -> None:
    ref, exits = start_linked(InstanceClash)
    exit_ = exits.wait()
    assert exit_.kind is ExitKind.FAILURE and isinstance(exit_.error, TypeError)
    assert wait_until(lambda: not ref.is_alive())
