"""The name registry: stable paths (``root/mcp/github``) to whichever actor serves them now.

A supervised child is replaced by a new actor on every restart, so a cached ``ActorRef`` goes
stale. Callers keep a path (or a ``SupervisorHandle`` and a child name) and resolve it when they
need it. Supervisors publish each child here when it changes (one entry, not the whole table, so
starting or stopping a child costs the same under 4,000 siblings as under one); lookups read a
plain dict without taking a lock (a dict read is atomic in CPython), so resolving a name costs
well under a microsecond and never waits for a supervisor that is busy restarting something.

A supervisor that restarts is a new actor with a fresh child table; it re-claims the same path, so
handles and paths stay valid across its restarts too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import field
from typing import Any

import pykka

from cox.slim import dataclass

from .spec import Restart

__all__ = ["ChildInfo", "NameTaken", "Registry", "SupervisorInfo", "registry", "whereis"]


class NameTaken(Exception):
    """A live supervisor already serves this path."""


@dataclass(frozen=True, slots=True)
class ChildInfo:
    """One child as its supervisor last published it."""

    name: str
    ref: pykka.ActorRef[Any] | None
    restart: Restart
    state: str
    """``running``, ``restarting`` (waiting for its backoff or its turn) or ``stopped``."""
    restarts: int
    last_exit: str | None
    """How its previous incarnation ended: ``normal``, ``failure``, ``killed`` or ``shutdown``."""
    shutdown_timeout: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "alive": self.ref is not None and self.ref.is_alive(),
            "restarts": self.restarts,
            "state": self.state,
            "restart": str(self.restart),
            "last_exit": self.last_exit,
        }


@dataclass(frozen=True, slots=True)
class SupervisorInfo:
    """A supervisor incarnation, as registered under its path."""

    path: str
    ref: pykka.ActorRef[Any]
    thread_ident: int
    nudge: Callable[[str], None]
    """Asks the supervisor to check the named child now (a lookup found its ref dead)."""
    children: dict[str, ChildInfo] = field(default_factory=dict, compare=False)
    """Its children in start order. The registry's own: changed only under the registry's lock,
    read through ``Registry.children`` (a copy), never iterated in place."""


class Registry:
    """Paths to refs, and paths to supervisors. Thread-safe; reads are lock-free."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._refs: dict[str, pykka.ActorRef[Any]] = {}
        self._sups: dict[str, SupervisorInfo] = {}
        self._nudged: dict[str, str] = {}  # path -> urn already reported dead by a lookup

    def claim(self, info: SupervisorInfo, *, force: bool = False) -> None:
        """Register a supervisor incarnation at its path; NameTaken if a live one holds it.

        ``force`` (for a supervisor started by a parent) takes the path over anyway: the parent is
        the authority, and the old incarnation may be one that ignored its shutdown timeout.
        """
        with self._cond:
            current = self._sups.get(info.path)
            if (
                not force
                and current is not None
                and current.ref.is_alive()
                and current.ref.actor_urn != info.ref.actor_urn
            ):
                raise NameTaken(f"a supervisor is already running at {info.path!r}")
            self._drop_children(current)
            self._sups[info.path] = info
            self._cond.notify_all()

    def release(self, path: str, sup_ref: pykka.ActorRef[Any]) -> None:
        """Forget a supervisor incarnation and its children (it stopped or failed)."""
        with self._cond:
            current = self._sups.get(path)
            if current is None or current.ref.actor_urn != sup_ref.actor_urn:
                return
            self._drop_children(current)
            del self._sups[path]
            self._cond.notify_all()

    def put(self, path: str, sup_ref: pykka.ActorRef[Any], child: ChildInfo, *, last: bool = False) -> None:
        """Publish one child's new state. ``last`` moves it to the end of the start order (a new
        child replacing a stopped one of that name). Ignored from a stale incarnation. O(1)."""
        with self._cond:
            current = self._current(path, sup_ref)
            if current is None:
                return
            full = f"{path}/{child.name}"
            if child.ref is None:
                self._forget(full)
            else:
                self._refs[full] = child.ref
                if self._nudged.get(full) != child.ref.actor_urn:
                    self._nudged.pop(full, None)
            if last:
                current.children.pop(child.name, None)
            current.children[child.name] = child
            self._cond.notify_all()

    def drop(self, path: str, sup_ref: pykka.ActorRef[Any], name: str) -> None:
        """Forget one child (stopped and removed). Ignored from a stale incarnation. O(1)."""
        with self._cond:
            current = self._current(path, sup_ref)
            if current is None:
                return
            self._forget(f"{path}/{name}")
            current.children.pop(name, None)
            self._cond.notify_all()

    def children(self, path: str) -> tuple[ChildInfo, ...]:
        """The children of the supervisor at ``path``, in start order (a snapshot)."""
        with self._cond:
            info = self._sups.get(path)
            return () if info is None else tuple(info.children.values())

    def child(self, path: str, name: str) -> ChildInfo | None:
        """One child of the supervisor at ``path`` as last published, if it has one by that name."""
        info = self._sups.get(path)
        return None if info is None else info.children.get(name)

    def _current(self, path: str, sup_ref: pykka.ActorRef[Any]) -> SupervisorInfo | None:
        current = self._sups.get(path)
        if current is None or current.ref.actor_urn != sup_ref.actor_urn:
            return None
        return current

    def supervisor(self, path: str) -> SupervisorInfo | None:
        """The supervisor incarnation registered at ``path``, if any."""
        return self._sups.get(path)

    def supervisors(self) -> list[SupervisorInfo]:
        """Every registered supervisor, oldest first."""
        with self._cond:
            return list(self._sups.values())

    def whereis(self, path: str, timeout: float = 0.0) -> pykka.ActorRef[Any] | None:
        """The live actor serving ``path`` now, or None. With ``timeout`` > 0, wait up to that
        long for one (say, while its supervisor restarts it)."""
        ref = self._refs.get(path)
        if ref is not None:
            if ref.is_alive():
                return ref
            self._nudge(path, ref)
        if timeout <= 0:
            return None
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                ref = self._refs.get(path)
                if ref is not None and ref.is_alive():
                    return ref
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                # Wake now and then: a dead ref nobody republishes must not make us sleep it out.
                self._cond.wait(min(remaining, 0.05))

    def _nudge(self, path: str, ref: pykka.ActorRef[Any]) -> None:
        """A lookup found a dead ref: ask its supervisor to check, once per dead actor."""
        with self._cond:
            if self._nudged.get(path) == ref.actor_urn:
                return
            self._nudged[path] = ref.actor_urn
            parent, _, name = path.rpartition("/")
            sup = self._sups.get(parent)
        if sup is not None:
            sup.nudge(name)

    def _drop_children(self, info: SupervisorInfo | None) -> None:
        if info is not None:
            for name in info.children:
                self._forget(f"{info.path}/{name}")

    def _forget(self, full: str) -> None:
        self._refs.pop(full, None)
        self._nudged.pop(full, None)


registry = Registry()
"""The process's registry."""


def whereis(path: str, timeout: float = 0.0) -> pykka.ActorRef[Any] | None:
    """Resolve a path such as ``"root/store"`` or ``"root/mcp/github"`` to its live actor."""
    return registry.whereis(path, timeout)
