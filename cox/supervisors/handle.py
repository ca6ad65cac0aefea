"""The public face of a supervisor: ``start_supervisor``, ``supervisor_spec``, ``SupervisorHandle``.

A handle holds a *path*, not a ref: each call resolves the supervisor incarnation serving that
path now, so a handle stays valid when a parent restarts the supervisor. Every ask carries a
timeout (an ask racing a stop may never be answered), and a handle refuses to ask from the
supervisor's own thread (that would deadlock: a ``ChildSpec.start`` runs there).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pykka

from .actor import Exit, spawn_linked
from .registry import NameTaken, registry
from .spec import ChildSpec, Restart, Strategy
from .supervisor import Ping, StartChild, Supervisor, SupervisorError, TerminateChild

__all__ = [
    "SupervisorHandle",
    "SupervisorNotRunning",
    "SupervisorStartError",
    "shutdown",
    "start_supervisor",
    "supervisor_spec",
]

log = logging.getLogger(__name__)

EscalateCallback = Callable[[Exit], object]


class SupervisorNotRunning(pykka.ActorDeadError):
    """No supervisor serves this path right now (stopped, or being restarted by its parent)."""


class SupervisorStartError(SupervisorError):
    """A supervisor did not come up: its ``on_start`` (starting its initial children) failed."""


class SupervisorHandle:
    """A stable way to reach the supervisor serving ``path`` (``"root"``, ``"root/mcp"``)."""

    def __init__(self, path: str, ask_timeout: float = 5.0) -> None:
        self._path = path
        self._ask_timeout = ask_timeout

    def __repr__(self) -> str:
        return f"<SupervisorHandle {self._path} {'alive' if self.is_alive() else 'down'}>"

    @property
    def path(self) -> str:
        return self._path

    @property
    def name(self) -> str:
        return self._path.rpartition("/")[2]

    @property
    def ref(self) -> pykka.ActorRef[Any] | None:
        """The current incarnation's ref; don't keep it, it changes when the supervisor restarts."""
        info = registry.supervisor(self._path)
        return info.ref if info is not None and info.ref.is_alive() else None

    def is_alive(self) -> bool:
        return self.ref is not None

    def whereis(self, name: str, timeout: float = 0.0) -> pykka.ActorRef[Any] | None:
        """The live actor of child ``name`` now, or None. With ``timeout`` > 0, wait up to that
        long for one (a child being restarted). Costs a dict read; never asks the supervisor."""
        return registry.whereis(f"{self._path}/{name}", timeout)

    def ask(self, name: str, message: Any, timeout: float | None = None) -> Any:
        """Ask child ``name``, following it across a restart: resolve, ask, and if the actor died
        before handling the message (``ActorDeadError``: it was never processed, so retrying is
        safe) resolve again and retry, all within ``timeout``. Raises ``pykka.Timeout``."""
        budget = self._ask_timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        while True:
            remaining = deadline - time.monotonic()
            ref = self.whereis(name, timeout=remaining) if remaining > 0 else None
            if ref is None:
                raise pykka.Timeout(f"{self._path}/{name} not available within {budget:g}s")
            try:
                return ref.ask(message, timeout=max(deadline - time.monotonic(), 0.0))
            except pykka.ActorDeadError:
                continue

    def tell(self, name: str, message: Any) -> None:
        """Tell child ``name``; ``pykka.ActorDeadError`` if it is not running right now."""
        ref = self.whereis(name)
        if ref is None:
            raise pykka.ActorDeadError(f"{self._path}/{name} is not running")
        ref.tell(message)

    def which_children(self) -> list[dict[str, Any]]:
        """One dict per child, in start order: name, alive, restarts, state, restart, last_exit."""
        return [child.as_dict() for child in registry.children(self._path)]

    def child_supervisor(self, name: str) -> SupervisorHandle:
        """A handle for a child that is itself a supervisor (started from a ``supervisor_spec``)."""
        return SupervisorHandle(f"{self._path}/{name}", self._ask_timeout)

    def start_child(self, spec: ChildSpec, timeout: float | None = None) -> pykka.ActorRef[Any]:
        """Start ``spec`` under this supervisor and return its first ref (prefer ``whereis`` later).

        Raises what ``spec.start`` raised, ``AlreadyStarted`` if the name is taken, or
        ``pykka.Timeout``.
        """
        ref: pykka.ActorRef[Any] = self._ask(StartChild(spec), timeout)
        return ref

    def terminate_child(self, name: str, timeout: float | None = None) -> bool:
        """Stop child ``name`` (within its shutdown timeout) and forget it; False if unknown."""
        if timeout is None:
            timeout = self._ask_timeout + self._shutdown_timeout_of(name)
        return bool(self._ask(TerminateChild(name), timeout))

    def stop(self, timeout: float = 15.0) -> bool:
        """Stop the supervisor and its children (last started first). A nested supervisor is
        terminated through its parent, which would otherwise restart it. True if it stopped in
        time."""
        parent_path, _, name = self._path.rpartition("/")
        if parent_path:
            parent = SupervisorHandle(parent_path, self._ask_timeout)
            if parent.is_alive():
                try:
                    return parent.terminate_child(name, timeout)
                except pykka.ActorDeadError:
                    pass
        info = registry.supervisor(self._path)
        if info is None or not info.ref.is_alive():
            return False
        self._refuse_own_thread(info.thread_ident)
        try:
            return bool(info.ref.stop(block=True, timeout=timeout))
        except pykka.Timeout:
            log.warning("supervisor %s did not stop within %.3gs", self._path, timeout)
            return False

    def _shutdown_timeout_of(self, name: str) -> float:
        child = registry.child(self._path, name)
        return 0.0 if child is None else child.shutdown_timeout

    def _ask(self, message: Any, timeout: float | None) -> Any:
        info = registry.supervisor(self._path)
        if info is None or not info.ref.is_alive():
            raise SupervisorNotRunning(f"no supervisor is running at {self._path!r}")
        self._refuse_own_thread(info.thread_ident)
        return info.ref.ask(message, timeout=self._ask_timeout if timeout is None else timeout)

    def _refuse_own_thread(self, ident: int) -> None:
        if ident == threading.get_ident():
            raise RuntimeError(
                f"asking supervisor {self._path} from its own thread would deadlock "
                "(a ChildSpec.start must not call its supervisor)"
            )


def _validate(name: str, max_restarts: int, period_s: float, watchdog_s: float) -> None:
    if not name or "/" in name:
        raise ValueError(f"supervisor name must be non-empty and contain no '/': {name!r}")
    if max_restarts < 0 or period_s <= 0 or watchdog_s <= 0:
        raise ValueError("max_restarts must be >= 0, period_s and watchdog_s > 0")


def _await_ready(ref: pykka.ActorRef[Any], timeout: float) -> None:
    """Wait until the supervisor's ``on_start`` started its initial children."""
    try:
        ref.ask(Ping(), timeout=timeout)
    except pykka.Timeout as err:
        ref.stop(block=False)
        raise SupervisorStartError(f"{ref} did not start within {timeout:g}s") from err
    except pykka.ActorDeadError as err:
        raise SupervisorStartError(f"{ref} failed to start") from err


