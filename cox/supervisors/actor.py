"""``CoxActor``: the base class of every cox actor.

pykka has no supervision, and three of its failure modes would break one if left alone
(RUNTIME.md): a ``BaseException`` escaping a handler stops *every* actor in the process; one
escaping ``on_start`` leaves a ref that claims to be alive while asks to it hang; and an
``Exception`` in ``on_start`` stops the actor with neither ``on_stop`` nor ``on_failure`` called,
so no hook would ever tell anybody. ``CoxActor`` closes those holes and adds the one thing a
supervisor needs: every actor reports its exit (normal or failure) exactly once, from the very end
of its thread, to the listener it was linked to when it was constructed.

How it does that: it deliberately overrides three pykka internals, each calling the original:

- ``_handle_receive``: an escaping ``BaseException`` becomes :class:`ActorCrash` (an ordinary
  ``Exception``), so pykka treats it like any other failure (the asker gets it, a ``tell`` stops
  this actor only);
- ``_handle_failure``: remembers the first failure, which becomes the exit's reason;
- ``_actor_loop`` (the thread's target): catches what still escapes (a ``BaseException`` from
  ``on_start`` or ``on_failure``), stops the actor properly, answers pending asks with
  ``ActorDeadError`` and finally reports the exit.

``tests/supervisors/test_actor.py`` pins these names against the installed pykka, so an upgrade
that renames them fails loudly instead of silently disabling supervision.

Linking: a supervisor wraps ``spec.start()`` in :func:`spawn_linked`; the first ``CoxActor``
constructed in that thread during the block takes the link (listener and parent path) and records
its urn in it, so the supervisor knows the returned ref will report. Linking at construction, not
after ``start()`` returns, is what makes an exit from ``on_start`` impossible to miss.
"""

from __future__ import annotations

import enum
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import pykka

__all__ = [
    "ActorCrash",
    "CoxActor",
    "Exit",
    "ExitKind",
    "ExitListener",
    "SpawnLink",
    "spawn_linked",
]

log = logging.getLogger(__name__)


class ExitKind(enum.StrEnum):
    """Why an actor's life ended, as its supervisor sees it."""

    NORMAL = "normal"
    """It was stopped (``stop()``), nothing went wrong."""
    FAILURE = "failure"
    """An exception ended it: in a ``tell`` handler, ``on_start``, ``on_stop`` or ``on_failure``."""
    KILLED = "killed"
    """It vanished without a report (found dead by the watchdog) — never sent by the actor."""


@dataclass(frozen=True, slots=True)
class Exit:
    """One actor's exit. ``urn`` names the incarnation, so a late or duplicate report about an
    actor that was already replaced can be recognised and ignored."""

    urn: str
    actor: str
    kind: ExitKind
    error: BaseException | None = None

    @property
    def abnormal(self) -> bool:
        """True unless the actor stopped normally (what ``transient`` children restart on)."""
        return self.kind is not ExitKind.NORMAL


ExitListener = Callable[[Exit], None]
"""Called once, from the exiting actor's own thread, as the last thing the thread does.
It must be quick and must not block (a supervisor's listener is a single ``tell``)."""


class ActorCrash(Exception):
    """A ``BaseException`` (``asyncio.CancelledError``, ``SystemExit``, ``GeneratorExit``,
    ``KeyboardInterrupt``) escaped an actor handler. It is re-raised as this ordinary exception so
    pykka fails this actor alone instead of stopping every actor in the process."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(f"{type(original).__name__} escaped an actor handler: {original!r}")
        self.original = original


@dataclass(slots=True)
class SpawnLink:
    """What a supervisor hands to the next actor constructed in its thread."""

    listener: ExitListener | None
    parent: str | None
    urn: str | None = None
    """Set by the actor that took the link; compare with the returned ref's ``actor_urn``."""


class _SpawnState(threading.local):
    pending: SpawnLink | None = None


_spawn = _SpawnState()


@contextmanager
def spawn_linked(listener: ExitListener | None, parent: str | None = None) -> Iterator[SpawnLink]:
    """Link the first ``CoxActor`` constructed in this thread inside the block to ``listener``.

    ``parent`` is the path of the supervisor starting it (how a nested supervisor learns its own
    path). The yielded link's ``urn`` tells which actor took it.
    """
    link = SpawnLink(listener, parent)
    previous = _spawn.pending
    _spawn.pending = link
    try:
        yield link
    finally:
        _spawn.pending = previous


def _deliver(listener: ExitListener, exit_: Exit) -> None:
    try:
        listener(exit_)
    except Exception:
        log.exception("exit listener failed for %s", exit_.actor)


