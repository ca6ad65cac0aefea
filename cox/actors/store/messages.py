"""The store actor's protocol: one typed message per request, matched with ``match``.

Tells (nobody waits: ``Append``, ``Title``, ``Usage``; ``Marker`` is an ask nobody waits for
until the turn ends) and asks (an answer or a
:class:`~cox.actors.store.actor.StorageError`: the rest). Frozen :mod:`cox.slim` dataclasses
(immutable, matched by position through ``__match_args__``), not NamedTuples: the classes are
built on the start-up path of ``cox run -p``, and ``typing.NamedTuple`` compiles every field's
annotation and a ``__new__`` per class at import (~0.2 ms each), slim nothing until a class is
first constructed. Nothing here is used as a tuple: read the fields by name or by ``match``.

The messages a session sends before its first model request (``Open``, ``Append``, ``Sync``, the
turn's ``Marker``) and the other tells are defined here; the archive's, the checkpoints' and the readers' live in
``later_messages`` and are read from this module by name all the same (``__getattr__``): a class
costs ~0.3 ms to build, and a run reaches them only with its first archived output, checkpointed
edit or read of the index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cox.slim import dataclass


@dataclass(frozen=True, slots=True)
class Open:
    """A session begins (or resumes): its index row, its presence record; ``reporter`` (the
    session actor) hears of a failed write once. Answers the other live sessions here."""

    meta: dict[str, Any]
    reporter: Any = None

    @property
    def session(self) -> str:
        return str(self.meta["id"])


@dataclass(frozen=True, slots=True)
class Append:
    """One rollout line (a tell)."""

    session: str
    line: str


@dataclass(frozen=True, slots=True)
class Sync:
    """fsync the rollout and update the index row; raises the first failure since the last
    sync. ``session`` "" syncs nothing (a barrier: everything sent before has been handled).
    ``durable`` False: only the failure check (and the row), no fsync."""

    session: str
    meta: dict[str, Any] | None = None
    durable: bool = True


@dataclass(frozen=True, slots=True)
class Close:
    """The session ends: its rollout closed (``durable``: fsynced first), its row marked closed
    (with ``meta``, for a session that did not update it at each turn's end)."""

    session: str
    durable: bool = True
    meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Title:
    """The session's title, if it has none yet (a tell)."""

    session: str
    text: str


@dataclass(frozen=True, slots=True)
class Usage:
    """One request's usage row (a tell)."""

    session: str
    record: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Marker:
    """A turn's /rewind marker, titled with the first words of ``text``. The session sends it
    without waiting (``ask(block=False)``: a tell with a reply for its warning), so the store's
    order writes it before that turn's closing ``Sync``. ``only_if_missing``: keep a title the
    turn already has (a rewind's own turn)."""

    session: str
    turn: int
    root: str
    text: str
    only_if_missing: bool = False



if TYPE_CHECKING:  # the type checker sees them here; at run time __getattr__ below gives them
    from .later_messages import ArchiveGet as ArchiveGet
    from .later_messages import ArchivePut as ArchivePut
    from .later_messages import ArchiveRow as ArchiveRow
    from .later_messages import Checkpoint as Checkpoint
    from .later_messages import CheckpointRow as CheckpointRow
    from .later_messages import GetSession as GetSession
    from .later_messages import ListSessions as ListSessions
    from .later_messages import PostImages as PostImages
    from .later_messages import SpentSince as SpentSince

    StoreMessage = (Open | Append | Sync | Close | Title | Usage | ArchivePut | ArchiveGet | Checkpoint | PostImages
                    | Marker | GetSession | SpentSince | ListSessions)

TOLD = (Append, Title, Usage)
"""Messages sent with ``tell``: nobody waits for their answer."""


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """A durable session's turn ends, in one message where there were two round trips (a tell:
    nobody waits; ``reply`` is called with the answer on the store's thread). The lines held for
    the session are written; then ``line`` (its turn_done) — or, when a write since the last sync
    failed and ``failed`` is given, ``failed(sentence)`` (the error and an error turn_done), so
    the rollout never holds a success for a turn whose record is incomplete; then the rollout is
    fsynced and the row updated with ``meta``. The answer is None, or the failure (a
    :class:`~cox.actors.store.actor.StorageError`, or ``pykka.ActorDeadError`` when the store
    stopped before handling it). The session holds what its surfaces see after the turn's end
    until the answer, so nothing of the next turn shows before this one's end is on disk."""

    session: str
    line: str
    failed: Callable[[str], str] | None
    meta: dict[str, Any] | None
    reply: Callable[[BaseException | None], None]

    def abandoned(self, error: BaseException) -> None:
        """The store stopped before handling it (``supervisors.actor``): the sender hears why."""
        self.reply(error)


LATER = frozenset({"ArchivePut", "ArchiveGet", "ArchiveRow", "CheckpointRow", "Checkpoint", "PostImages", "GetSession",
                   "SpentSince", "ListSessions"})


def __getattr__(name: str) -> Any:
    if name in LATER:
        from . import later_messages

        return getattr(later_messages, name)
    if name == "StoreMessage":  # only annotations name it
        from . import later_messages as x

        return (Open | Append | Sync | Close | Title | Usage | x.ArchivePut | x.ArchiveGet | x.Checkpoint
                | x.PostImages | Marker | x.GetSession | x.SpentSince | x.ListSessions)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
