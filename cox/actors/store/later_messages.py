"""The store's messages that no session sends before its first model request: the archive's
(``ArchivePut``, ``ArchiveGet`` and the ``ArchiveRow`` they carry), the checkpoints'
(``Checkpoint``, its ``CheckpointRow``s, ``PostImages``) and the index readers'
(``GetSession``, ``SpentSince``, ``ListSessions``). Read them from ``messages`` (which loads this
module with the first of them asked for); they are frozen :mod:`cox.slim` dataclasses as the
rest of the protocol is.
"""

from __future__ import annotations

from cox.slim import dataclass


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
class GetSession:
    session: str


@dataclass(frozen=True, slots=True)
class SpentSince:
    """The cost of every request since this Unix time."""

    since: float


@dataclass(frozen=True, slots=True)
class ListSessions:
    limit: int = 50
