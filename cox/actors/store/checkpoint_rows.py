"""The checkpoint tables and the SQL that writes them: run by the store actor alone.

The checkpointer (``checkpoints.py``) reads files, git and cox.db (read-only) on the caller's
thread, a ToolCall's or the session's, and sends what it found as typed messages
(``messages.Checkpoint``, ``PostImages``, ``Marker``); the store actor, cox.db's one writer,
writes them here, one transaction per message. Kept apart from ``checkpoints.py`` so the store
does not import git plumbing to create a table.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .messages import Checkpoint, Marker

TITLE_MAX = 80

SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    call_id TEXT NOT NULL DEFAULT '',
    root TEXT NOT NULL DEFAULT '',
    path TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL CHECK (kind IN ('pre', 'created', 'deleted', 'marker')),
    archive_id TEXT,
    size INTEGER,
    mode INTEGER,
    too_big INTEGER NOT NULL DEFAULT 0,
    title TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS checkpoints_session_turn ON checkpoints (session_id, turn);
CREATE INDEX IF NOT EXISTS checkpoints_root_at ON checkpoints (root, created_at);
CREATE TABLE IF NOT EXISTS post_images (
    session_id TEXT NOT NULL,
    root TEXT NOT NULL,
    path TEXT NOT NULL,
    post TEXT NOT NULL,
    at REAL NOT NULL,
    origin TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, root, path)
);
CREATE INDEX IF NOT EXISTS post_images_root_at ON post_images (root, at);
"""
"""The checkpoints and the post-images (``post_images.py``) tables, made when the store starts
(so ``post_images`` itself loads with the first edit recorded)."""


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the checkpoint tables (idempotent; the store does it when it starts). A table made
    before post-images gains its ``origin`` column (old rows: '', treated as a snapshot's)."""
    conn.executescript(SCHEMA)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(checkpoints)").fetchall()}
    if "origin" not in cols:
        conn.execute("ALTER TABLE checkpoints ADD COLUMN origin TEXT NOT NULL DEFAULT ''")
    if "began" not in cols:  # when the call that made the row began (a snapshot's window start)
        conn.execute("ALTER TABLE checkpoints ADD COLUMN began REAL")


def first_words(text: str, limit: int = TITLE_MAX) -> str:
    """A marker's title: the first non-empty line, whitespace collapsed, cut at ``limit``."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    words = " ".join(line.split())
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"


def insert(conn: sqlite3.Connection, message: Checkpoint) -> None:
    """The archived pre-images' index rows, then the call's checkpoint rows: all or nothing."""
    if not message.rows and not message.archived:
        return
    now = time.time()
    start = now if message.began is None else message.began
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany("INSERT INTO archive (id, kind, size, inline, created_at) VALUES (?,?,?,?,?)",
                         [(a.id, a.kind, a.size, a.inline, now) for a in message.archived])
        conn.executemany(
            "INSERT INTO checkpoints (session_id, turn, call_id, root, path, kind, archive_id, size, "
            "mode, too_big, origin, began, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(message.session, message.turn, message.call_id, message.root, r.path, r.kind, r.archive_id, r.size,
              r.mode, int(r.too_big), r.origin, start, now) for r in message.rows],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def marker(conn: sqlite3.Connection, message: Marker) -> None:
    """One marker row per user turn: its first words, for the /rewind list. Sent again for the
    same turn it replaces the title, unless ``only_if_missing``."""
    words = first_words(message.text)
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = conn.execute("SELECT 1 FROM checkpoints WHERE session_id=? AND turn=? AND kind='marker'",
                             (message.session, message.turn)).fetchone()
        if found is None:
            conn.execute(
                "INSERT INTO checkpoints (session_id, turn, call_id, root, path, kind, title, created_at) "
                "VALUES (?,?,'',?,'','marker',?,?)",
                (message.session, message.turn, message.root, words, time.time()),
            )
        elif not message.only_if_missing:
            conn.execute("UPDATE checkpoints SET title=? WHERE session_id=? AND turn=? AND kind='marker'",
                         (words, message.session, message.turn))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
