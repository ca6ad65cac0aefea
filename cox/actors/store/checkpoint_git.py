"""The private git repository behind the checkpoints of calls that name no path (bash, MCP).

A snapshot is ``git add -A`` + ``git write-tree`` in a bare repository of our own under
``$COX_HOME/checkpoints/<hash of root>/`` whose work tree is the workspace root. Everything here
exists to keep that git away from the user's things and the user's things away from it:

- ``GIT_DIR`` is the private repository and ``GIT_INDEX_FILE`` a private index, so the user's
  ``.git`` (index, hooks, config, refs) is never read or written. The user's repository is found
  by reading ``.git`` files in Python, never by running git in it: its config could name an
  fsmonitor or another command that would run.
- ``HOME``/``XDG_CONFIG_HOME`` point into the private folder, ``GIT_CONFIG_NOSYSTEM=1`` and
  ``GIT_CONFIG_GLOBAL=/dev/null``: the user's global and system config (aliases, hooks paths,
  filters, ``core.autocrlf``) cannot change what is stored. Every inherited ``GIT_*`` variable is
  dropped, so running cox from inside a git hook cannot redirect us to the user's repository.
- ``core.hooksPath=/dev/null``, ``core.fsmonitor=false`` and ``safe.directory=*`` go on every
  command line (command-line config wins over anything in a config file), and the environment
  carries ``cox.gitsafe``'s overrides for everything else a config can make git run.
- ``$GIT_DIR/info/attributes`` (highest precedence) unsets ``text``, ``eol``, ``filter``, ``ident``
  and ``working-tree-encoding`` so a workspace ``.gitattributes`` cannot make the stored blob differ
  from the bytes on disk: a pre-image must restore byte for byte.
- ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` is the user's objects folder when the root is inside a
  repository, so blobs git already has are found there and never copied.

The private index doubles as the stat cache (plus git's untracked cache), so a warm snapshot is
one stat pass over the work tree and a few milliseconds of process start. With change
notification (``watch``, inotify) it is less: no change since the last snapshot reuses its tree
without running git, a few changed paths are added alone; whatever the watch cannot vouch for
(its first use, an overflow, a changed ``.gitignore``, many paths) is the full pass.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cox.atomic import open_append, write_atomic
from cox.gitsafe import find_git, safe_env
from cox.slim import dataclass

from .overlay import ENTRIES_MAX, Entry, ObjectStore, Overlay, Reader, Step, parse_ls_tree
from .watch import TreeWatch

try:  # POSIX: serialise two cox processes snapshotting the same root (one private index).
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

# Unsets every attribute that would make a stored blob differ from the file's bytes.
_ATTRIBUTES = "* -text !eol -filter -ident -working-tree-encoding\n"

# Safety-critical settings go on the command line too: the private config file could be edited.
_CMDLINE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "safe.directory=*",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "commit.gpgSign=false",
    "core.quotePath=false",
    "gc.auto=0",
)

_PRIVATE_CONFIG = """\
[core]
\thooksPath = /dev/null
\tfsmonitor = false
\tautocrlf = false
\tsafecrlf = false
\tuntrackedCache = true
\tpreloadIndex = true
\tquotePath = false
[gc]
\tauto = 0
[commit]
\tgpgSign = false
[advice]
\taddEmbeddedRepo = false
\taddIgnoredFile = false
"""

RECENT = 16
"""Snapshot ids (and their steps) this process keeps to diff or write as trees later."""

LOOSE_HELD = 64 * 1024 * 1024
"""At most this many bytes of loose blobs read by ``sizes`` and held for ``blobs``."""

PARTIAL_MAX = 500
"""More changed paths than this since the last snapshot: the full pass is cheaper than the list."""



class GitError(Exception):
    """A git command failed, timed out or could not start; the message says which and why."""


@dataclass(frozen=True, slots=True)
class UserRepo:
    """Where the repository holding the workspace keeps its objects (and its info/exclude)."""

    objects: Path
    exclude: Path | None


@dataclass(frozen=True, slots=True)
class Change:
    """One line of ``git diff-tree --raw``: ``status`` is A (appeared), D (vanished), M or T."""

    status: str
    old_mode: int
    new_mode: int
    old_sha: str
    path: str
    new_sha: str = ""


def root_hash(root: Path) -> str:
    """The private repository's folder name: one per workspace root, stable across sessions."""
    return hashlib.sha256(os.fsencode(str(root))).hexdigest()[:16]


