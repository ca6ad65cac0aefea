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


def register(conn: sqlite3.Connection, session_id: str, workspace: str) -> list[dict[str, Any]]:
    """Record this process's session in ``workspace`` and return the other live ones there."""
    conn.executescript(SCHEMA)
    ws = str(Path(workspace).resolve()) if workspace else ""
    conn.execute(
        "INSERT OR REPLACE INTO presence (session_id, pid, workspace, worktree, started) VALUES (?,?,?,?,?)",
        (session_id, os.getpid(), ws, worktree_of(Path(ws)) if ws else "", time.time()),
    )
    return others(conn, session_id, ws)


def others(conn: sqlite3.Connection, session_id: str, workspace: str) -> list[dict[str, Any]]:
    """Live sessions other than ``session_id`` in the same workspace; stale rows are swept."""
    conn.executescript(SCHEMA)
    rows = conn.execute(
        "SELECT session_id, pid, workspace, worktree, started FROM presence WHERE workspace=? AND session_id!=?",
        (workspace, session_id),
    ).fetchall()
    out: list[dict[str, Any]] = []
    live: dict[int, bool] = {}  # one probe per process: a server may hold thousands of sessions
    for sid, pid, ws, wt, started in rows:
        if pid not in live:
            live[pid] = alive(int(pid))
        if live[pid]:
            out.append({"session_id": sid, "pid": int(pid), "workspace": ws, "worktree": wt, "started": started})
        else:
            conn.execute("DELETE FROM presence WHERE session_id=? AND pid=?", (sid, pid))
    return out


def unregister(conn: sqlite3.Connection, session_id: str) -> None:
    conn.executescript(SCHEMA)
    conn.execute("DELETE FROM presence WHERE session_id=? AND pid=?", (session_id, os.getpid()))


def notice(found: list[dict[str, Any]]) -> str:
    """The start-up sentence naming the other live sessions."""
    names = ", ".join(f"{o['session_id']} (pid {o['pid']})" for o in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    return (f"{len(found)} other cox session(s) are working in this folder: {names}{more}. Their changes are "
            "not this session's: /rewind leaves files they (or you) changed since alone and reports a conflict")