# pykka's own names: a subclass attribute with one of these silently replaces pykka's (RUNTIME.md).
_MEANT_TO_OVERRIDE = frozenset(
    {"on_start", "on_stop", "on_failure", "on_receive", "use_daemon_thread", "_abc_impl"}
)
_PYKKA_METHODS = (
    frozenset(n for n in dir(pykka.ThreadingActor) if not n.startswith("__")) - _MEANT_TO_OVERRIDE
)
_PYKKA_NAMES = _PYKKA_METHODS | frozenset(pykka.Actor.__annotations__)


class CoxActor(pykka.ThreadingActor):
    """Base class of every cox actor: failures stay local and every exit is reported once.

    Subclasses use the ordinary pykka hooks (``on_start``, ``on_receive``, ``on_stop``,
    ``on_failure``) and must name their own attributes so they cannot collide with pykka's; a
    class attribute that does raises ``TypeError`` at class creation, an instance attribute fails
    the actor when it starts. ``_cox_`` names belong to this class; give a subclass's private
    attributes a prefix of their own (``Supervisor`` uses ``_sup_``).

    An exception while serving ``ask`` still goes to the caller and the actor keeps running
    (pykka's semantics, kept on purpose: a bad request is the caller's problem). While serving
    ``tell`` the actor fails: ``on_failure`` runs, ``on_stop`` does not, and the exit is reported
    as a failure.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        clash = set(vars(cls)) & _PYKKA_NAMES
        if clash:
            raise TypeError(
                f"{cls.__name__} defines {sorted(clash)}, which would replace pykka internals; rename them"
            )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cox_lock = threading.Lock()
        self._cox_failure: BaseException | None = None
        self._cox_exit: Exit | None = None
        link = _spawn.pending
        if link is not None and link.urn is None:
            link.urn = self.actor_urn
            self._cox_listener: ExitListener | None = link.listener
            self._cox_parent: str | None = link.parent
        else:
            self._cox_listener = None
            self._cox_parent = None

    @property
    def cox_supervisor_path(self) -> str | None:
        """Path of the supervisor that started this actor (``None`` when unsupervised); a child
        finds a sibling with ``whereis(f"{path}/{sibling}")`` instead of keeping its ref."""
        return self._cox_parent

    def _cox_fail(self, error: BaseException) -> None:
        """Stop this actor as *failed* with ``error``, cleanly: ``on_stop`` runs and the exit is
        reported as a failure. For an actor that notices it is broken (say, its MCP connection
        closed) and wants its supervisor to restart it. The stop is queued behind messages already
        in the inbox."""
        if self._cox_failure is None:
            self._cox_failure = error
        self.stop()

    def _cox_check_names(self) -> None:
        clash = set(vars(self)) & _PYKKA_METHODS
        if clash:
            raise TypeError(
                f"{type(self).__name__} sets instance attributes {sorted(clash)} that replace pykka "
                "internals; rename them"
            )

    def _cox_report_exit(self) -> None:
        """Build this actor's exit and hand it to the listener, at most once."""
        with self._cox_lock:
            if self._cox_exit is not None:
                return
            failure = self._cox_failure
            kind = ExitKind.NORMAL if failure is None else ExitKind.FAILURE
            self._cox_exit = Exit(self.actor_urn, str(self), kind, failure)
            listener = self._cox_listener
        if listener is not None:
            _deliver(listener, self._cox_exit)

    # -- deliberate overrides of pykka internals (see the module docstring) -----------------------

    def _actor_loop(self) -> None:
        try:
            try:
                self._cox_check_names()
                self._actor_loop_setup()
                self._actor_loop_running()
            except BaseException:  # a BaseException from on_start / on_failure, or a name clash
                self._handle_failure(*sys.exc_info())
            self._actor_loop_teardown()
        finally:
            self._cox_report_exit()

    def _handle_receive(self, message: Any) -> Any:
        try:
            return super()._handle_receive(message)
        except Exception:
            raise
        except BaseException as exc:
            if self.actor_stopped.is_set():
                # on_stop let it out: the actor has stopped already; record it as the exit reason.
                log.error("%r escaped on_stop of %s", exc, self, exc_info=exc)
                if self._cox_failure is None:
                    self._cox_failure = ActorCrash(exc)
                return None
            raise ActorCrash(exc) from exc

    def _handle_failure(
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._cox_failure is None:
            self._cox_failure = exception_value
        super()._handle_failure(exception_type, exception_value, traceback)
