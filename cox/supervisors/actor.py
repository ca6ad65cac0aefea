"""``CoxActor``: the base class of every cox actor.

pykka has no supervision, and three of its failure modes would break one if left alone
(RUNTIME.md): a ``BaseException`` escaping a handler stops *every* actor in the process; one
escaping ``on_start`` leaves a ref that claims to be alive while asks to it hang; and an
``Exception`` in ``on_start`` stops the actor with neither ``on_stop`` nor ``on_failure`` called,
so no hook would ever tell anybody. ``CoxActor`` closes those holes and adds the one thing a
supervisor needs: every actor reports its exit (normal or failure) exactly once, from the very end
of its thread, to the listener it was linked to when it was constructed.

How it does that: it replaces pykka's thread target (``_actor_loop``) with its own, keeping
pykka's hooks and their order, and overrides two more pykka internals, each calling or standing
in for the original:

- ``_actor_loop``: lives (``on_start``, then messages until stopped), then finishes: unregister,
  log the failure, ``on_failure`` (once, for a failure while living), answer every asker left
  waiting (the message in hand included) with ``ActorDeadError``, report the exit. Whatever
  escapes is recorded as the failure, and finishing is idempotent and started again when an
  exception interrupts it, so a *second* exception during failure handling (an asynchronous one,
  as the chaos test injects, can land on any line) cannot leave a thread that died without
  stopping. pykka's own loop would also stop every actor in the process on such an exception;
- ``_handle_receive``: an escaping ``BaseException`` becomes :class:`ActorCrash` (an ordinary
  ``Exception``), so the asker gets it and a ``tell`` fails this actor only; it also notes that a
  stop began (``on_stop`` runs, so ``on_failure`` must not);
- ``_handle_failure``: pykka's ``_stop`` calls it when ``on_stop`` raises; it records the failure.

``tests/supervisors/test_cox_actor.py`` pins these names against the installed pykka, so an upgrade
that renames them fails loudly instead of silently disabling supervision.

Linking: a supervisor wraps ``spec.start()`` in :func:`spawn_linked`; the first ``CoxActor``
constructed in that thread during the block takes the link (listener and parent path) and records
its urn in it, so the supervisor knows the returned ref will report. Linking at construction, not
after ``start()`` returns, is what makes an exit from ``on_start`` impossible to miss.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import pykka
from pykka.messages import _ActorStop

from cox.slim import dataclass

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


_FINISH_TRIES = 100
"""How often finishing is started again before the thread gives up (only a step that fails every
time, a bug, gets there)."""


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
        self._cox_failure: BaseException | None = None
        self._cox_exit: Exit | None = None
        self._cox_envelope: Any = None
        """The message being handled, answered by finishing if the actor dies handling it."""
        self._cox_began = False
        self._cox_started = False
        """``on_start`` returned: a failure from now on gets ``on_failure``."""
        self._cox_stopping = False
        self._cox_hook: list[Callable[..., object]] = [self.on_failure]
        """``on_failure`` until it is taken to be called (a list: taking it is one operation)."""
        self._cox_logged = False
        link = _spawn.pending
        if link is not None and link.urn is None:
            link.urn = self.actor_urn
            self._cox_report_to: list[ExitListener] = [link.listener] if link.listener else []
            self._cox_parent: str | None = link.parent
        else:
            self._cox_report_to = []
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

    # -- the actor's thread (replaces pykka's loop; see the module docstring) -----------------------

    def _actor_loop(self) -> None:
        """The thread's target: live (``on_start``, then messages until stopped), then finish.

        Whatever escapes living is recorded as the failure, and finishing is a sequence of
        idempotent steps that starts again from the top when an exception interrupts it. The two
        nested loops mean an exception landing *between* two attempts is caught too; only one
        landing in that narrow gap right after another one did could still escape."""
        tries = 0
        while tries < _FINISH_TRIES:
            try:
                while tries < _FINISH_TRIES:
                    tries += 1
                    try:
                        if not self._cox_began:
                            self._cox_began = True
                            self._cox_live()
                        self._cox_finish()
                        return
                    except BaseException as exc:  # no calls in here: nothing that could be interrupted
                        if self._cox_failure is None:
                            self._cox_failure = exc
            except BaseException as exc:
                if self._cox_failure is None:
                    self._cox_failure = exc
        log.critical("%s could not finish after %d attempts; its exit is not reported", self, tries)

    def _cox_live(self) -> None:
        """pykka's setup and message loop, minus its two flaws: nothing here stops *other* actors,
        and a failed ``tell`` leaves by raising, so failure handling has one path (``_cox_finish``)."""
        self._cox_check_names()
        self.on_start()
        self._cox_started = True
        inbox = self.actor_inbox
        while not self.actor_stopped.is_set():
            envelope = inbox.get()  # left at the head (_Inbox) until it is held here
            self._cox_envelope = envelope
            _take(inbox)
            try:
                response = self._handle_receive(envelope.message)
            except Exception:
                if envelope.reply_to is None:
                    raise  # a failed tell fails this actor
                log.info("Exception returned from %s to caller:", self, exc_info=True)
                envelope.reply_to.set_exception()
            else:
                if envelope.reply_to is not None:
                    envelope.reply_to.set(response)
            self._cox_envelope = None

    def _cox_finish(self) -> None:
        """Stop, log, run ``on_failure``, answer every asker, report the exit. Each step is safe
        to repeat (or is guarded by a flag set before it starts), so an interrupted finish is
        simply run again; a hook that is interrupted is not run twice."""
        if not self.actor_stopped.is_set():
            pykka.ActorRegistry.unregister(self.actor_ref)
            self.actor_stopped.set()
        failure = self._cox_failure
        if failure is not None and not self._cox_logged:
            self._cox_logged = True
            log.error("Unhandled exception in %s:", self, exc_info=failure)
        if failure is not None and self._cox_started and not self._cox_stopping and self._cox_hook:
            # A failure while living (not while stopping) gets pykka's on_failure, once: the hook
            # is popped and called in one expression, so nothing can land between the two.
            hook_args = (type(failure), failure, failure.__traceback__)
            try:
                self._cox_hook.pop()(*hook_args)
            except Exception:
                log.exception("on_failure of %s failed", self)
        envelope = self._cox_envelope
        if envelope is not None:  # the message being handled when the actor failed
            _answer_dead(self, envelope)
            self._cox_envelope = None
        inbox = self.actor_inbox
        while not inbox.empty():
            _answer_dead(self, inbox.get())  # answered before it is taken out
            _take(inbox)
        self._cox_report_exit()

    def _cox_report_exit(self) -> None:
        """Build this actor's exit and hand it to the listener, exactly once: the listener is
        popped and called in one expression (nothing can land between the two), so a repeated
        finish never calls it again. An exception the listener raises is logged."""
        if self._cox_exit is None:
            failure = self._cox_failure
            kind = ExitKind.NORMAL if failure is None else ExitKind.FAILURE
            self._cox_exit = Exit(self.actor_urn, str(self), kind, failure)
        if self._cox_report_to:
            try:
                self._cox_report_to.pop()(self._cox_exit)
            except Exception:
                log.exception("exit listener failed for %s", self._cox_exit.actor)

    # -- deliberate overrides of pykka internals (see the module docstring) -----------------------

    @staticmethod
    def _create_actor_inbox() -> Any:
        return _Inbox()

    def _handle_receive(self, message: Any) -> Any:
        if isinstance(message, _ActorStop):
            self._cox_stopping = True  # on_stop runs, so on_failure must not
        try:
            return super()._handle_receive(message)
        except Exception:
            raise
        except BaseException as exc:
            if self.actor_stopped.is_set():
                # on_stop let it out: the actor has stopped already; record it as the exit reason.
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
        # pykka's _stop calls this when on_stop raises (it has unregistered and stopped already).
        if self._cox_failure is None:
            self._cox_failure = exception_value


class _Inbox(queue.Queue[Any]):
    """An inbox whose ``get`` leaves the message at the head; the actor's thread takes it out
    (``_take``) once it holds it. An exception landing between the two then cannot lose a
    message whose asker would wait forever: it is still queued, or already held."""

    def _get(self) -> Any:
        return self.queue[0]


def _take(inbox: Any) -> None:
    """Remove the head ``get`` returned (only the actor's own thread takes from its inbox)."""
    inbox.queue.popleft()


def _answer_dead(actor: CoxActor, envelope: Any) -> None:
    """Answer an asker the actor will never serve (a stop request is answered as done). A future
    that holds an answer already (a finish interrupted after answering) is left as it is. A told
    message with an ``abandoned`` method (one whose sender waits for a reply of its own, like the
    store's ``TurnEnd``) is told why instead, so its sender does not wait for its timeout."""
    if envelope.reply_to is None:
        abandoned = getattr(envelope.message, "abandoned", None)
        if callable(abandoned):
            try:
                abandoned(pykka.ActorDeadError(f"{actor.actor_ref} stopped before handling the message"))
            except Exception:  # noqa: BLE001 - the sender's reply failing must not stop the finish
                log.exception("abandoned message's reply failed")
        return
    try:
        if isinstance(envelope.message, _ActorStop):
            envelope.reply_to.set(None)
            return
        dead = pykka.ActorDeadError(f"{actor.actor_ref} stopped before handling the message")
        envelope.reply_to.set_exception(exc_info=(pykka.ActorDeadError, dead, None))
    except queue.Full:
        pass
