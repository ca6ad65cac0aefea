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

The checkpointer runs in the caller's thread (a ToolCall actor, the session): it reads the files,
runs git and reads cox.db through a read-only connection, and hands every row to the store actor,
cox.db's one writer (``messages.Checkpoint`` / ``PostImages`` / ``Marker``, asked with a timeout;
one transaction per message, ``checkpoint_rows``). What it writes itself are files no reader can
reach before the store's row names them: a big pre-image's ``archive/<id>`` (staged, then named
by the row) and the private repository's git objects (content-addressed: an object nobody names
is garbage, never a wrong answer). Every failure reaches the caller as ``CheckpointError`` -- a
notice, never a failed turn.
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
from .actor import StorageError
from .checkpoint_git import GitError, PrivateRepo, clean_env, root_hash, which_git
from .checkpoint_rows import SCHEMA, TITLE_MAX, ensure_schema, first_words
from .layout import Layout
from .messages import ArchiveRow, Checkpoint, CheckpointRow, Marker, PostImages, StoreMessage, Sync
from .overlay import GITLINK, SYMLINK

__all__ = ["SCHEMA", "TITLE_MAX", "CheckpointError", "Checkpointer", "Restored", "ensure_schema", "first_words",
           "timeline"]

StoreRef = Callable[[], Any]
"""How the checkpointer reaches the store actor: called at each write (a supervised store that
restarted is found again), None when it is not running."""

log = get_logger(__name__)

_AVAILABLE: dict[tuple[str | None, str], tuple[bool, str]] = {}
"""``Checkpointer.available``'s answers, per (git path asked for, PATH)."""

TOO_BIG = 8 * 1024 * 1024
REWIND_CALL = "rewind"
STORE_WAIT_S = 30.0
"""The most a checkpoint waits for the store actor to write its rows (only a hang reaches it)."""

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


def _file_mode(st: os.stat_result) -> int:
    return stat.S_IFREG | stat.S_IMODE(st.st_mode)


class Checkpointer:
    """Pre-images and snapshots for one workspace root, written to cox.db and the archive."""

    def __init__(
        self,
        layout: Layout,
        root: Path,
        store: StoreRef | None = None,
        *,
        git_timeout: float = 60.0,
        too_big: int = TOO_BIG,
    ) -> None:
        self.layout = layout
        # Resolved once: the same folder reached through a symlink must share one private repo.
        self.root = Path(root).resolve()
        self._store = store
        self._own_store: Any = None  # started for a checkpointer made without one (tools, benches)
        self._conn: sqlite3.Connection | None = None  # read-only: the store actor writes
        self._staged: list[ArchiveRow] = []  # pre-images archived for the rows being built
        self.git_timeout = git_timeout
        self.too_big = too_big
        self._lock = threading.RLock()
        self._repo: PrivateRepo | None = None
        self._taken: dict[str, float] = {}  # snapshot tree id -> when the earliest such snapshot began

    # -- availability and plumbing ---------------------------------------------------------------

    @staticmethod
    def available(path: str | None = None) -> tuple[bool, str]:
        """Whether snapshots can run here: git on PATH (or ``path``) and answering. The reason is
        the sentence the session shows once when they cannot. Asked once per process and PATH
        (``git --version`` costs 5–20 ms, and a process may open thousands of sessions)."""
        key = (path, os.environ.get("PATH", ""))
        known = _AVAILABLE.get(key)
        if known is None:
            known = _AVAILABLE[key] = Checkpointer._probe(path)
        return known

    @staticmethod
    def _probe(path: str | None) -> tuple[bool, str]:
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
            if self._own_store is not None:
                self._own_store.stop(timeout=STORE_WAIT_S)
                self._own_store = None

    def _db(self) -> sqlite3.Connection:
        """cox.db, read-only. Opened after the store answered once, so the file and its tables
        exist (the store makes them when it starts)."""
        if self._conn is None:
            self._ask(Sync(""))
            self._conn = db.connect_ro(self.layout.db)
        return self._conn

    def _ask(self, message: StoreMessage) -> Any:
        """Have the store actor write (or answer) ``message``; every failure is a CheckpointError."""
        import pykka

        ref = self._store() if self._store is not None else self._private_store()
        if ref is None:
            raise CheckpointError("the store is not running, so nothing can be recorded")
        try:
            return ref.ask(message, timeout=STORE_WAIT_S)
        except pykka.Timeout:
            raise CheckpointError(f"the store did not record the checkpoint within {STORE_WAIT_S:.0f} s") from None
        except pykka.ActorDeadError:
            raise CheckpointError("the store stopped before it recorded the checkpoint") from None
        except StorageError as e:
            raise CheckpointError(str(e)) from e

    def _private_store(self) -> Any:
        """A checkpointer made without a store (a benchmark, a test of this module alone) starts
        its own store actor: rows are still written by a store's thread, as everywhere."""
        if self._own_store is None:
            from .actor import StoreActor

            self._own_store = StoreActor.start(self.layout)
        return self._own_store

    def _git(self) -> PrivateRepo:
        if self._repo is None:
            git = which_git()
            if git is None:
                raise CheckpointError("git is not on PATH: cannot snapshot the workspace")
            self._repo = PrivateRepo(git, self.repo_dir, self.root, self.git_timeout)
        return self._repo

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Serialise callers and turn every failure into one ``CheckpointError``. This side never
        holds a write transaction (its connection is read-only; the store writes each message in
        one transaction of its own), so an interrupt here cannot stall cox.db's writer. Blobs
        staged for rows that were never sent are dropped with the failure."""
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
                self._staged.clear()

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
        """Stage a pre-image for the rows being built: a big one's file is written here, its
        index row goes to the store with the checkpoint rows (``_insert``)."""
        row = archive.stage(self.layout.archive, data, kind="checkpoint")
        self._staged.append(row)
        return row.id

    def _insert(self, session_id: str, turn: int, call_id: str, rows: list[_Row], began: float | None = None) -> None:
        """The store writes the rows and the pre-images they name, in one transaction."""
        staged, self._staged = tuple(self._staged), []
        if not rows and not staged:
            return
        self._ask(Checkpoint(session_id, turn, call_id, str(self.root),
                             tuple(CheckpointRow(r.path, r.kind, r.archive_id, r.size, r.mode, r.too_big, r.origin)
                                   for r in rows), staged, began))

    def _post_images(self, session_id: str, posts: Iterable[tuple[str, str]], origin: str) -> None:
        """What this session left in these files, recorded by the store."""
        left = tuple(posts)
        if left:
            self._ask(PostImages(session_id, str(self.root), left, origin))

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
            self._post_images(session_id, [(rel, post_images.current(self._abs(rel))) for rel in rels], NAMED)

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
            self._post_images(session_id, [(c.path, post_images.ABSENT if c.status == "D" else c.new_sha)
                                           for c in changes], SNAPSHOT)
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
            self._ask(self.marker_message(session_id, turn, title))

    def marker_message(self, session_id: str, turn: int, title: str, only_if_missing: bool = False) -> Marker:
        """The store message that writes this turn's marker (the session sends it without waiting)."""
        return Marker(session_id, turn, str(self.root), title, only_if_missing)

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
            self._post_images(session_id, left, REWOUND)  # the rewind's writes are ours too
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
        self._ask(self.marker_message(session_id, turn, title, only_if_missing=True))

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
