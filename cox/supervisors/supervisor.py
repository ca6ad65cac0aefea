"""The supervisor actor: OTP restart strategies, restart intensity and shutdown on pykka.

A ``Supervisor`` owns an ordered table of children (start order). Each child reports its exit
with a ``ChildExited`` tell (see ``actor.py``); a watchdog probe on the shared timer thread
catches a child that died without one. On an exit the supervisor applies the child's restart type
and its own strategy, counts the restart against its intensity (more than ``max_restarts`` in
``period_s`` → it stops its children and fails, which its parent sees as an abnormal exit) and
publishes the children that changed to the registry, where callers resolve names.

Starting or stopping one child is O(1) in the number of its siblings (a session supervisor may
hold thousands): the table is a dict in start order, exits find their child by urn, only the
changed entries are published, and the watchdog hands over the names of the dead children it saw
instead of making the supervisor scan them all. Only what a strategy itself implies is O(n): a
``one_for_all``/``rest_for_one`` restart, and the ordered shutdown.

Everything here runs in the supervisor's own thread; the only blocking calls are a child's
``spec.start()`` and stopping a child, which always has a timeout. Use it through
``SupervisorHandle`` (``handle.py``), never by asking it directly.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import pykka

from cox.slim import dataclass

from .actor import CoxActor, Exit, ExitKind, ExitListener, spawn_linked
from .registry import ChildInfo, SupervisorInfo, registry
from .spec import ChildSpec, Restart, Strategy
from .timer import scheduler

__all__ = [
    "AlreadyStarted",
    "RestartIntensityExceeded",
    "Supervisor",
    "SupervisorError",
]

log = logging.getLogger(__name__)

RUNNING = "running"
RESTARTING = "restarting"
STOPPED = "stopped"

REPORT_GRACE_S = 0.2
"""How long a dead child that normally reports its exit gets to do so before the watchdog
declares it killed (its report may be in flight: ``is_alive()`` turns False before the thread
reaches its last line)."""


class SupervisorError(Exception):
    """A supervisor refused a request."""


class AlreadyStarted(SupervisorError):
    """A child with this name is running (or restarting) under this supervisor."""


class RestartIntensityExceeded(SupervisorError):
    """More restarts than allowed in the period: the supervisor gives up and fails."""


# -- messages (told or asked by SupervisorHandle, children, the timer thread) ----------------------


@dataclass(frozen=True, slots=True)
class StartChild:
    spec: ChildSpec


@dataclass(frozen=True, slots=True)
class TerminateChild:
    name: str


@dataclass(frozen=True, slots=True)
class ChildExited:
    exit: Exit


@dataclass(frozen=True, slots=True)
class CheckChildren:
    """From the watchdog probe or a lookup that found a dead ref: the children to look at."""

    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RestartDue:
    key: int
    children: tuple[tuple[str, int], ...]
    """(name, generation) pairs: a child whose generation moved on was dealt with meanwhile."""


@dataclass(frozen=True, slots=True)
class Ping:
    """Answered once ``on_start`` has started every initial child."""


def _teller(ref: pykka.ActorRef[Any], message: Any) -> Callable[[], None]:
    def tell() -> None:
        try:
            ref.tell(message)
        except pykka.ActorDeadError:
            pass

    return tell


def _nudger(ref: pykka.ActorRef[Any]) -> Callable[[str], None]:
    def nudge(name: str) -> None:
        try:
            ref.tell(CheckChildren((name,)))
        except pykka.ActorDeadError:
            pass

    return nudge


def _exit_listener(ref: pykka.ActorRef[Any]) -> ExitListener:
    """A child's report: one tell, from the child's thread, to this supervisor incarnation."""

    def listener(exit_: Exit) -> None:
        try:
            ref.tell(ChildExited(exit_))
        except pykka.ActorDeadError:
            pass

    return listener


def _watchdog_probe(ref: pykka.ActorRef[Any], path: str) -> Callable[[], bool]:
    """Runs on the timer thread: reads a snapshot of the published table (no message) and wakes
    the supervisor only when some child's ref is dead, naming those children. Returns False to
    stop once the supervisor is gone."""

    def probe() -> bool:
        info = registry.supervisor(path)
        if not ref.is_alive() or info is None or info.ref.actor_urn != ref.actor_urn:
            return False
        dead = tuple(c.name for c in registry.children(path) if c.ref is not None and not c.ref.is_alive())
        if dead:
            try:
                ref.tell(CheckChildren(dead))
            except pykka.ActorDeadError:
                return False
        return True

    return probe


@dataclass(slots=True)
class _Child:
    spec: ChildSpec
    ref: pykka.ActorRef[Any] | None = None
    state: str = STOPPED
    restarts: int = 0
    reports: bool = False
    """Its actor took our link, so it will report its exit (else only the watchdog can tell)."""
    started_at: float = 0.0
    seen_dead_at: float | None = None
    failures: int = 0
    """Consecutive short lives, for the backoff delay."""
    gen: int = 0
    last_exit: str | None = None

    def info(self) -> ChildInfo:
        return ChildInfo(
            name=self.spec.name,
            ref=self.ref,
            restart=self.spec.restart,
            state=self.state,
            restarts=self.restarts,
            last_exit=self.last_exit,
            shutdown_timeout=self.spec.shutdown_timeout,
        )


def _wants_restart(restart: Restart, exit_: Exit) -> bool:
    if restart is Restart.PERMANENT:
        return True
    if restart is Restart.TRANSIENT:
        return exit_.abnormal
    return False


class Supervisor(CoxActor):
    """An OTP-style supervisor. Started by ``start_supervisor`` or a ``supervisor_spec``."""

    def __init__(
        self,
        name: str,
        strategy: Strategy,
        max_restarts: int,
        period_s: float,
        children: Sequence[ChildSpec],
        watchdog_s: float,
    ) -> None:
        super().__init__()
        parent = self.cox_supervisor_path
        self._sup_path = f"{parent}/{name}" if parent else name
        self._sup_has_parent = parent is not None
        self._sup_strategy = strategy
        self._sup_max_restarts = max_restarts
        self._sup_period_s = period_s
        self._sup_initial = tuple(children)
        self._sup_watchdog_s = watchdog_s
        self._sup_children: dict[str, _Child] = {}
        self._sup_by_urn: dict[str, _Child] = {}
        self._sup_restart_times: deque[float] = deque()
        self._sup_timers: dict[int, Callable[[], None]] = {}
        self._sup_timer_keys = itertools.count()
        self._sup_watchdog_cancel: Callable[[], None] | None = None
        self._sup_terminating = False
        self._sup_down = False
        self._sup_listener: ExitListener = _exit_listener(self.actor_ref)

    def __str__(self) -> str:
        return f"Supervisor {self._sup_path} ({self.actor_urn})"

    # -- pykka hooks --------------------------------------------------------------------------------

    def on_start(self) -> None:
        me = self.actor_ref
        try:
            registry.claim(
                SupervisorInfo(self._sup_path, me, threading.get_ident(), _nudger(me)),
                force=self._sup_has_parent,
            )
            self._sup_watchdog_cancel = scheduler.call_every(
                self._sup_watchdog_s, _watchdog_probe(me, self._sup_path)
            )
            for spec in self._sup_initial:
                self._sup_add(spec)
        except BaseException:
            self._sup_shutdown()
            raise

    def on_stop(self) -> None:
        self._sup_shutdown()

    def on_failure(self, *_exc_info: Any) -> None:
        # Children must not outlive a supervisor that crashed on a bug of its own.
        self._sup_shutdown()

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, ChildExited):
            return self._sup_on_exit(message.exit)
        if isinstance(message, CheckChildren):
            return self._sup_check(message.names)
        if isinstance(message, RestartDue):
            self._sup_timers.pop(message.key, None)
            if not self._sup_terminating:
                self._sup_restart(message.children)
            return None
        if isinstance(message, StartChild):
            return self._sup_add(message.spec)
        if isinstance(message, TerminateChild):
            return self._sup_terminate(message.name)
        if isinstance(message, Ping):
            return True
        return super().on_receive(message)

    # -- starting and stopping children -------------------------------------------------------------

    def _sup_add(self, spec: ChildSpec) -> pykka.ActorRef[Any]:
        if self._sup_terminating:
            raise SupervisorError(f"{self._sup_path} is shutting down")
        existing = self._sup_children.get(spec.name)
        if existing is not None and existing.state != STOPPED:
            raise AlreadyStarted(f"{self._sup_path}/{spec.name} is {existing.state}")
        child = _Child(spec)
        ref = self._sup_spawn(child)
        # A stopped child of that name (a transient one that ended normally) is replaced.
        self._sup_children.pop(spec.name, None)
        self._sup_children[spec.name] = child
        registry.put(self._sup_path, self.actor_ref, child.info(), last=True)
        return ref

    def _sup_spawn(self, child: _Child) -> pykka.ActorRef[Any]:
        with spawn_linked(self._sup_listener, self._sup_path) as link:
            ref = child.spec.start()
        if not isinstance(ref, pykka.ActorRef):
            raise TypeError(f"start of {child.spec.name!r} returned {ref!r}, not an ActorRef")
        child.ref = ref
        child.reports = link.urn == ref.actor_urn
        child.state = RUNNING
        child.started_at = time.monotonic()
        child.seen_dead_at = None
        self._sup_by_urn[ref.actor_urn] = child
        return ref

    def _sup_stop_child(self, child: _Child, why: str) -> None:
        """Stop one child within its shutdown timeout; one that overruns is noted and left."""
        ref, child.ref = child.ref, None
        child.state = STOPPED
        if ref is None:
            return
        self._sup_by_urn.pop(ref.actor_urn, None)
        child.last_exit = why
        try:
            ref.stop(block=True, timeout=child.spec.shutdown_timeout)
        except pykka.Timeout:
            child.last_exit = ExitKind.KILLED.value
            log.warning(
                "%s: child %s did not stop within %.3gs; left behind",
                self._sup_path,
                child.spec.name,
                child.spec.shutdown_timeout,
            )

    def _sup_terminate(self, name: str) -> bool:
        child = self._sup_children.pop(name, None)
        if child is None:
            return False
        self._sup_stop_child(child, "shutdown")
        registry.drop(self._sup_path, self.actor_ref, name)
        return True

    def _sup_shutdown(self) -> None:
        """Stop every child, last started first, and leave the registry. Idempotent."""
        self._sup_terminating = True
        if self._sup_down:
            return
        self._sup_down = True
        if self._sup_watchdog_cancel is not None:
            self._sup_watchdog_cancel()
        for cancel in self._sup_timers.values():
            cancel()
        self._sup_timers.clear()
        # Unpublish after each stop: a child stopping may still look up an older sibling (a session
        # flushing to the store), which stays resolvable until its own turn comes.
        for child in reversed(list(self._sup_children.values())):
            self._sup_stop_child(child, "shutdown")
            del self._sup_children[child.spec.name]
            registry.drop(self._sup_path, self.actor_ref, child.spec.name)
        self._sup_by_urn.clear()
        registry.release(self._sup_path, self.actor_ref)

    # -- exits and restarts ---------------------------------------------------------------------------

    def _sup_on_exit(self, exit_: Exit) -> None:
        if self._sup_terminating:
            return
        child = self._sup_by_urn.get(exit_.urn)
        if child is None:  # an incarnation we replaced or stopped already: its report is stale
            return
        self._sup_child_exited(child, exit_)

    def _sup_child_exited(self, child: _Child, exit_: Exit) -> None:
        name = child.spec.name
        self._sup_by_urn.pop(exit_.urn, None)
        child.ref = None
        child.last_exit = exit_.kind.value
        lived = time.monotonic() - child.started_at
        log.log(
            logging.WARNING if exit_.abnormal else logging.INFO,
            "%s: child %s exited (%s%s) after %.3gs",
            self._sup_path,
            name,
            exit_.kind.value,
            f": {exit_.error!r}" if exit_.error is not None else "",
            lived,
        )
        if not _wants_restart(child.spec.restart, exit_):
            if child.spec.restart is Restart.TEMPORARY:
                del self._sup_children[name]
                registry.drop(self._sup_path, self.actor_ref, name)
            else:
                child.state = STOPPED
                self._sup_publish(child)
            return
        backoff = child.spec.backoff_policy
        if backoff is None:
            if not self._sup_count_restart(name):
                return
        elif lived >= backoff.healthy_after_s:
            child.failures = 0
        group = self._sup_group(child)
        for sibling in reversed(group):
            if sibling is not child:
                self._sup_stop_child(sibling, "shutdown")
        for sibling in group:
            if sibling is not child and sibling.spec.restart is Restart.TEMPORARY:
                del self._sup_children[sibling.spec.name]
                registry.drop(self._sup_path, self.actor_ref, sibling.spec.name)
        group = [c for c in group if c is child or c.spec.restart is not Restart.TEMPORARY]
        delay = 0.0
        if backoff is not None:
            delay = backoff.delay(child.failures)
            child.failures += 1
        self._sup_schedule(group, delay)

    def _sup_group(self, child: _Child) -> list[_Child]:
        """The children a restart of ``child`` takes along, in start order."""
        if self._sup_strategy is Strategy.ONE_FOR_ONE:
            return [child]
        order = list(self._sup_children.values())
        if self._sup_strategy is Strategy.REST_FOR_ONE:
            order = order[order.index(child) :]
        return [c for c in order if c is child or c.state == RUNNING]

    def _sup_schedule(self, group: list[_Child], delay: float) -> None:
        for child in group:
            child.state = RESTARTING
            child.gen += 1
        due = tuple((c.spec.name, c.gen) for c in group)
        if delay <= 0:
            self._sup_restart(due)
            return
        self._sup_publish(*group)
        key = next(self._sup_timer_keys)
        self._sup_timers[key] = scheduler.call_later(delay, _teller(self.actor_ref, RestartDue(key, due)))

    def _sup_restart(self, due: tuple[tuple[str, int], ...]) -> None:
        pending = [
            child
            for name, gen in due
            if (child := self._sup_children.get(name)) is not None
            and child.gen == gen
            and child.state == RESTARTING
        ]
        for i, child in enumerate(pending):
            if not self._sup_restart_one(child, pending[i + 1 :]):
                break
        if not self._sup_terminating:
            self._sup_publish(*pending)

    def _sup_restart_one(self, child: _Child, rest: list[_Child]) -> bool:
        """Start ``child`` again; a start that raises is another failure. False when the rest of
        the group must wait (rescheduled after a backoff) or the supervisor gave up."""
        while True:
            try:
                self._sup_spawn(child)
            except Exception as err:
                log.error("%s: restarting %s failed: %r", self._sup_path, child.spec.name, err)
                child.last_exit = ExitKind.FAILURE.value
                backoff = child.spec.backoff_policy
                if backoff is not None:
                    delay = backoff.delay(child.failures)
                    child.failures += 1
                    self._sup_schedule([child, *rest], delay)
                    return False
                if not self._sup_count_restart(child.spec.name):
                    return False
                continue
            child.restarts += 1
            return True

    def _sup_count_restart(self, name: str) -> bool:
        """Record one restart; past the intensity, shut down and fail (False)."""
        now = time.monotonic()
        times = self._sup_restart_times
        times.append(now)
        while times and now - times[0] > self._sup_period_s:
            times.popleft()
        if len(times) <= self._sup_max_restarts:
            return True
        self._sup_escalate(
            RestartIntensityExceeded(
                f"{self._sup_path}: more than {self._sup_max_restarts} restarts in "
                f"{self._sup_period_s:g}s (last: {name})"
            )
        )
        return False

    def _sup_escalate(self, error: Exception) -> None:
        log.error("%s: %s; stopping its children and failing", self._sup_path, error)
        self._sup_shutdown()
        self._cox_fail(error)

    def _sup_check(self, names: tuple[str, ...]) -> None:
        """Watchdog: a child whose ref is dead and whose report did not come (in time) was
        killed. A child that reports gets REPORT_GRACE_S; one that cannot is judged at once.
        Looks only at the children named (the ones a probe or a lookup saw dead)."""
        if self._sup_terminating:
            return
        now = time.monotonic()
        for name in names:
            child = self._sup_children.get(name)
            if child is None:
                continue
            ref = child.ref
            if ref is None or ref.is_alive():
                child.seen_dead_at = None
                continue
            if child.reports:
                if child.seen_dead_at is None:
                    child.seen_dead_at = now
                    continue
                if now - child.seen_dead_at < REPORT_GRACE_S:
                    continue
            if self._sup_terminating or child.ref is not ref:
                continue
            log.warning("%s: child %s died without reporting", self._sup_path, child.spec.name)
            self._sup_child_exited(child, Exit(ref.actor_urn, str(ref), ExitKind.KILLED))

    def _sup_publish(self, *children: _Child) -> None:
        """Publish these children's current state (each still in the table; a removed one is
        ``registry.drop``ped where it is removed)."""
        for child in children:
            if self._sup_children.get(child.spec.name) is child:
                registry.put(self._sup_path, self.actor_ref, child.info())
