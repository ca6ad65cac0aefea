"""The store actor's protocol: one typed message per request, matched with ``match``.

Tells (nobody waits: ``Append``, ``Title``, ``Usage``) and asks (an answer or a
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
    sync. ``session`` "" syncs nothing (a barrier: everything sent before has been handled)."""

    session: str
    meta: dict[str, Any] | None = None


class Close(NamedTuple):
    session: str


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


class GetSession(NamedTuple):
    session: str


class SpentSince(NamedTuple):
    """The cost of every request since this Unix time."""

    since: float


class ListSessions(NamedTuple):
    limit: int = 50


StoreMessage = (Open | Append | Sync | Close | Title | Usage | ArchivePut | ArchiveGet | GetSession
                | SpentSince | ListSessions)

TOLD = (Append, Title, Usage)
"""Messages sent with ``tell``: nobody waits for their answer."""
