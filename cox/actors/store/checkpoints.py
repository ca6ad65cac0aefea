"""Checkpoints: every write has a pre-image, so /rewind can put the workspace back.

Two ways a pre-image is taken, because cox knows the files a call touches only sometimes:

- ``pre_images`` before edit/write/apply_patch: the tool names its files, so their bytes are read
  and archived (``pre``), or the file is marked ``created`` when it does not exist yet.
- ``snapshot`` + ``changes_since`` around bash or an MCP tool, which can touch anything: a tree id
  of the whole workspace before, another after, and the pre-image of every file that changed
  (``pre``) or vanished (``deleted``) taken from the before tree; files that appeared are ``created``.
  The git side lives in ``checkpoint_git``.

Each call also records its post-image (``post_images``): what it left in each file. A rewind
restores a file only while that is still what stands there, and only when no other session
recorded a change to it since; otherwise the file is a *conflict*, listed and left alone unless
the rewind is forced. A snapshot's diff is not all this call's work: files another session named
(a ``write``/``edit`` there) while the call ran are not filed as this call's. What the person's
editor changes *while* a bash call runs cannot be told apart and is filed with it; what it changes
afterwards is a conflict at rewind time.

``marker`` writes one row per user turn (its first words) and ``timeline`` lists the turns for
/rewind. ``restore`` writes back, for each file touched at or after a turn, its EARLIEST
pre-image there -- the file's state when that turn began -- after recording the pre-images of what
it overwrites under a new turn number, so a rewind can itself be rewound.

Bytes go to the store's archive (``archive.put``: ≤ 16 KiB inline in cox.db, larger under
``archive/<id>``); a pre-image over 8 MiB is recorded without bytes (``too_big``) and reported as
not restorable. Only ``snapshot``/``changes_since`` need git; pre-images, the timeline and restore
work from the archive alone.

The checkpointer runs in the caller's thread (a ToolCall actor, the session) and writes cox.db
through its own connection while the store actor writes too: WAL, a 10 s busy timeout, and short
transactions (archive rows one by one, then the checkpoint rows of one call in one transaction).
Every failure reaches the caller as ``CheckpointError`` -- a notice, never a failed turn.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cox.atomic import Folder, LinkInTheWay, remove_file, temp_name
from cox.log import get_logger
from cox.slim import dataclass

from . import archive, db, post_images
from .checkpoint_git import GitError, PrivateRepo, clean_env, root_hash, which_git
from .layout import Layout
from .overlay import GITLINK, SYMLINK

log = get_logger(__name__)

TOO_BIG = 8 * 1024 * 1024
TITLE_MAX = 80
REWIND_CALL = "rewind"

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
"""

NAMED, SNAPSHOT, REWOUND = "named", "snapshot", "rewind"
"""A row's ``origin``: a tool named the file, a snapshot diff found it, a rewind wrote it."""


class CheckpointError(Exception):
    """A checkpoint could not be taken or restored. The lead turns it into a notice; the tool
    call itself goes on (a missing checkpoint must never fail a turn)."""


class Restored(list[str]):
    """The paths a restore wrote back (it is a ``list[str]``), plus ``not_restorable``: path →
    why (a pre-image over 8 MiB has no bytes, a folder now stands where a file was, …), and
    ``conflicts``: path → who changed it since this session did (left alone unless forced)."""

    def __init__(self, paths: Iterable[str] = (), not_restorable: dict[str, str] | None = None,
                 conflicts: dict[str, str] | None = None) -> None:
        super().__init__(paths)
        self.not_restorable: dict[str, str] = dict(not_restorable or {})
        self.conflicts: dict[str, str] = dict(conflicts or {})


