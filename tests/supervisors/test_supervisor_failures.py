"""Restart intensity and escalation, shutdown timeouts, the watchdog, backoff, BaseExceptions."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pykka
import pytest

from cox.supervisors import (
    ChildSpec,
    CoxActor,
    Exit,
    ExitKind,
    Restart,
    RestartIntensityExceeded,
    SupervisorHandle,
    start_supervisor,
    supervisor_spec,
)
from tests.waits import BOUND_S

from .helpers import Plain, Worker, spec, wait_until

pytestmark = pytest.mark.timeout(300)  # only a hang: waits inside are bounded by BOUND_S


def crash(ref: pykka.ActorRef[Any] | None) -> None:
    assert ref is not None
    ref.tell("crash")


def replaced(
    sup: SupervisorHandle,
    name: str,
    old: pykka.ActorRef[Any] | None,
    unless: threading.Event | None = None,
) -> Callable[[], bool]:
    """A predicate: child ``name`` runs an incarnation other than ``old`` (or ``unless`` is set)."""

    def check() -> bool:
        if unless is not None and unless.is_set():
            return True
        ref = sup.whereis(name)
        return ref is not None and ref is not old

    return check


def test_intensity_exceeded_escalates_to_the_parent_which_restarts_the_subtree() -> None:
    starts: Counter[str] = Counter()
    root = start_supervisor("root", max_restarts=5, period_s=5.0)
    sub = start_supervisor("mcp", max_restarts=1, period_s=5.0, children=[spec("srv", starts)], parent=root)
    first_sub = sub.ref
    assert first_sub is not None
    crash(sub.whereis("srv"))
    assert wait_until(lambda: starts["srv"] == 2 and sub.whereis("srv") is not None)
    crash(sub.whereis("srv"))  # the second restart in the period: more than max_restarts=1
    assert wait_until(lambda: (r := sub.ref) is not None and r.actor_urn != first_sub.actor_urn)
    assert not first_sub.is_alive()
    assert wait_until(lambda: sub.whereis("srv") is not None)
    assert sub.whereis("srv").ask("ping", timeout=BOUND_S) == "pong"  # type: ignore[union-attr]
    assert starts["srv"] == 3  # the new supervisor started it afresh
    # The new subtree registers itself while it starts, before the root has filed the restart.
    assert wait_until(lambda: root.which_children()[0]["restarts"] == 1), root.which_children()
    assert root.which_children()[0]["last_exit"] == "failure"


def test_intensity_exceeded_at_the_root_calls_on_escalate() -> None:
    escalated: list[Exit] = []
    done = threading.Event()

    def on_escalate(exit_: Exit) -> None:
        escalated.append(exit_)
        done.set()

    root = start_supervisor(
        "root", max_restarts=2, period_s=5.0, children=[spec("w")], on_escalate=on_escalate
    )
    for _ in range(3):
        old = root.whereis("w", timeout=BOUND_S)
        crash(old)
        assert wait_until(replaced(root, "w", old, unless=done))
    assert done.wait(2)
    assert escalated[0].kind is ExitKind.FAILURE
    assert isinstance(escalated[0].error, RestartIntensityExceeded)
    assert wait_until(lambda: not root.is_alive())
    assert root.whereis("w") is None


def test_restarts_outside_the_period_do_not_add_up() -> None:
    escalated: list[Exit] = []
    root = start_supervisor(
        "root", max_restarts=1, period_s=0.1, children=[spec("w")], on_escalate=escalated.append
    )
    for _ in range(3):
        old = root.whereis("w", timeout=BOUND_S)
        crash(old)
        assert wait_until(replaced(root, "w", old))
        time.sleep(0.15)
    assert root.is_alive() and not escalated


class SlowToStop(CoxActor):
    def __init__(self, release: threading.Event) -> None:
        super().__init__()
        self.release = release

    def on_stop(self) -> None:
        self.release.wait(3)


def test_shutdown_timeout_is_honoured_when_a_child_blocks_in_on_stop() -> None:
    release = threading.Event()
    root = start_supervisor(
        "root",
        children=[
            spec("before"),
            ChildSpec("slow", lambda: SlowToStop.start(release), shutdown_timeout=0.2),
        ],
    )
    try:
        t0 = time.monotonic()
        assert root.terminate_child("slow") is True
        assert time.monotonic() - t0 < 20  # SlowToStop never stops by itself: the 0.2 s shutdown timeout ended the wait
        assert [c["name"] for c in root.which_children()] == ["before"]
        # The same when the whole supervisor stops: it notes the laggard and moves on.
        root.start_child(ChildSpec("slow2", lambda: SlowToStop.start(release), shutdown_timeout=0.2))
        t0 = time.monotonic()
        assert root.stop(timeout=BOUND_S) is True
        assert time.monotonic() - t0 < 20  # as above
    finally:
        release.set()


def test_watchdog_detects_a_child_that_died_without_reporting() -> None:
    root = start_supervisor("root", children=[ChildSpec("plain", Plain.start)], watchdog_s=0.02)
    old = root.whereis("plain")
    assert old is not None
    old.stop(timeout=BOUND_S)  # a plain pykka actor tells nobody
    assert wait_until(lambda: (r := root.whereis("plain")) is not None and r is not old, BOUND_S)
    assert root.which_children()[0]["last_exit"] == "killed"


class Mute(Worker):
    """A CoxActor whose report gets lost."""

    def _cox_report_exit(self) -> None:
        return None


def test_watchdog_gives_a_reporting_child_a_grace_period_then_declares_it_killed() -> None:
    root = start_supervisor("root", children=[ChildSpec("mute", Mute.start)], watchdog_s=0.02)
    old = root.whereis("mute")
    crash(old)
    assert wait_until(lambda: (r := root.whereis("mute")) is not None and r is not old, BOUND_S)
    assert root.which_children()[0]["last_exit"] == "killed"


def test_a_lookup_that_finds_a_dead_child_wakes_the_watchdog() -> None:
    root = start_supervisor("root", children=[ChildSpec("plain", Plain.start)], watchdog_s=60)
    old = root.whereis("plain")
    assert old is not None
    old.stop(timeout=BOUND_S)
    t0 = time.monotonic()
    new = root.whereis("plain", timeout=BOUND_S)
    assert new is not None and new is not old
    assert time.monotonic() - t0 < 30  # not the 60 s watchdog


def test_each_exit_is_handled_once_even_with_a_busy_watchdog() -> None:
    starts: Counter[str] = Counter()
    root = start_supervisor("root", children=[spec("w", starts)], watchdog_s=0.005)
    crash(root.whereis("w"))
    assert wait_until(lambda: starts["w"] == 2)
    time.sleep(0.3)  # many watchdog rounds, plus REPORT_GRACE_S
    assert starts["w"] == 2
    assert root.which_children()[0]["restarts"] == 1


def test_backoff_delays_the_restart_and_does_not_count_towards_intensity() -> None:
    starts: Counter[str] = Counter()
    escalated: list[Exit] = []
    root = start_supervisor(
        "root",
        max_restarts=0,  # any counted restart would escalate
        children=[spec("srv", starts, backoff=(0.15, 1.0))],
        on_escalate=escalated.append,
    )
    for expected_delay in (0.15, 0.3):
        t0 = time.monotonic()
        crash(root.whereis("srv"))
        assert wait_until(lambda: root.which_children()[0]["state"] == "restarting")
        assert root.whereis("srv") is None
        assert root.whereis("srv", timeout=BOUND_S) is not None
        assert time.monotonic() - t0 >= expected_delay * 0.9
    assert starts["srv"] == 3 and not escalated and root.is_alive()


class Flaky(CoxActor):
    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.exc = exc

    def on_start(self) -> None:
        raise self.exc


def test_a_child_failing_in_on_start_with_a_base_exception_escalates_without_hurting_others() -> None:
    bystander = Plain.start()
    escalated: list[Exit] = []
    done = threading.Event()

    def on_escalate(exit_: Exit) -> None:
        escalated.append(exit_)
        done.set()

    start_supervisor(
        "root",
        max_restarts=3,
        children=[spec("ok"), ChildSpec("flaky", lambda: Flaky.start(asyncio.CancelledError()))],
        on_escalate=on_escalate,
    )
    assert done.wait(2)
    assert isinstance(escalated[0].error, RestartIntensityExceeded)
    assert bystander.ask("ping", timeout=BOUND_S) == "pong"


def test_a_base_exception_in_a_supervised_child_kills_no_unrelated_actor() -> None:
    starts: Counter[str] = Counter()
    bystander = Plain.start()
    root = start_supervisor("root", children=[spec("a", starts), spec("b", starts)])
    sibling = root.whereis("b")
    victim = root.whereis("a")
    assert victim is not None and sibling is not None
    victim.tell(("raise", SystemExit(1)))
    assert wait_until(lambda: starts["a"] == 2 and root.whereis("a") is not None)
    assert sibling.ask("ping", timeout=BOUND_S) == "pong" and root.whereis("b") is sibling
    assert bystander.ask("ping", timeout=BOUND_S) == "pong"


def test_nested_supervisor_spec_starts_its_subtree_before_start_child_returns() -> None:
    root = start_supervisor("root")
    root.start_child(
        supervisor_spec("sessions", children=[spec("s1"), spec("s2", restart=Restart.TEMPORARY)])
    )
    sessions = root.child_supervisor("sessions")
    assert [c["name"] for c in sessions.which_children()] == ["s1", "s2"]
    assert sessions.whereis("s1") is not None
    assert sessions.stop(timeout=BOUND_S) is True  # through the parent, which would restart it otherwise
    assert [c["name"] for c in root.which_children()] == []
    assert not sessions.is_alive()
