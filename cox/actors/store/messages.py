"""The store actor's protocol: one typed message per request, matched with ``match``.

Tells (nobody waits: ``Append``, ``Title``, ``Usage``; ``Marker`` is an ask nobody waits for
until the turn ends) and asks (an answer or a
:class:`~cox.actors.store.actor.StorageError`: the rest). NamedTuples, not dataclasses: they are
built on the start-up path of ``cox run -p``, where a class costs less this way.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Open(NamedTuple):
    """A session begins (or resumes): its index row, its presence record; ``reporter`` (the
    session actor) hears of a failed write once. Answers the other live sessions here."""

    meta: dict[str, Any]
    reporter: Any = None

    @property
    def session(self) -> str:
        return str(self.meta["id"])


class Append(NamedTuple):
    """One rollout line (a tell)."""

    session: str
    line: str


class Sync(NamedTuple):
    """fsync the rollout and update the index row; raises the first failure since the last
    sync. ``session`` "" syncs nothing (a barrier: everything sent before has been handled).
    ``durable`` False: only the failure check (and the row), no fsync."""

    session: str
    meta: dict[str, Any] | None = None
    durable: bool = True


class Close(NamedTuple):
    """The session ends: its rollout closed (``durable``: fsynced first), its row marked closed
    (with ``meta``, for a session that did not update it at each turn's end)."""

    session: str
    durable: bool = True
    meta: dict[str, Any] | None = None


class Title(NamedTuple):
    """The session's title, if it has none yet (a tell)."""

    session: str
    text: str


class Usage(NamedTuple):
    """One request's usage row (a tell)."""

    session: str
    record: dict[str, Any]


class ArchivePut(NamedTuple):
    """Archive these bytes; answers their id."""

    data: bytes
    kind: str = "tool_output"


class ArchiveGet(NamedTuple):
    archive_id: str


class ArchiveRow(NamedTuple):
    """An archived blob's index row: ``inline`` holds the bytes of a small one; a big one's file
    (``archive/<id>``) was written by the sender before (``archive.stage``)."""

    id: str
    kind: str
    size: int
    inline: bytes | None


class CheckpointRow(NamedTuple):
    """One file's checkpoint row (``checkpoints.py`` says what the kinds mean)."""

    path: str
    kind: str
    archive_id: str | None = None
    size: int | None = None
    mode: int | None = None
    too_big: bool = False
    origin: str = ""


class Checkpoint(NamedTuple):
    """One call's checkpoint rows and the archived pre-images they name, written in one
    transaction (an ask: the rows exist before the model sees the call's result)."""

    session: str
    turn: int
    call_id: str
    root: str
    rows: tuple[CheckpointRow, ...]
    archived: tuple[ArchiveRow, ...] = ()
    began: float | None = None


class PostImages(NamedTuple):
    """What a session left in each file: ``(path, content id)`` pairs (an ask)."""

    session: str
    root: str
    posts: tuple[tuple[str, str], ...]
    origin: str = ""


class Marker(NamedTuple):
    """A turn's /rewind marker, titled with the first words of ``text``. The session sends it
    without waiting (``ask(block=False)``: a tell with a reply for its warning), so the store's
    order writes it before that turn's closing ``Sync``. ``only_if_missing``: keep a title the
    turn already has (a rewind's own turn)."""

    session: str
    turn: int
    root: str
    text: str
    only_if_missing: bool = False


class GetSession(NamedTuple):
    session: str


class SpentSince(NamedTuple):
    """The cost of every request since this Unix time."""

    since: float


class ListSessions(NamedTuple):
    limit: int = 50


StoreMessage = (Open | Append | Sync | Close | Title | Usage | ArchivePut | ArchiveGet | Checkpoint | PostImages
                | Marker | GetSession | SpentSince | ListSessions)

TOLD = (Append, Title, Usage)
"""Messages sent with ``tell``: nobody waits for their answer."""


from collections.abc import Callable  # noqa: E402 - kept beside the one message that needs it


class TurnEnd(NamedTuple):
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