@dataclass(slots=True)
class _Row:
    path: str
    kind: str
    archive_id: str | None = None
    size: int | None = None
    mode: int | None = None
    too_big: bool = False
    origin: str = NAMED


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the checkpoint tables (idempotent): the store actor may call it too. A table made
    before post-images gains its ``origin`` column (old rows: '', treated as a snapshot's)."""
    conn.executescript(SCHEMA + post_images.SCHEMA)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(checkpoints)").fetchall()}
    if "origin" not in cols:
        conn.execute("ALTER TABLE checkpoints ADD COLUMN origin TEXT NOT NULL DEFAULT ''")
    if "began" not in cols:  # when the call that made the row began (a snapshot's window start)
        conn.execute("ALTER TABLE checkpoints ADD COLUMN began REAL")


def timeline(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """The /rewind list, newest first: ``{turn, files, title}`` for every turn with a marker or
    a checkpoint row; ``files`` counts distinct files over all roots."""
    rows = conn.execute(
        "SELECT turn, COUNT(DISTINCT CASE WHEN kind != 'marker' THEN root || char(10) || path END), "
        "MAX(CASE WHEN kind = 'marker' THEN title END) FROM checkpoints WHERE session_id=? "
        "GROUP BY turn ORDER BY turn DESC",
        (session_id,),
    ).fetchall()
    return [{"turn": int(t), "files": int(n), "title": title or ""} for t, n, title in rows]


def first_words(text: str, limit: int = TITLE_MAX) -> str:
    """A marker's title: the first non-empty line, whitespace collapsed, cut at ``limit``."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    words = " ".join(line.split())
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"


def _file_mode(st: os.stat_result) -> int:
    return stat.S_IFREG | stat.S_IMODE(st.st_mode)


class Checkpointer:
    """Pre-images and snapshots for one workspace root, written to cox.db and the archive."""

    def __init__(
        self,
        layout: Layout,
        root: Path,
        conn_factory: Callable[[], sqlite3.Connection] | None = None,
        *,
        git_timeout: float = 60.0,
        too_big: int = TOO_BIG,
    ) -> None:
        self.layout = layout
        # Resolved once: the same folder reached through a symlink must share one private repo.
        self.root = Path(root).resolve()
        self._conn_factory = conn_factory or (lambda: db.connect(layout.db))
        self._conn: sqlite3.Connection | None = None
        self.git_timeout = git_timeout
        self.too_big = too_big
        self._lock = threading.RLock()
        self._repo: PrivateRepo | None = None
        self._taken: dict[str, float] = {}  # snapshot tree id -> when the earliest such snapshot began

    # -- availability and plumbing ---------------------------------------------------------------

    @staticmethod
    def available(path: str | None = None) -> tuple[bool, str]:
        """Whether snapshots can run here: git on PATH (or ``path``) and answering. The reason is
        the sentence the session shows once when they cannot."""
        git = which_git(path)
        if git is None:
            return False, "git is not on PATH: checkpoints are off, bash and MCP changes cannot be rewound"
        try:
            proc = subprocess.run([git, "--version"], env=clean_env(Path(os.devnull)), capture_output=True,
                                  timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, f"git did not run ({e}): checkpoints are off"
        if proc.returncode != 0:
            return False, f"git --version failed (exit {proc.returncode}): checkpoints are off"
        return True, proc.stdout.decode("utf-8", "replace").strip()

    @property
    def repo_dir(self) -> Path:
        """``$COX_HOME/checkpoints/<hash of root>``: the private bare repository."""
        return self.layout.checkpoints / root_hash(self.root)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._repo is not None:
                self._repo.close()  # the change watch's descriptor; the repository stays

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = self._conn_factory()
            ensure_schema(conn)
            self._conn = conn
        return self._conn

    def _git(self) -> PrivateRepo:
        if self._repo is None:
            git = which_git()
            if git is None:
                raise CheckpointError("git is not on PATH: cannot snapshot the workspace")
            self._repo = PrivateRepo(git, self.repo_dir, self.root, self.git_timeout)
        return self._repo

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Serialise callers and turn every failure into one ``CheckpointError``. Whatever
        happened, no write transaction stays open on the shared connection: an exception that
        lands between a ``BEGIN`` and its ``try`` (an interrupt, a killed caller) would otherwise
        hold cox.db's write lock and stall every other writer, the store actor included."""
        with self._lock:
            try:
                yield
            except CheckpointError:
                raise
            except GitError as e:
                raise CheckpointError(f"checkpoint {what}: {e}") from e
            except (OSError, sqlite3.Error, ValueError, UnicodeError) as e:
                raise CheckpointError(f"checkpoint {what} failed: {type(e).__name__}: {e}") from e
            finally:
                conn = self._conn
                if conn is not None and conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        log.warning("checkpoint rollback failed", what=what)

    def _rel(self, path: Path | str) -> str:
        """The key a named file is recorded under: relative to the root (POSIX) when inside it,
        else absolute. Symlinks are resolved: a tool writes through a link, so the file that
        changes -- and must be restored -- is its target."""
        p = Path(path)
        if not p.is_absolute():
            p = self.root / p
        p = p.resolve()
        try:
            return p.relative_to(self.root).as_posix()
        except ValueError:
            return str(p)

    def _abs(self, rel: str) -> Path:
        p = Path(rel)
        return p if p.is_absolute() else self.root / p

    def _seen(self, session_id: str, turn: int) -> set[str]:
        """Files that already have a row this turn: only the earliest pre-image of a turn is ever
        restored, so a second edit of the same file in the same turn archives nothing."""
        rows = self._db().execute(
            "SELECT DISTINCT path FROM checkpoints WHERE session_id=? AND turn=? AND root=? AND kind!='marker'",
            (session_id, turn, str(self.root)),
        ).fetchall()
        return {r[0] for r in rows}

    def _put(self, data: bytes) -> str:
        return archive.put(self._db(), self.layout.archive, data, kind="checkpoint")

    def _insert(self, session_id: str, turn: int, call_id: str, rows: list[_Row], began: float | None = None) -> None:
        if not rows:
            return
        conn = self._db()
        now = time.time()
        start = now if began is None else began
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT INTO checkpoints (session_id, turn, call_id, root, path, kind, archive_id, size, "
                "mode, too_big, origin, began, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(session_id, turn, call_id, str(self.root), r.path, r.kind, r.archive_id, r.size, r.mode,
                  int(r.too_big), r.origin, start, now) for r in rows],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # -- pre-images of named files -------------------------------------------------------------

    def pre_images(self, session_id: str, turn: int, call_id: str, paths: Iterable[Path | str]) -> list[str]:
        """Archive the current bytes of each named file before a tool changes it (``pre``), or
        mark it ``created`` when it does not exist. Returns the relative paths now covered for
        this turn. An unreadable file is reported after the others are recorded."""
        with self._guard("before the write"):
            return self._record(session_id, turn, call_id, [self._rel(p) for p in paths], follow=True)

    def settle(self, session_id: str, rels: Iterable[str]) -> None:
        """After a call that named its files: record what it left in each (its post-image)."""
        with self._guard("after the write"):
            post_images.record(self._db(), session_id, str(self.root),
                               [(rel, post_images.current(self._abs(rel))) for rel in rels], NAMED)

    def _record(self, session_id: str, turn: int, call_id: str, rels: list[str], *, follow: bool) -> list[str]:
        """Record the pre-image of each path. ``follow``: read through a symlink (a tool writes
        through it, and ``_rel`` already named the target); a rewind records the link itself,
        so undoing the rewind brings the link back."""
        seen = self._seen(session_id, turn)
        covered: list[str] = []
        rows: list[_Row] = []
        failed: list[str] = []
        for rel in rels:
            if rel in covered:
                continue
            if rel in seen:
                covered.append(rel)
                continue
            try:
                row = self._pre_image_row(rel, follow)
            except OSError as e:
                failed.append(f"{rel}: {e.strerror or e}")
                continue
            if row is not None:
                row.origin = NAMED if follow else REWOUND
                rows.append(row)
                covered.append(rel)
        self._insert(session_id, turn, call_id, rows)
        if failed:
            raise CheckpointError("no pre-image for " + "; ".join(failed))
        return covered

    def _pre_image_row(self, rel: str, follow: bool) -> _Row | None:
        path = self._abs(rel)
        if follow:
            return self._row(rel, lambda: os.stat(path), path.read_bytes, lambda: os.readlink(path))
        # A rewind records what stands at the path itself, reached through real folders only: a
        # folder swapped for a link since is not read through (there is no file of ours there).
        try:
            with Folder(path.parent, follow=False) as folder:
                name, fd = path.name, folder.fd
                return self._row(rel, lambda: os.stat(name, dir_fd=fd, follow_symlinks=False),
                                 lambda: folder.read(name), lambda: os.readlink(name, dir_fd=fd))
        except (LinkInTheWay, FileNotFoundError):
            return _Row(rel, "created")

    def _row(self, rel: str, lstat: Callable[[], os.stat_result], read: Callable[[], bytes],
             readlink: Callable[[], str]) -> _Row | None:
        try:
            st = lstat()
        except FileNotFoundError:
            return _Row(rel, "created")
        if stat.S_ISLNK(st.st_mode):
            target = os.fsencode(readlink())
            return _Row(rel, "pre", self._put(target), len(target), stat.S_IFLNK)
        if stat.S_ISDIR(st.st_mode):
            return None
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        mode = _file_mode(st)
        if st.st_size > self.too_big:
            return _Row(rel, "pre", None, st.st_size, mode, too_big=True)
        data = read()
        if len(data) > self.too_big:
            return _Row(rel, "pre", None, len(data), mode, too_big=True)
        return _Row(rel, "pre", self._put(data), len(data), mode)

    # -- snapshots around calls that name no path ----------------------------------------------

    def snapshot(self) -> str:
        """The tree id of the whole workspace (ignored files left out). Call it before bash or
        an MCP tool and hand the id to ``changes_since`` after."""
        with self._guard("snapshot"):
            began = time.time()
            tree = self._git().snapshot()
            self._taken[tree] = min(self._taken.get(tree, began), began)
            return tree

    def changes_since(self, session_id: str, turn: int, call_id: str, tree: str) -> list[str]:
        """Snapshot again, diff with ``tree`` and record a pre-image for every file that changed
        (``pre``) or vanished (``deleted``), and ``created`` for every new one. Returns the changed
        relative paths, sorted."""
        with self._guard("after the call"):
            repo = self._git()
            after = repo.snapshot()
            changes = [c for c in repo.diff(tree, after) if c.old_mode != GITLINK and c.new_mode != GITLINK]
            began = self._taken.get(tree)
            if changes and began is not None:
                foreign = self._others_since(session_id, began)
                changes = [c for c in changes if c.path not in foreign]
            if not changes:
                return []
            post_images.record(self._db(), session_id, str(self.root),
                               [(c.path, post_images.ABSENT if c.status == "D" else c.new_sha) for c in changes],
                               SNAPSHOT)
            seen = self._seen(session_id, turn)
            rows: list[_Row] = []
            wanted: dict[str, list[_Row]] = {}
            for c in changes:
                if c.path in seen:
                    continue
                if c.status == "A":
                    rows.append(_Row(c.path, "created", origin=SNAPSHOT))
                    continue
                mode = c.old_mode if c.old_mode == SYMLINK else stat.S_IFREG | (c.old_mode & 0o777)
                row = _Row(c.path, "deleted" if c.status == "D" else "pre", mode=mode, origin=SNAPSHOT)
                rows.append(row)
                wanted.setdefault(c.old_sha, []).append(row)
            sizes = repo.sizes(list(wanted))
            small = []
            for sha, group in wanted.items():
                size = sizes.get(sha)
                for row in group:
                    row.size = size
                    row.too_big = size is not None and size > self.too_big
                if size is not None and size <= self.too_big:
                    small.append(sha)
            for sha, data in repo.blobs(small, sizes=sizes):
                archive_id = self._put(data)
                for row in wanted[sha]:
                    row.archive_id = archive_id
            self._insert(session_id, turn, call_id, rows, began)
            return sorted(c.path for c in changes)

    def _others_since(self, session_id: str, since: float) -> dict[str, str]:
        """Files another session named for a change (a write tool's pre-image, the post-image it
        left, a rewind's write) at or after ``since``: path → its session id. During a call's
        window they are that session's work, not the call's. Two overlapping bash calls cannot
        tell whose a file is: both claim it, and each one's rewind then reports a conflict."""
        return post_images.others_since(self._db(), session_id, str(self.root), since, (NAMED, REWOUND))

    # -- the /rewind timeline ------------------------------------------------------------------

    def marker(self, session_id: str, turn: int, title: str) -> None:
        """One marker row per user turn: its first words, for the /rewind list. Calling it again
        for the same turn replaces the title."""
        with self._guard("marker"):
            conn = self._db()
            words = first_words(title)
            conn.execute("BEGIN IMMEDIATE")
            try:
                cur = conn.execute(
                    "UPDATE checkpoints SET title=? WHERE session_id=? AND turn=? AND kind='marker'",
                    (words, session_id, turn),
                )
                if cur.rowcount == 0:
                    conn.execute(
                        "INSERT INTO checkpoints (session_id, turn, call_id, root, path, kind, title, "
                        "created_at) VALUES (?,?,'',?,'','marker',?,?)",
                        (session_id, turn, str(self.root), words, time.time()),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def timeline(self, session_id: str) -> list[dict[str, Any]]:
        """Turns newest first, ``{turn, files, title}``: what /rewind lists."""
        with self._guard("timeline"):
            return timeline(self._db(), session_id)

    # -- code rewind -----------------------------------------------------------------------------

    def restore(self, session_id: str, to_turn: int, new_turn: int, *, force: bool = False) -> Restored:
        """Put every file touched in turns ≥ ``to_turn`` back as it was when ``to_turn`` began:
        its earliest pre-image there is written back, a file created since is removed, a deleted
        one returns. What is about to be overwritten is first recorded under ``new_turn`` (and a
        marker added if that turn has none), so ``restore(…, to_turn=new_turn, …)`` undoes this.
        If that recording fails nothing is written. Returns the restored paths; the ones that
        cannot be restored are in ``.not_restorable``.

        Only this session's own work is undone: a file whose content is no longer what this
        session left there, or that another session changed since this session first did in
        those turns, is a conflict (``.conflicts``, with who changed it) and is left alone —
        unless ``force``."""
        with self._guard("rewind"):
            conn = self._db()
            rows = conn.execute(
                "SELECT path, kind, archive_id, mode, too_big, COALESCE(began, created_at) FROM checkpoints "
                "WHERE session_id=? "
                "AND root=? AND turn>=? AND kind!='marker' ORDER BY turn, id",
                (session_id, str(self.root), to_turn),
            ).fetchall()
            earliest: dict[str, tuple[str, str | None, int | None, int]] = {}
            first_at: dict[str, float] = {}
            for path, kind, archive_id, mode, too_big, created_at in rows:
                earliest.setdefault(path, (kind, archive_id, mode, too_big))
                first_at.setdefault(path, float(created_at))
            conflicts = {} if force else self._conflicts(session_id, first_at)

            # (path, archive id or None to remove the file, mode); bytes are fetched again when
            # written, so a large rewind never holds every pre-image in memory.
            plan: list[tuple[str, str | None, int | None]] = []
            skipped: dict[str, str] = {}
            for rel, (kind, archive_id, mode, too_big) in sorted(earliest.items()):
                if rel in conflicts:
                    continue
                target = self._abs(rel)
                linked = self._link_on_the_way(target, plan)
                if linked is not None:
                    skipped[rel] = linked
                    continue
                if kind == "created":
                    if os.path.lexists(target):
                        if os.path.isdir(target) and not os.path.islink(target):
                            skipped[rel] = "a folder now stands where the file was created"
                        else:
                            plan.append((rel, None, None))
                    continue
                if too_big:
                    skipped[rel] = f"its pre-image was over {self.too_big // (1024 * 1024)} MiB and was not kept"
                    continue
                if archive_id is None:
                    skipped[rel] = "no pre-image was kept (its blob was missing from the snapshot)"
                    continue
                try:
                    data = archive.get(conn, self.layout.archive, archive_id)
                except (archive.ArchiveMissing, OSError) as e:
                    skipped[rel] = f"its archived pre-image is missing ({e})"
                    continue
                if os.path.isdir(target) and not os.path.islink(target):
                    skipped[rel] = "a folder now stands where the file was"
                    continue
                if self._same(target, data, mode):
                    continue
                plan.append((rel, archive_id, mode))

            if plan:
                # Record first: if the rewind cannot be undone, it does not happen.
                self._record(session_id, new_turn, REWIND_CALL, [rel for rel, _, _ in plan], follow=False)
                self._ensure_marker(session_id, new_turn, f"rewind to T{to_turn}")
            done: list[str] = []
            left: list[tuple[str, str]] = []
            for rel, archive_id, mode in plan:
                try:
                    content = None if archive_id is None else archive.get(conn, self.layout.archive, archive_id)
                    self._write_back(self._abs(rel), content, mode)
                    done.append(rel)
                    left.append((rel, post_images.ABSENT if content is None else post_images.blob_id(content)))
                except archive.ArchiveMissing as e:
                    skipped[rel] = f"its archived pre-image is missing ({e})"
                except OSError as e:
                    skipped[rel] = f"could not be written: {e.strerror or e}"
            post_images.record(conn, session_id, str(self.root), left, REWOUND)  # the rewind's writes are ours too
            return Restored(done, skipped, conflicts)

    def _conflicts(self, session_id: str, first_at: dict[str, float]) -> dict[str, str]:
        """The files a rewind must not touch: changed by another session since this session
        first did (in the turns being undone), or whose content is no longer what this session
        left there. Path → a sentence saying who."""
        if not first_at:
            return {}
        conn = self._db()
        latest: dict[str, tuple[str, float]] = {}
        for path, sid, at in conn.execute(
            "SELECT path, session_id, MAX(t) FROM (SELECT path, session_id, at AS t FROM post_images WHERE root=? "
            "AND session_id!=? UNION ALL SELECT path, session_id, created_at FROM checkpoints WHERE root=? "
            "AND session_id!=? AND kind!='marker' AND created_at>=?) GROUP BY path",
            (str(self.root), session_id, str(self.root), session_id, min(first_at.values())),
        ).fetchall():
            latest[str(path)] = (str(sid), float(at))
        mine = post_images.left(conn, session_id, str(self.root))
        out: dict[str, str] = {}
        for rel, since in first_at.items():
            other = latest.get(rel)
            if other is not None and other[1] >= since:
                out[rel] = f"session {other[0]} changed it too"
                continue
            post = mine.get(rel)
            if post is None:
                continue  # recorded before post-images existed: nothing to compare
            try:
                now = post_images.current(self._abs(rel))
            except OSError as e:
                out[rel] = f"it cannot be read ({e.strerror or e})"
                continue
            if now != post:
                out[rel] = ("it was deleted since this session changed it" if now == post_images.ABSENT else
                            "it changed since this session left it (your editor, another program or session)")
        return out

    def _ensure_marker(self, session_id: str, turn: int, title: str) -> None:
        exists = self._db().execute(
            "SELECT 1 FROM checkpoints WHERE session_id=? AND turn=? AND kind='marker'", (session_id, turn)
        ).fetchone()
        if exists is None:
            self.marker(session_id, turn, title)

    @staticmethod
    def _same(target: Path, data: bytes, mode: int | None) -> bool:
        """Whether the file already is this pre-image (then a restore leaves it alone)."""
        try:
            if mode is not None and stat.S_ISLNK(mode):
                return os.path.islink(target) and os.fsencode(os.readlink(target)) == data
            st = os.lstat(target)  # a symlink where a file was is not "the same"
            if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
                return False
            if mode is not None and (st.st_mode & 0o111 != 0) != (mode & 0o111 != 0):
                return False
            return target.read_bytes() == data
        except OSError:
            return False

    @staticmethod
    def _write_back(target: Path, data: bytes | None, mode: int | None) -> None:
        """Remove the file (``data`` None), recreate a symlink, or write the bytes atomically with
        the recorded permission bits. Nothing planted since the checkpoint is followed
        (``cox.atomic``, strict): a symlink standing where the file was is itself replaced or
        removed, never written through or its target deleted (the recorded path was a file:
        named files are recorded under their resolved path), and a folder on the way that is now
        a symlink refuses the write (:class:`LinkInTheWay`)."""
        if data is None:
            remove_file(target, follow=False)
            return
        with Folder(target.parent, follow=False, create=True) as folder:
            if mode is not None and stat.S_ISLNK(mode):
                tmp = temp_name(target.name, ".cox-rewind")
                folder.symlink(os.fsdecode(data), tmp)  # symlink() never follows: exclusive
                try:
                    folder.replace(tmp, target.name)
                except BaseException:
                    folder.remove(tmp)
                    raise
                return
            perm = stat.S_IMODE(mode) if mode is not None else 0o644
            folder.write(target.name, data, mode=perm, suffix=".cox-rewind")

    def _link_on_the_way(self, target: Path, plan: list[tuple[str, str | None, int | None]]) -> str | None:
        """Why ``target`` cannot be restored when a folder on its way is now a symlink (planted
        after the checkpoint: recorded paths never go through one), else None. A link the plan
        replaces first (sorted order: ``sub`` before ``sub/a.txt``) does not count; the write
        checks again."""
        try:
            Folder(target.parent, follow=False).close()
        except LinkInTheWay as e:
            if any(rel == self._rel_lexical(e.link) for rel, _, _ in plan):
                return None
            return f"{e.strerror}; it was not restored through it"
        except OSError:
            pass  # a missing folder is made again by the write
        return None

    def _rel_lexical(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)
