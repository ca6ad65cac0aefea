"""cox.db: the SQLite index of sessions, the usage ledger and small archived outputs.

WAL mode so readers (``cox sessions``) never block the writer. The store actor is the one
writer (``connect``); everyone else reads through ``connect_ro``. The rollouts are the source of
truth; this index can be rebuilt from them.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'open',
    parent_id TEXT
);
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    at REAL NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS archive (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    inline BLOB,
    created_at REAL NOT NULL
);
"""


def connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=10.0, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(SCHEMA)
    return conn


def connect_ro(path: Path) -> sqlite3.Connection:
    """A read-only connection (``mode=ro``): what every reader but the store actor opens, so a
    surface or a checkpointer can never write, create or alter anything in cox.db. A table the
    store has not made yet is ``sqlite3.OperationalError`` (``no such table``) for the reader."""
    from urllib.parse import quote

    conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=10.0, check_same_thread=False,
                           isolation_level=None)
    return conn


def missing_table(exc: sqlite3.Error) -> bool:
    """Whether a read failed only because cox.db has no such table yet (nothing recorded)."""
    return isinstance(exc, sqlite3.OperationalError) and "no such table" in str(exc)


def read(path: Path, query: Callable[[sqlite3.Connection], T], empty: T) -> T:
    """``query`` on a read-only connection to the cox.db at ``path`` (closed after), or ``empty``
    when nothing is recorded there yet: no file, or not the table the query reads. Every other
    error is raised: a reader of a home that is broken says so (``home_problem``)."""
    if not path.exists():
        return empty
    conn = connect_ro(path)
    try:
        return query(conn)
    except sqlite3.Error as exc:
        if not missing_table(exc):
            raise
        return empty
    finally:
        conn.close()


def upsert_session(conn: sqlite3.Connection, meta: dict[str, Any]) -> None:
    now = time.time()
    conn.execute(
        "INSERT INTO sessions (id, cwd, model, title, created_at, updated_at, parent_id) VALUES (?,?,?,?,?,?,?) "
        "ON CONFLICT(id) DO UPDATE SET updated_at=excluded.updated_at, status='open'",
        (meta["id"], meta.get("cwd", ""), meta.get("model", ""), meta.get("title", ""), now, now,
         meta.get("parent_id")),
    )


def update_session(conn: sqlite3.Connection, session_id: str, **fields: Any) -> None:
    if not fields:
        return
    fields["updated_at"] = time.time()
    cols = ", ".join(f"{k}=?" for k in fields)
    conn.execute(f"UPDATE sessions SET {cols} WHERE id=?", (*fields.values(), session_id))


def set_title_if_empty(conn: sqlite3.Connection, session_id: str, title: str) -> None:
    conn.execute("UPDATE sessions SET title=? WHERE id=? AND title=''", (title[:200], session_id))


def list_sessions(conn: sqlite3.Connection, limit: int = 50) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT id, cwd, model, title, created_at, updated_at, turns, status FROM sessions "
        "ORDER BY updated_at DESC LIMIT ?",
        (limit,),
    ).fetchall()
    keys = ("id", "cwd", "model", "title", "created_at", "updated_at", "turns", "status")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def get_session(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT id, cwd, model, title, created_at, updated_at, turns, status FROM sessions WHERE id=?",
        (session_id,),
    ).fetchone()
    if row is None:
        return None
    keys = ("id", "cwd", "model", "title", "created_at", "updated_at", "turns", "status")
    return dict(zip(keys, row, strict=True))


def record_usage(conn: sqlite3.Connection, session_id: str, usage: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO usage (session_id, at, model, input_tokens, output_tokens, cache_read_tokens, "
        "cache_write_tokens, cost_usd) VALUES (?,?,?,?,?,?,?,?)",
        (session_id, time.time(), usage.get("model", ""), usage.get("input_tokens", 0),
         usage.get("output_tokens", 0), usage.get("cache_read_tokens", 0),
         usage.get("cache_write_tokens", 0), usage.get("cost_usd", 0.0)),
    )


def usage_since(conn: sqlite3.Connection, since: float) -> float:
    """Dollars spent since ``since`` (epoch seconds), across every session."""
    row = conn.execute("SELECT COALESCE(SUM(cost_usd), 0) FROM usage WHERE at >= ?", (since,)).fetchone()
    return float(row[0])


def usage_by_model(conn: sqlite3.Connection, since: float) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT model, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), "
        "SUM(cache_write_tokens), SUM(cost_usd) FROM usage WHERE at >= ? GROUP BY model ORDER BY SUM(cost_usd) DESC",
        (since,),
    ).fetchall()
    keys = ("model", "requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
            "cost_usd")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def cache_by_session(conn: sqlite3.Connection, limit: int = 20) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT u.session_id, u.model, COUNT(*), SUM(u.input_tokens), SUM(u.cache_read_tokens), "
        "SUM(u.cache_write_tokens), MAX(u.at), COALESCE(s.title, '') FROM usage u "
        "LEFT JOIN sessions s ON s.id = u.session_id GROUP BY u.session_id, u.model ORDER BY MAX(u.at) DESC LIMIT ?",
        (limit,),
    ).fetchall()
    out = []
    for sid, model, n, inp, read, write, at, title in rows:
        total = (inp or 0) + (read or 0) + (write or 0)
        out.append({"session_id": sid, "model": model, "requests": n, "input_tokens": inp, "cache_read_tokens": read,
                    "cache_write_tokens": write, "hit_ratio": (read or 0) / total if total else 0.0, "at": at,
                    "title": title})
    return out