def find_user_repo(root: Path) -> UserRepo | None:
    """The repository ``root`` lives in (see :func:`cox.gitdirs.git_dirs`): its objects and its
    exclude file."""
    from cox.gitdirs import git_dirs

    found = git_dirs(root)
    if found is None:
        return None
    try:
        objects = (found[1] / "objects").resolve()
        if not objects.is_dir():
            return None
        exclude = found[1] / "info" / "exclude"
        return UserRepo(objects, exclude.resolve() if exclude.is_file() else None)
    except OSError:
        return None


def clean_env(home: Path, path: str | None = None) -> dict[str, str]:
    """The environment every git command runs in: the caller's minus any ``GIT_*`` variable,
    with config from the user's home and the system switched off, and ``cox.gitsafe``'s
    overrides (no fsmonitor, hooks, pager, transport, gpg …) as command-line configuration."""
    env = safe_env()  # no GIT_* inherited; cox.gitsafe's overrides as command-line config
    if path is not None:
        env["PATH"] = path
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_ADVICE="0",
        LC_ALL="C",
    )
    return env


class PrivateRepo:
    """A bare repository of cox's own whose work tree is the workspace root."""

    def __init__(self, git: str, git_dir: Path, root: Path, timeout: float) -> None:
        self.git = git
        self.git_dir = git_dir
        self.root = root
        self.timeout = timeout
        self.index = git_dir / "cox-index"
        self.home = git_dir / "home"
        self.user = find_user_repo(root)
        self.env = clean_env(self.home)
        self.env.update(
            GIT_DIR=str(git_dir),
            GIT_WORK_TREE=str(root),
            GIT_INDEX_FILE=str(self.index),
        )
        if self.user is not None:
            self.env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(self.user.objects)
        self._lock = threading.Lock()
        self._ready = False
        self._watch: TreeWatch | None = None
        self._state: Overlay | None = None  # the last snapshot this process took (overlay.py)
        self._states: dict[str, tuple[str, dict[str, Entry | None]]] = {}  # recent id -> (tree, entries)
        self._steps: dict[str, Step] = {}  # recent id -> how it came from the id before it
        self._trees: dict[str, str] = {}  # overlay id -> the real tree written for it
        self._loose: dict[str, bytes] = {}  # blobs ``sizes`` read from loose objects, for ``blobs``
        self.store = ObjectStore(git_dir / "objects", self.user.objects if self.user is not None else None)

    # -- plumbing ---------------------------------------------------------------------------

    def _config_args(self) -> list[str]:
        args: list[str] = []
        for item in _CMDLINE_CONFIG:
            args += ["-c", item]
        if self.user is not None and self.user.exclude is not None:
            # The user's .git/info/exclude is part of what "ignored" means in their checkout.
            args += ["-c", f"core.excludesFile={self.user.exclude}"]
        return args

    def run(self, *args: str, stdin: bytes | None = None, ok: tuple[int, ...] = (0,),
            timeout: float | None = None, index: Path | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run one git command (never through a shell), bounded by a timeout. ``index``: another
        index file than the private one."""
        cmd = [self.git, *self._config_args(), *args]
        env = self.env if index is None else {**self.env, "GIT_INDEX_FILE": str(index)}
        try:
            proc = subprocess.run(cmd, input=stdin, env=env, cwd=self.root, capture_output=True,
                                  timeout=self.timeout if timeout is None else timeout, check=False)
        except subprocess.TimeoutExpired as e:
            raise GitError(f"git {args[0]} timed out after {e.timeout:g} s in {self.root}") from e
        except OSError as e:
            raise GitError(f"git {args[0]} could not start: {e}") from e
        if proc.returncode not in ok:
            err = proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
            raise GitError(f"git {args[0]} failed: {err[-2000:]}")
        return proc

    def ensure(self) -> None:
        """Create the private repository on first use (no template: no sample hooks copied)."""
        if self._ready and (self.git_dir / "HEAD").is_file():
            return
        if not (self.git_dir / "HEAD").is_file():
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            env = clean_env(self.home)
            try:
                proc = subprocess.run(
                    [self.git, "-c", "init.defaultBranch=main", "init", "--bare", "--quiet",
                     "--template=", str(self.git_dir)],
                    env=env, capture_output=True, timeout=self.timeout, check=False)
            except subprocess.TimeoutExpired as e:
                raise GitError(f"git init timed out after {e.timeout:g} s") from e
            except OSError as e:
                raise GitError(f"git init could not start: {e}") from e
            if proc.returncode != 0:
                raise GitError(f"git init failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
            with open_append(self.git_dir / "config", text=True) as f:
                f.write(_PRIVATE_CONFIG)
            write_atomic(self.git_dir / "workspace-root", (str(self.root) + "\n").encode())
        (self.git_dir / "info").mkdir(exist_ok=True)
        attributes = self.git_dir / "info" / "attributes"
        if not attributes.is_file() or attributes.read_text(encoding="utf-8") != _ATTRIBUTES:
            write_atomic(attributes, _ATTRIBUTES.encode(), new_mode=0o644)
        exclude, wanted = self.git_dir / "info" / "exclude", self._own_exclude()
        if (exclude.read_text(encoding="utf-8") if exclude.is_file() else "") != wanted:
            write_atomic(exclude, wanted.encode(), new_mode=0o644)
        self.home.mkdir(exist_ok=True)
        self._ready = True

    def _own_exclude(self) -> str:
        """cox's home (``$COX_HOME``, which holds this repository) when it lies inside the
        workspace — cox run in ``~``, or a home under the project: snapshotting it would record
        cox's own archive and database, and fail on temporary files that vanish mid-walk."""
        rel = self._own_rel()
        if not rel:
            return ""
        pattern = "/" + rel.replace("\\", "\\\\")
        return "".join("\\" + c if c in "*?[!#" else c for c in pattern) + "/\n"

    def _own_rel(self) -> str:
        """cox's home relative to the workspace root, '' when it is not inside (or is the root)."""
        home = self.git_dir.parent.parent.resolve()
        try:
            rel = home.relative_to(self.root)
        except ValueError:
            return ""
        return "" if rel == Path(".") else rel.as_posix()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One snapshot at a time per root: in this process (threads) and across processes."""
        with self._lock:
            self.git_dir.mkdir(parents=True, exist_ok=True)
            if fcntl is None:  # pragma: no cover
                yield
                return
            with open_append(self.git_dir / "cox.lock") as f:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    # -- the three operations ------------------------------------------------------------------

    def snapshot(self) -> str:
        """The id of the whole work tree as it is now: a tree id, or ``<tree>+<n>`` when the
        fast path (overlay.py) layered the changed paths over the last tree."""
        with self.locked():
            self.ensure()
            changed = self._changed()
            state = self._state
            if changed is not None and state is not None:
                if not changed:
                    return state.id  # nothing changed since: the same snapshot, no git run
                fast = self._fast(state, changed)
                if fast is not None:
                    return fast
            # The git path: the private index is the last real tree's; the overlay's paths and
            # the changed ones differ from it on disk, so adding them makes it the disk's again.
            pending = set(changed or ()) | (set(state.entries) if state is not None else set())
            self._state = None
            if changed is None or state is None or not self._add_paths(pending):
                # --ignore-errors: an unreadable file or one removed while we scan is left out of
                # the snapshot instead of failing it (git then exits 1 without "fatal:").
                proc = self.run("add", "--all", "--ignore-errors", ok=(0, 1))
                if proc.returncode != 0 and b"fatal:" in proc.stderr:
                    raise GitError(f"git add failed: {proc.stderr.decode('utf-8', 'replace').strip()[-2000:]}")
            tree = self.run("write-tree").stdout.decode("ascii").strip()
            if len(tree) < 40:
                raise GitError(f"git write-tree printed no tree id: {tree!r}")
            self._state = Overlay(tree)
        return tree

    def _fast(self, state: Overlay, changed: set[str]) -> str | None:
        """Layer ``changed`` over the last snapshot without git (overlay.py); None: take the git path."""
        if len(state.entries) + len(changed) > ENTRIES_MAX:
            return None
        try:
            if state.base_entries is None:
                state.base_entries = parse_ls_tree(self.run("ls-tree", "-r", "-z", "--full-tree", state.base).stdout)
            got = Reader(self.root, self.store, state).read(changed, self._ignored)
        except (GitError, OSError, ValueError):
            return None
        if got is None:
            return None
        if not got:
            return state.id  # touched, not changed
        before = state.id
        self._remember(before, state)
        for rel, _old, new in got:
            state.entries[rel] = new
        state.n += 1
        self._steps[state.id] = Step(before, got)
        self._remember(state.id, state)
        return state.id

    def _remember(self, sid: str, state: Overlay) -> None:
        if "+" not in sid or sid in self._states:
            return
        self._states[sid] = (state.base, dict(state.entries))
        for kept in (self._states, self._steps):
            while len(kept) > RECENT:
                kept.pop(next(iter(kept)))

    def _ignored(self, paths: list[str]) -> set[str] | None:
        """Which of these untracked paths ``git add --all`` would leave out; None if unknown."""
        try:
            proc = self.run("check-ignore", "-z", "--stdin", "--no-index",
                            stdin=b"".join(os.fsencode(p) + b"\0" for p in paths), ok=(0, 1))
        except GitError:
            return None
        return {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}

    def tree(self, sid: str) -> str:
        """A real tree id for a snapshot id (an overlay's is written through a scratch index)."""
        with self.locked():
            return self._tree(sid)

    def _tree(self, sid: str) -> str:
        if "+" not in sid:
            return sid
        if sid in self._trees:
            return self._trees[sid]
        if sid not in self._states:
            raise GitError(f"snapshot {sid} is no longer known to this process")
        base, entries = self._states[sid]
        scratch = self.git_dir / f"cox-index-{os.getpid()}-{threading.get_ident()}"
        try:
            self.run("read-tree", base, index=scratch)
            info = b"".join((f"{e[0]:o} {e[1]}" if e is not None else "0 " + "0" * 40).encode()
                            + b"\t" + os.fsencode(p) + b"\0" for p, e in sorted(entries.items()))
            if info:
                self.run("update-index", "-z", "--index-info", stdin=info, index=scratch)
            tree = self.run("write-tree", index=scratch).stdout.decode("ascii").strip()
        finally:
            scratch.unlink(missing_ok=True)
        self._trees[sid] = tree
        while len(self._trees) > RECENT:
            self._trees.pop(next(iter(self._trees)))
        return tree

    def _changed(self) -> set[str] | None:
        """The paths changed since the last snapshot, or None when only a full pass can say."""
        if self._watch is None:
            own = self._own_rel()
            watch = TreeWatch(self.root, (lambda rel: rel == own or rel.startswith(own + "/")) if own else None)
            self._watch = watch
            watch.start()  # before the first full pass: nothing after it is missed
            return None
        changed = self._watch.drain()
        if changed is None or len(changed) > PARTIAL_MAX:
            return None
        if any(os.path.basename(p) == ".gitignore" for p in changed):
            return None  # what is ignored changed: files elsewhere may appear or vanish
        return changed

    def _add_paths(self, changed: set[str]) -> bool:
        """Bring just these paths up to date in the private index (literal pathspecs, never
        patterns); False when git refused, and the caller does the full pass."""
        present = [p for p in sorted(changed) if os.path.lexists(self.root / p)]
        kept = set(present)
        gone = [p for p in sorted(changed) if p not in kept]
        for args, paths in ((("add", "--all", "--ignore-errors"), present),
                            (("rm", "-q", "-r", "--cached", "--ignore-unmatch"), gone)):
            if not paths:
                continue
            stdin = b"".join(os.fsencode(p) + b"\0" for p in paths)
            try:
                proc = self.run("--literal-pathspecs", *args, "--pathspec-from-file=-", "--pathspec-file-nul",
                                stdin=stdin, ok=(0, 1))
            except GitError:
                return False
            if proc.returncode != 0 and b"fatal:" in proc.stderr:
                return False
        return True

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def diff(self, before: str, after: str) -> list[Change]:
        """What differs between two snapshots, file by file (renames split into D + A)."""
        if before == after:
            return []
        step = self._steps.get(after)
        if step is not None and step.before == before:  # the fast path's own record: no git
            return [Change("A" if old is None else "D" if new is None else "M",
                           old[0] if old is not None else 0, new[0] if new is not None else 0,
                           old[1] if old is not None else "0" * 40, rel, new[1] if new is not None else "0" * 40)
                    for rel, old, new in step.changes]
        with self.locked():
            before, after = self._tree(before), self._tree(after)
        out = self.run("diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv",
                       before, after).stdout
        parts = out.split(b"\0")
        changes: list[Change] = []
        i = 0
        while i + 1 < len(parts):
            meta = parts[i].decode("ascii")
            path = os.fsdecode(parts[i + 1])
            i += 2
            if not meta.startswith(":"):
                continue
            old_mode, new_mode, old_sha, new_sha, status = meta[1:].split(" ")
            changes.append(Change(status[0], int(old_mode, 8), int(new_mode, 8), old_sha, path, new_sha))
        return changes

    def sizes(self, shas: list[str]) -> dict[str, int]:
        """The size of each blob, without reading it (``cat-file --batch-check``)."""
        if not shas:
            return {}
        sizes: dict[str, int] = {}
        self._loose.clear()
        held = 0
        for sha in shas:  # the fast path's own blobs are loose objects: read here, no git
            data = self.store.get(sha) if held < LOOSE_HELD else None
            if data is not None:
                sizes[sha] = len(data)
                self._loose[sha] = data
                held += len(data)
        shas = [sha for sha in shas if sha not in sizes]
        if not shas:
            return sizes
        out = self.run("cat-file", "--batch-check", stdin=("\n".join(shas) + "\n").encode()).stdout
        for line in out.decode("ascii", "replace").splitlines():
            bits = line.split()
            if len(bits) == 3 and bits[1] == "blob":
                sizes[bits[0]] = int(bits[2])
        return sizes

    def blobs(self, shas: list[str], budget: int = 64 * 1024 * 1024,
              sizes: dict[str, int] | None = None) -> Iterator[tuple[str, bytes]]:
        """The bytes of each blob, read in batches of at most ``budget`` bytes so a bash call
        that rewrote many files never holds all their pre-images in memory at once. ``sizes``:
        what :meth:`sizes` already said (saves a git run)."""
        if sizes is None:
            sizes = self.sizes(shas)
        batch: list[str] = []
        total = 0
        for sha in shas:
            if sha in self._loose:
                yield sha, self._loose.pop(sha)
                continue
            if sha not in sizes:
                continue
            if batch and total + sizes[sha] > budget:
                yield from self._read_batch(batch)
                batch, total = [], 0
            batch.append(sha)
            total += sizes[sha]
        if batch:
            yield from self._read_batch(batch)

    def _read_batch(self, shas: list[str]) -> Iterator[tuple[str, bytes]]:
        out = self.run("cat-file", "--batch", stdin=("\n".join(shas) + "\n").encode()).stdout
        pos = 0
        while pos < len(out):
            nl = out.index(b"\n", pos)
            header = out[pos:nl].decode("ascii", "replace").split()
            pos = nl + 1
            if len(header) != 3:  # "<sha> missing"
                continue
            size = int(header[2])
            yield header[0], out[pos:pos + size]
            pos += size + 1


def which_git(path: str | None = None) -> str | None:
    """The git executable on PATH (or on ``path``), or None; absolute folders only
    (``cox.gitsafe.find_git``)."""
    return find_git(path)
