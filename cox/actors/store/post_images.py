"""Post-images: what a session left in each file it changed, so a rewind can tell its own work
from everyone else's.

After every checkpointed call (and after a rewind's own writes) the session records, per file,
the content id it left there: git's blob id of the bytes (of the link target for a symlink; the
snapshot's diff already names it, and a named file is hashed the same way), or ``""`` when the
call left no file. A rewind restores a file only while its current content id is still this
session's post-image; anything else — another session, the person's editor, a formatter — made
the change since, and the rewind reports a conflict instead of undoing their work.

The table (``post_images``) is created with the checkpoint tables (``checkpoint_rows.SCHEMA``)
when the store starts; this module loads with the first post-image recorded.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Iterable
from pathlib import Path

ABSENT = ""
FOLDER = "folder"


def blob_id(data: bytes) -> str:
    """git's object id of a blob with these bytes (``git hash-object``)."""
    import hashlib  # with the first write, not at start-up

    h = hashlib.sha1(usedforsecurity=False)
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def current(path: Path) -> str:
    """The content id standing at ``path`` now, reached through real folders only: a folder
    swapped for a link since holds no file of this session's (``ABSENT``)."""
    from cox.atomic import Folder, LinkInTheWay

    try:
        with Folder(path.parent, follow=False) as folder:
            name, fd = path.name, folder.fd
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                return blob_id(os.fsencode(os.readlink(name, dir_fd=fd)))
            if stat.S_ISDIR(st.st_mode):
                return FOLDER
            return blob_id(folder.read(name))
    except (LinkInTheWay, FileNotFoundError, NotADirectoryError):
        return ABSENT


def record(conn: sqlite3.Connection, session_id: str, root: str, posts: Iterable[tuple[str, str]],
           origin: str = "") -> None:
    """Upsert ``(path, content id)`` pairs as what this session left there; ``origin`` says how
    the change was known (the checkpoint rows' word: named, snapshot, rewind)."""
    now = time.time()
    rows = [(session_id, root, path, post, now, origin) for path, post in posts]
    if not rows:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany("INSERT OR REPLACE INTO post_images (session_id, root, path, post, at, origin) VALUES (?,?,?,?,?,?)",
                         rows)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def left(conn: sqlite3.Connection, session_id: str, root: str) -> dict[str, str]:
    """Every path's post-image for this session and root."""
    rows = conn.execute("SELECT path, post FROM post_images WHERE session_id=? AND root=?",
                        (session_id, root)).fetchall()
    return {str(p): str(v) for p, v in rows}


def others_since(conn: sqlite3.Connection, session_id: str, root: str, since: float,
                 origins: tuple[str, ...]) -> dict[str, str]:
    """Files another session changed, in a way of ``origins``, at or after ``since`` (a post-image
    it left, or a checkpoint row it wrote): path → that session's id."""
    marks = ",".join("?" * len(origins))
    out: dict[str, str] = {}
    for path, sid in conn.execute(
        f"SELECT path, session_id FROM post_images WHERE root=? AND session_id!=? AND at>=? AND origin IN ({marks}) "
        f"UNION SELECT path, session_id FROM checkpoints WHERE root=? AND session_id!=? AND kind!='marker' "
        f"AND created_at>=? AND origin IN ({marks})",
        (root, session_id, since, *origins, root, session_id, since, *origins),
    ).fetchall():
        out.setdefault(str(path), str(sid))
    return out