def supervisor_spec(
    name: str,
    strategy: Strategy | str = Strategy.ONE_FOR_ONE,
    max_restarts: int = 3,
    period_s: float = 5.0,
    children: Sequence[ChildSpec] = (),
    *,
    restart: Restart = Restart.PERMANENT,
    shutdown_timeout: float = 15.0,
    watchdog_s: float = 0.5,
    start_timeout: float = 5.0,
) -> ChildSpec:
    """A child spec for a nested supervisor (``mcp``, ``lsp``, ``sessions`` under ``root``).

    Its start waits for the nested supervisor's initial children, so a parent's ``start_child``
    returns with the subtree up, as in OTP. Give it a ``shutdown_timeout`` that covers its own
    children's.
    """
    _validate(name, max_restarts, period_s, watchdog_s)
    strategy = Strategy(strategy)
    initial = tuple(children)

    def start() -> pykka.ActorRef[Any]:
        ref = Supervisor.start(name, strategy, max_restarts, period_s, initial, watchdog_s)
        _await_ready(ref, start_timeout)
        return ref

    return ChildSpec(name=name, start=start, restart=restart, shutdown_timeout=shutdown_timeout)


class _RootExit:
    """The exit listener of a root supervisor: an abnormal exit after start-up escalates to the
    ``on_escalate`` callback (there is no parent to restart it)."""

    def __init__(self, path: str, on_escalate: EscalateCallback | None) -> None:
        self.path = path
        self.on_escalate = on_escalate
        self.exit: Exit | None = None
        self.exited = threading.Event()
        self._lock = threading.Lock()
        self._armed = False

    def __call__(self, exit_: Exit) -> None:
        with self._lock:
            self.exit = exit_
            armed = self._armed
        self.exited.set()
        if armed:
            self._escalate(exit_)

    def arm(self) -> None:
        with self._lock:
            self._armed = True
            exit_ = self.exit
        if exit_ is not None:
            self._escalate(exit_)

    def _escalate(self, exit_: Exit) -> None:
        if not exit_.abnormal:
            return
        if self.on_escalate is None:
            log.critical("root supervisor %s failed: %r", self.path, exit_.error)
            return
        try:
            self.on_escalate(exit_)
        except Exception:
            log.exception("on_escalate of root supervisor %s failed", self.path)


