"""Is ``COX_HOME`` usable? One sentence naming what is wrong and what to do, or ``None``.

``cox doctor`` shows it as its "cox home" row; ``cox run``, the TUI, ``cox sessions``, ``cox
stats`` and ``cox expand`` print it as their one error line (and ``cox run`` puts it in its result
object) instead of a traceback from deep inside sqlite or ``mkdir``. One function, so every
command says the same thing about the same home.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from cox.atomic import Folder

SQLITE_MAGIC = b"SQLite format 3\x00"
FIX_HOME = "set COX_HOME to a folder you own"
READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def _os_problem(home: Path, exc: OSError) -> str:
    if exc.errno in READ_ONLY:
        return f"COX_HOME {home} is read-only; {FIX_HOME}"
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return f"COX_HOME {home} is not a folder; {FIX_HOME}"
    if exc.errno == errno.ENOSPC:
        return f"COX_HOME {home} is on a full disk; free some space or {FIX_HOME}"
    return f"COX_HOME {home} is not writable ({exc.strerror}); {FIX_HOME}"


def home_problem(home: Path, *, create: bool = True, deep: bool = False) -> str | None:
    """What stops cox from using ``home``, as one line with its fix; ``None`` when it is usable.

    ``create``: make the home when it is missing (a session will write there); without it a
    missing home is fine (the read-only commands have nothing to show). ``deep``: also ask
    sqlite to read cox.db's schema (for after a failure the cheap header check let through)."""
    if home.exists() and not home.is_dir():
        return f"COX_HOME {home} is not a folder; {FIX_HOME}"
    if not home.exists():
        if not create:
            return None
        try:
            home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return _os_problem(home, exc)
    try:
        # Exclusive and randomly named (Folder.temp): a link left at a fixed name is never written through.
        with Folder(home) as folder:
            folder.remove(folder.temp("cox-probe", b"", suffix=""))
    except OSError as exc:
        return _os_problem(home, exc)
    for sub in ("sessions", "archive", "logs", "checkpoints"):
        path = home / sub
        if path.exists() and not path.is_dir():
            return f"{path} is not a folder; move it aside (cox makes a new one)"
        if path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
            return f"{path} is read-only; make it writable or {FIX_HOME}"
    return db_problem(home / "cox.db", deep=deep)


def db_problem(db: Path, *, deep: bool = False) -> str | None:
    """``cox.db is not a database; move it aside`` when the file is not SQLite (or, ``deep``,
    when sqlite cannot read it). The sessions' rollouts are separate files and stay."""
    if not db.exists() and not db.is_symlink():
        return None
    moved = f"move it aside (cox makes a new index; the rollouts in {db.parent / 'sessions'} are kept)"
    if not db.is_file():
        return f"{db} is not a database; {moved}"
    try:
        with open(db, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        return f"{db} cannot be read ({exc.strerror}); {FIX_HOME}"
    if head and head != SQLITE_MAGIC:
        return f"{db} is not a database; {moved}"
    if deep:
        import sqlite3

        from cox.actors.store.db import connect_ro

        try:
            conn = connect_ro(db)  # read-only, and a path with '?' or '#' is quoted
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                conn.execute("PRAGMA quick_check(1)").fetchone()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            return f"{db} is not a usable database ({exc}); {moved}"
    return None
