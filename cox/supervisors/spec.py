"""Child specifications: what a supervisor starts, and how it treats each child's exit.

Copied from Erlang/OTP (``supervisor`` child specs), minus what pykka cannot do (there is no
``brutal_kill``: a thread cannot be killed, so a child that ignores its shutdown timeout is noted
and left behind) and plus exponential backoff for children whose restarts are expensive or whose
failures are external (an MCP server whose binary is missing should not be re-spawned in a loop).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import pykka

from cox.slim import dataclass

__all__ = ["Backoff", "ChildSpec", "Restart", "Strategy"]


class Restart(enum.StrEnum):
    """When a child that exited is started again."""

    PERMANENT = "permanent"
    """Always (a normal stop included): the store, the MCP servers."""
    TRANSIENT = "transient"
    """Only after an abnormal exit (failure or killed): LSP servers started on demand."""
    TEMPORARY = "temporary"
    """Never; the child is forgotten when it exits: sessions, tool calls, model requests."""


class Strategy(enum.StrEnum):
    """Which children a restart takes along."""

    ONE_FOR_ONE = "one_for_one"
    """Only the child that exited."""
    ONE_FOR_ALL = "one_for_all"
    """Every child (they depend on each other)."""
    REST_FOR_ONE = "rest_for_one"
    """The child that exited and every child started after it (later ones depend on earlier)."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential delay before restarting a child: ``initial_s * factor**n`` capped at
    ``max_s``, where ``n`` counts the child's consecutive failed lives. A child that lived
    ``reset_after_s`` (default: ``max_s``) counts as healthy again.

    Restarts of a child with a backoff do not count towards its supervisor's restart intensity:
    the backoff is that child's rate limit, and an MCP server that keeps crashing must not take
    its siblings and its supervisor down with it.
    """

    initial_s: float = 0.1
    max_s: float = 30.0
    factor: float = 2.0
    reset_after_s: float | None = None

    def __post_init__(self) -> None:
        if self.initial_s <= 0 or self.max_s < self.initial_s or self.factor < 1:
            raise ValueError(f"bad backoff {self}")

    def delay(self, failures: int) -> float:
        """Seconds to wait before the restart that follows ``failures`` consecutive failures
        (``failures`` = 0 for the first restart)."""
        return float(min(self.max_s, self.initial_s * self.factor ** min(failures, 64)))

    @property
    def healthy_after_s(self) -> float:
        return self.max_s if self.reset_after_s is None else self.reset_after_s


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """How to start one child, and what to do when it exits.

    ``start`` runs in the supervisor's thread and must return quickly (an actor's ``start()``
    takes about a millisecond): do slow set-up (spawning a server process, connecting) in the
    child's ``on_start``, which runs in the child's own thread. ``name`` is the child's stable
    name under its supervisor; it may not contain ``/``, which separates registry paths.
    ``backoff`` may be a :class:`Backoff` or an ``(initial_s, max_s)`` pair.
    """

    name: str
    start: Callable[[], pykka.ActorRef[Any]]
    restart: Restart = Restart.PERMANENT
    shutdown_timeout: float = 5.0
    backoff: Backoff | tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"child name must be non-empty and contain no '/': {self.name!r}")
        if self.shutdown_timeout <= 0:
            raise ValueError("shutdown_timeout must be positive: a stop that can hang forever is a bug")
        object.__setattr__(self, "restart", Restart(self.restart))
        if isinstance(self.backoff, tuple):
            initial, maximum = self.backoff
            object.__setattr__(self, "backoff", Backoff(initial_s=initial, max_s=maximum))

    @property
    def backoff_policy(self) -> Backoff | None:
        """``backoff`` normalised (``__post_init__`` turns a pair into a :class:`Backoff`)."""
        return self.backoff if isinstance(self.backoff, Backoff) else None
