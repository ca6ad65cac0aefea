"""The lossless output archive: every tool output is kept whole, the model sees a cap.

Every result gets an id, small ones too, so microcompaction can send any old result as a
pointer to it. Outputs up to 16 KiB live inline in cox.db; larger ones in ``archive/<id>`` with
the index row in the db. ``cox expand <id> [--lines a-b]`` reads them back, byte for byte as the
tool produced them (bash: what the command printed, without cox's ``[exit code N]`` footer).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from cox.atomic import write_atomic
from cox.protocol.types import new_ulid

from .messages import ArchiveRow

INLINE_MAX = 16 * 1024


class ArchiveMissing(KeyError):
    pass


def stage(folder: Path, data: bytes, kind: str = "tool_output") -> ArchiveRow:
    """A new id for ``data`` and its index row; a big blob's file is written now, by the caller's
    thread. Nothing names the file until the store writes the row (``insert``): a blob staged
    by a call that then failed is an unnamed file, never a row without its bytes."""
    archive_id = new_ulid()
    if len(data) <= INLINE_MAX:
        return ArchiveRow(archive_id, kind, len(data), data)
    # Exclusive random temporary name, then a rename: never through a link left in the folder.
    write_atomic(folder / archive_id, data, fsync=True, make_parents=True)
    return ArchiveRow(archive_id, kind, len(data), None)


def insert(conn: sqlite3.Connection, row: ArchiveRow) -> None:
    conn.execute("INSERT INTO archive (id, kind, size, inline, created_at) VALUES (?,?,?,?,?)",
                 (row.id, row.kind, row.size, row.inline, time.time()))


def put(conn: sqlite3.Connection, folder: Path, data: bytes, kind: str = "tool_output") -> str:
    """Archive ``data`` whole (the store actor's ``ArchivePut``); its id."""
    row = stage(folder, data, kind)
    insert(conn, row)
    return row.id


def get(conn: sqlite3.Connection, folder: Path, archive_id: str) -> bytes:
    row = conn.execute("SELECT inline FROM archive WHERE id=?", (archive_id,)).fetchone()
    if row is None:
        # An archive file without its row (the db was rebuilt) is still readable.
        path = folder / archive_id
        if path.is_file():
            return path.read_bytes()
        raise ArchiveMissing(f"no archived output with id {archive_id}")
    if row[0] is not None:
        return bytes(row[0])
    return (folder / archive_id).read_bytes()