def start_supervisor(
    name: str,
    strategy: Strategy | str = Strategy.ONE_FOR_ONE,
    max_restarts: int = 3,
    period_s: float = 5.0,
    children: Sequence[ChildSpec] = (),
    parent: SupervisorHandle | None = None,
    *,
    on_escalate: EscalateCallback | None = None,
    watchdog_s: float = 0.5,
    ask_timeout: float = 5.0,
) -> SupervisorHandle:
    """Start a supervisor with its initial ``children`` (started in order) and return its handle.

    With ``parent``, it is started as a permanent child of that supervisor and fails up to it;
    without, it is a root, and when it fails (restart intensity exceeded) ``on_escalate`` gets
    its exit, from the supervisor's thread (default: log it at CRITICAL). ``watchdog_s`` is how
    often the watchdog looks for children that died without reporting.
    """
    _validate(name, max_restarts, period_s, watchdog_s)
    strategy = Strategy(strategy)
    if parent is not None:
        if on_escalate is not None:
            raise ValueError("a supervisor with a parent escalates to it; on_escalate is for roots")
        spec = supervisor_spec(
            name,
            strategy,
            max_restarts,
            period_s,
            children,
            watchdog_s=watchdog_s,
            start_timeout=ask_timeout,
        )
        parent.start_child(spec, timeout=2 * ask_timeout)
        return parent.child_supervisor(name)

    existing = registry.supervisor(name)
    if existing is not None and existing.ref.is_alive():
        raise NameTaken(f"a supervisor is already running at {name!r}")
    root_exit = _RootExit(name, on_escalate)
    with spawn_linked(root_exit, None):
        ref = Supervisor.start(name, strategy, max_restarts, period_s, tuple(children), watchdog_s)
    try:
        _await_ready(ref, ask_timeout)
    except SupervisorStartError as err:
        root_exit.exited.wait(1.0)
        cause = root_exit.exit.error if root_exit.exit is not None else None
        if isinstance(cause, NameTaken):
            raise cause from None
        raise SupervisorStartError(f"supervisor {name!r} failed to start: {cause!r}") from (cause or err)
    root_exit.arm()
    return SupervisorHandle(name, ask_timeout)


def shutdown(timeout: float = 15.0) -> None:
    """Stop every root supervisor top-down (each stops its children, last started first), then
    any other actor. Use it in ``main()``'s ``finally``: pykka's ``stop_all`` alone stops actors
    last-started-first, so supervisors would see their children exit and restart them."""
    for info in reversed(registry.supervisors()):
        if "/" not in info.path:
            SupervisorHandle(info.path).stop(timeout)
    pykka.ActorRegistry.stop_all(timeout=timeout)
