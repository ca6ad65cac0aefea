"""Presence records: which live cox sessions work in which workspace.

Two sessions (or a session and the person's editor) writing in one folder can step on each
other; a session says so when it starts, and the checkpoints use the same knowledge to keep one
session's rewind off another's files. A row is written when the store opens a session and
removed when it closes; a row whose pid is dead (a SIGKILLed process) is stale, ignored and
swept.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS presence (
    session_id TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    workspace TEXT NOT NULL,
    worktree TEXT NOT NULL DEFAULT '',
    started REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS presence_workspace ON presence (workspace, pid);
"""


def alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def worktree_of(workspace: Path) -> str:
    """The folder holding the ``.git`` entry the workspace lives under ('' outside git)."""
    for d in (workspace, *workspace.parents):
        if os.path.lexists(d / ".git"):
            return str(d)
    return ""


def register(conn: sqlite3.Connection, session_id: str, workspace: str) -> Found:
    """Record this process's session in ``workspace`` and return the other live ones there."""
    conn.executescript(SCHEMA)
    ws = str(Path(workspace).resolve()) if workspace else ""
    conn.execute(
        "INSERT OR REPLACE INTO presence (session_id, pid, workspace, worktree, started) VALUES (?,?,?,?,?)",
        (session_id, os.getpid(), ws, worktree_of(Path(ws)) if ws else "", time.time()),
    )
    return others(conn, session_id, ws)


SHOWN = 5
"""How many of the other sessions the start-up notice names (and ``others`` returns)."""


class Found(list[dict[str, Any]]):
    """The first ``SHOWN`` other live sessions, and how many there are in all (``total``).

    A list, so callers that only name them keep working; capped, so a process serving thousands
    of sessions in one folder does not build thousands of rows for every one it opens."""

    total: int = 0


def others(conn: sqlite3.Connection, session_id: str, workspace: str) -> Found:
    """Live sessions other than ``session_id`` in the same workspace; stale rows are swept.

    Liveness is probed once per process, not per row, and only ``SHOWN`` rows are read: the cost
    does not grow with the number of sessions one process holds there."""
    conn.executescript(SCHEMA)
    where = "workspace=? AND session_id!=?"
    for pid in _pids(conn, workspace):
        if not alive(int(pid)):
            conn.execute(f"DELETE FROM presence WHERE {where} AND pid=?", (workspace, session_id, pid))
    found = Found(
        {"session_id": sid, "pid": int(pid), "workspace": ws, "worktree": wt, "started": started}
        for sid, pid, ws, wt, started in conn.execute(
            f"SELECT session_id, pid, workspace, worktree, started FROM presence WHERE {where} LIMIT ?",
            (workspace, session_id, SHOWN),
        )
    )
    # Counted on the (workspace, pid) index alone, then less this session's own row.
    total = conn.execute("SELECT COUNT(*) FROM presence WHERE workspace=?", (workspace,)).fetchone()[0]
    mine = conn.execute("SELECT COUNT(*) FROM presence WHERE session_id=? AND workspace=?",
                        (session_id, workspace)).fetchone()[0]
    found.total = int(total) - int(mine)
    return found


def _pids(conn: sqlite3.Connection, workspace: str) -> list[int]:
    """The distinct pids with a row in ``workspace``: one index probe per pid, not a row scan."""
    pids: list[int] = []
    last = -1
    while (row := conn.execute("SELECT pid FROM presence WHERE workspace=? AND pid>? ORDER BY pid LIMIT 1",
                               (workspace, last)).fetchone()) is not None:
        last = int(row[0])
        pids.append(last)
    return pids


def in_worktree(conn: sqlite3.Connection, worktree: str, session_id: str = "") -> list[dict[str, Any]]:
    """The live sessions (other than ``session_id``) whose presence record names ``worktree``; reads
    only (a surface's read-only connection), so stale rows are skipped, not swept."""
    rows = conn.execute("SELECT session_id, pid FROM presence WHERE worktree=? AND session_id!=? LIMIT ?",
                        (worktree, session_id, SHOWN * 4)).fetchall()
    return [{"session_id": sid, "pid": int(pid)} for sid, pid in rows if alive(int(pid))]


def unregister(conn: sqlite3.Connection, session_id: str) -> None:
    conn.executescript(SCHEMA)
    conn.execute("DELETE FROM presence WHERE session_id=? AND pid=?", (session_id, os.getpid()))


def notice(found: list[dict[str, Any]]) -> str:
    """The start-up sentence naming the other live sessions."""
    total = found.total if isinstance(found, Found) else len(found)
    names = ", ".join(f"{o['session_id']} (pid {o['pid']})" for o in found[:SHOWN])
    more = f" and {total - SHOWN} more" if total > SHOWN else ""
    return (f"{total} other cox session(s) are working in this folder: {names}{more}. Their changes are "
            "not this session's: /rewind leaves files they (or you) changed since alone and reports a conflict")
