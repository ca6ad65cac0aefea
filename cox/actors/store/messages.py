"""The store actor's protocol: one typed message per request, matched with ``match``.

Tells (nobody waits: ``Append``, ``Title``, ``Usage``; ``Marker`` is an ask nobody waits for
until the turn ends) and asks (an answer or a
:class:`~cox.actors.store.actor.StorageError`: the rest). Frozen :mod:`cox.slim` dataclasses
(immutable, matched by position through ``__match_args__``), not NamedTuples: the classes are
built on the start-up path of ``cox run -p``, and ``typing.NamedTuple`` compiles every field's
annotation and a ``__new__`` per class at import (~0.2 ms each), slim nothing until a class is
first constructed. Nothing here is used as a tuple: read the fields by name or by ``match``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
class ArchivePut:
    """Archive these bytes; answers their id."""

    data: bytes
    kind: str = "tool_output"


@dataclass(frozen=True, slots=True)
class ArchiveGet:
    archive_id: str


@dataclass(frozen=True, slots=True)
class ArchiveRow:
    """An archived blob's index row: ``inline`` holds the bytes of a small one; a big one's file
    (``archive/<id>``) was written by the sender before (``archive.stage``)."""

    id: str
    kind: str
    size: int
    inline: bytes | None


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    """One file's checkpoint row (``checkpoints.py`` says what the kinds mean)."""

    path: str
    kind: str
    archive_id: str | None = None
    size: int | None = None
    mode: int | None = None
    too_big: bool = False
    origin: str = ""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One call's checkpoint rows and the archived pre-images they name, written in one
    transaction (an ask: the rows exist before the model sees the call's result)."""

    session: str
    turn: int
    call_id: str
    root: str
    rows: tuple[CheckpointRow, ...]
    archived: tuple[ArchiveRow, ...] = ()
    began: float | None = None


@dataclass(frozen=True, slots=True)
class PostImages:
    """What a session left in each file: ``(path, content id)`` pairs (an ask)."""

    session: str
    root: str
    posts: tuple[tuple[str, str], ...]
    origin: str = ""


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


@dataclass(frozen=True, slots=True)
class GetSession:
    session: str


@dataclass(frozen=True, slots=True)
class SpentSince:
    """The cost of every request since this Unix time."""

    since: float


@dataclass(frozen=True, slots=True)
class ListSessions:
    limit: int = 50


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
