"""A second exception during failure handling cannot leave an actor half dead.

The chaos test injects asynchronous exceptions into actor threads, and one can land while the
thread is already handling a failure (logging it, running ``on_failure``, answering askers,
reporting the exit). Here a tracer in the actor's thread raises an exception at the *n*-th point
(each line and each function entry) after the first failure began, for every *n* until the
handling runs out of points; and again with a second exception right behind it, raised at the
next point the handling reaches. (Not with ``PyThreadState_SetAsyncExc``: an asynchronous
exception taken inside CPython's ``abc`` machinery crashed the interpreter, a segfault that says
nothing about cox.) Each time the actor must end stopped and
unregistered, its queued asker must get ``ActorDeadError``, its thread must end, and its exit must
be reported exactly once.

Each case runs in a child interpreter of its own: raising from a trace function is the corner of
CPython 3.11 where the interpreter itself has crashed (a segfault inside ``abc`` while ``logging``
built a record, in a CI run), and a crashed xdist worker hangs ``--dist loadgroup`` (pytest-xdist
#1378). A child killed by a signal is run again, at most ``ATTEMPTS`` times; a failed assertion
is never retried.
"""

from __future__ import annotations

import dis
import os
import queue
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import pykka
import pykka._actor
import pytest

from cox.supervisors import ActorCrash, CoxActor, Exit, ExitKind, spawn_linked
from cox.supervisors import actor as actor_module

pytestmark = pytest.mark.timeout(600)

NOP, LOAD_CONST, RETURN = dis.opmap["NOP"], dis.opmap["LOAD_CONST"], dis.opmap["RETURN_VALUE"]

STDLIB = (sysconfig.get_path("stdlib"), "<frozen")

LINES_IN = {actor_module.__file__, pykka._actor.__file__, __file__}
"""Every line is a point in the runtime under test and the hooks here; elsewhere only function
entries are."""

BOUND_S = 60.0
"""Outer bound of every wait: only a hang reaches it."""

CHILD = "COX_TEST_FAILURE_HANDLING_CHILD"
"""Set in the child interpreter that runs one case for real."""

ATTEMPTS = 3
"""How often a case whose interpreter died of a signal is run again."""


class Injected(SystemExit):
    """What the tracer raises; a ``SystemExit`` like the chaos test's, so nothing catches it by
    accident as an ``Exception``."""


@dataclass
class Tracer:
    """Counts points in one thread once ``armed`` and raises at point ``at``."""

    thread_name: str
    at: int
    also_async: bool = False  # a second exception right behind the first
    armed: bool = False
    points: int = 0
    fired: bool = False
    second: bool = False
    where: str = ""
    thread: list[threading.Thread] = field(default_factory=list)

    def arm(self) -> None:
        self.armed = True

    def _point(self, frame: FrameType) -> None:
        if not self.armed:
            return
        if self.fired:
            if self.second:  # a second one right behind the first, at the next point the
                self.second = False  # handling reaches (never inside the standard library:
                raise Injected("a second one, right behind the first")  # see ``global_``)
            return
        self.points += 1
        if self.points == self.at:
            self.fired = True
            self.second = self.also_async
            self.where = f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}"
            raise Injected(f"injected at point {self.at}")

    def local(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        # A ``try:`` line (a NOP before its handler's range) and a ``return`` of a constant run
        # nothing that could raise, and no asynchronous exception is delivered there either.
        code, at = frame.f_code.co_code, frame.f_lasti
        if event == "line" and code[at] != NOP and not (code[at] == LOAD_CONST and code[at + 2] == RETURN):
            self._point(frame)
        return self.local

    def global_(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if not threading.current_thread().name.startswith(self.thread_name):
            return None
        code = frame.f_code
        if code.co_filename.startswith(STDLIB):
            # Not inside the standard library: an exception landing between its lock's acquire
            # and release (``logging``, ``threading``, ``importlib``) leaves the lock held, which
            # no runtime can repair, and a real failure is never raised there.
            return None
        self._point(frame)  # a function's entry: where an asynchronous exception is taken
        return self.local if code.co_filename in LINES_IN else None


class Victim(CoxActor):
    """Waits for ``gate`` in ``on_start`` (so messages queue up first), then fails as told."""

    def __init__(self, tracer: Tracer, how: str, gate: threading.Event, hooks: list[str]) -> None:
        super().__init__()
        self.tracer = tracer
        self.how = how
        self.gate = gate
        self.hooks = hooks

    def on_start(self) -> None:
        self.tracer.thread.append(threading.current_thread())
        assert self.gate.wait(BOUND_S)
        if self.how == "on_start":
            self.tracer.arm()
            raise RuntimeError("on_start failed")

    def on_receive(self, message: Any) -> Any:
        if message == "crash":
            self.tracer.arm()
            raise RuntimeError("tell failed")
        if message == "cox_fail":
            self.tracer.arm()
            self._cox_fail(RuntimeError("noticed it is broken"))
        return "pong"

    def on_failure(self, *exc_info: Any) -> None:
        self.hooks.append("on_failure")
        if self.how == "on_failure":
            raise RuntimeError("on_failure failed too")

    def on_stop(self) -> None:
        self.hooks.append("on_stop")
        if self.how == "stop":
            self.tracer.arm()
        if self.how == "on_stop":
            self.tracer.arm()
            raise RuntimeError("on_stop failed")


@dataclass
class Outcome:
    exits: list[Exit]
    hooks: list[str]
    points: int
    fired: bool
    answer: Any
    where: str


def _run_once(how: str, at: int, also_async: bool) -> Outcome:
    name = f"Victim{how.title().replace('_', '')}"
    cls = type(name, (Victim,), {})
    tracer = Tracer(name, at, also_async)
    reports: queue.SimpleQueue[Exit] = queue.SimpleQueue()
    gate = threading.Event()
    hooks: list[str] = []
    threading.settrace(tracer.global_)
    try:
        with spawn_linked(reports.put, parent="test"):  # a C callable: nothing inside to interrupt
            ref = cls.start(tracer, how, gate, hooks)
    finally:
        threading.settrace(None)  # type: ignore[arg-type]
    if how in ("crash", "cox_fail", "on_failure"):
        ref.tell("cox_fail" if how == "cox_fail" else "crash")
    stopped = ref.stop(block=False) if how in ("stop", "on_stop") else None
    asked = ref.ask("ping", block=False)  # queued behind the failure or the stop
    gate.set()
    first = reports.get(timeout=BOUND_S)  # a hang fails here, not in a teardown
    (thread,) = tracer.thread
    thread.join(BOUND_S)
    assert not thread.is_alive(), f"{how} at {at}: the actor's thread did not end"
    assert not ref.is_alive(), f"{how} at {at}: the ref still claims to be alive"
    assert ref not in pykka.ActorRegistry.get_all(), f"{how} at {at}: still registered"
    if stopped is not None:
        stopped.get(timeout=BOUND_S)  # answered, never left hanging
    try:  # answered, never left hanging: served, or refused because the actor is gone
        answer = asked.get(timeout=BOUND_S)
    except (pykka.ActorDeadError, ActorCrash) as exc:
        answer = type(exc).__name__
    exits = [first]
    while not reports.empty():
        exits.append(reports.get_nowait())
    return Outcome(exits, hooks, tracer.points, tracer.fired, answer, tracer.where)


def _every_point(how: str, also_async: bool) -> Iterator[Outcome]:
    at = 1
    while True:
        outcome = _run_once(how, at, also_async)
        yield outcome
        if not outcome.fired:  # the handling had fewer points than ``at``: all were covered
            return
        at += 1
        assert at < 5000, "failure handling never ends"


HOWS = ["crash", "on_start", "on_failure", "on_stop", "cox_fail", "stop"]


@pytest.mark.parametrize("also_async", [False, True], ids=["one", "two"])
@pytest.mark.parametrize("how", HOWS)
def test_an_exception_at_every_point_of_failure_handling_still_ends_the_actor_once(
    how: str, also_async: bool, request: pytest.FixtureRequest
) -> None:
    if os.environ.get(CHILD):
        _check(how, also_async)
        return
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
            "-p", "no:randomly", request.node.nodeid]
    env = {**os.environ, CHILD: "1"}
    for attempt in range(1, ATTEMPTS + 1):
        child = subprocess.run(argv, cwd=request.config.rootpath, env=env, capture_output=True,
                               text=True, timeout=540)
        if child.returncode >= 0:
            break
        print(f"attempt {attempt}: the child interpreter died of signal {-child.returncode}:\n"
              f"{child.stderr[-4000:]}")
    assert child.returncode == 0, f"{child.stdout[-6000:]}\n{child.stderr[-3000:]}"


def _check(how: str, also_async: bool) -> None:
    bystander = Bystander.start()
    outcomes = list(_every_point(how, also_async))
    assert bystander.ask("ping", timeout=BOUND_S) == "pong", "another actor was stopped"
    assert len(outcomes) > 10, f"only {len(outcomes)} points: the tracer did not see the handling"
    for n, outcome in enumerate(outcomes, 1):
        assert len(outcome.exits) == 1, f"{how}, injected at point {n}: {len(outcome.exits)} exits reported"
        (exit_,) = outcome.exits
        if how != "stop":  # (a stop hit after its exit was built stays a normal exit)
            assert exit_.kind is ExitKind.FAILURE, f"{how} at {n}: {exit_}"
        assert outcome.hooks.count("on_failure") <= 1, f"{how} at {n}: on_failure ran twice"
        assert outcome.hooks.count("on_stop") <= 1, f"{how} at {n}: on_stop ran twice"
    clean = outcomes[-1]  # nothing injected: the ordinary handling
    expected = {"crash": ["on_failure"], "on_failure": ["on_failure"], "on_start": [],
                "on_stop": ["on_stop"], "cox_fail": ["on_stop"], "stop": ["on_stop"]}[how]
    assert clean.hooks == expected
    assert clean.exits[0].kind is (ExitKind.NORMAL if how == "stop" else ExitKind.FAILURE)
    if how == "crash":  # the injections did land inside the handling: one cut on_failure short
        assert any(o.hooks == [] for o in outcomes)
    assert sys.gettrace() is None


class Bystander(pykka.ThreadingActor):
    def on_receive(self, message: Any) -> Any:
        return "pong"
