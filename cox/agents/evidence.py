"""The evidence gate: a work-graph task counts as done only if what it says it changed is what
the engine saw change, all of it inside its scope, and it says what shows the work is done.

Before a task runs, its environment is snapshotted (:class:`Snapshots`): every file under the
workspace roots that cox's own listing sees (``cox.actors.tools.search.list_files``: ``.git``
never, what git's ignore rules hide skipped: the files grep and glob see) as path → (content
hash, mode). After it ends, a second snapshot; :func:`changed` is the difference (created,
modified, deleted, or only its mode changed). Paths are relative to the first root; a file of a
second root outside it is keyed by its absolute path, which no scope entry covers. A worktree
task is its own environment and is read by git in its worktree (:func:`worktree_changes`). The
child is told (:func:`instructions`, appended to its prompt) to end its answer with a fenced
``report`` block::

    ```report
    changed: ["src/a.py", "tests/test_a.py"]
    evidence: ran pytest tests/test_a.py: 3 passed
    ```

and :func:`judge` passes the task only if every seen path lies inside the task's scope (a
read-only task may change nothing), the claimed list equals the seen set, and the evidence is not
empty; otherwise the verdict's reason says which test failed and on which paths.

Why the attribution is exact. The scheduler (:mod:`cox.agents.graph`) never runs a writable task
beside any other task of its environment, so what changed between its two snapshots was changed
by it (or by the person meanwhile, which it is then asked to account for: a false failure, never
a false pass). Read-only tasks run beside each other but never beside a writer of their
environment, so a reader cannot corrupt a writer's attribution; and since a reader may change
nothing, a change seen while readers ran fails every reader whose window saw it (a batch started
together shares its "before" snapshot): a read-only task that writes is itself a failure and
never goes unnoticed, at worst with an innocent reader failing beside it.

What the gate cannot see: files git ignores (build output, ``.env``), symlinks (the listing skips
them), and what inotify misses (see :class:`Snapshots`); the scope check covers only what it sees.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from cox.protocol.interfaces import CancelToken
from cox.slim import dataclass

from .graph import in_scope

if TYPE_CHECKING:
    from cox.actors.store.watch import TreeWatch

Snapshot = dict[str, tuple[str, int]]
"""Workspace-relative ``/`` path (absolute for a second root outside the first) → (hash, mode)."""

REPORT_BLOCK = re.compile(r"```[ \t]*report[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)
_CHUNK = 1 << 20


def instructions(scope: Iterable[str], writable: bool) -> str:
    """What every task's prompt ends with: its bounds and the report block it must end with."""
    entries = list(scope)
    bounds = (f"You may change only files inside this scope (paths and globs relative to the workspace): "
              f"{', '.join(entries)}. A change anywhere else fails the task." if writable else
              "This task is read-only: do not create, change or delete any file. Any change fails the task.")
    return (
        f"\n\n---\n{bounds}\n"
        "The engine snapshots the workspace (your worktree, if you have one) before and after you run. End your final answer with this block, "
        "exactly once, as its last part:\n"
        "```report\n"
        "changed: [\"path/one\", \"path/two\"]\n"
        "evidence: what shows the task is done (the commands you ran and what they printed, what you checked)\n"
        "```\n"
        "`changed` is a JSON list of every file you created, changed or deleted, relative to the workspace "
        "([] when none); it must match what the engine saw exactly. `evidence` must not be empty."
    )


def _hash(path: str, size: int) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    h = hashlib.blake2b(digest_size=16)
    step = min(_CHUNK, size + 1)
    try:
        while chunk := os.read(fd, step):
            h.update(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return h.hexdigest()


class Snapshots:
    """Snapshots of one environment (the workspace roots), each cheaper than the first.

    The first is the full pass: cox's listing (git's, through a process), every listed file
    stat'ed and hashed. After it, the root's inotify watch (``cox.actors.store.watch.TreeWatch``,
    the checkpoints' own) says which paths changed since the last snapshot: only those are
    stat'ed again, and the listing is redone only when a path appeared that it did not hold (a
    created or renamed file or folder) or a ``.gitignore`` changed. When the watch cannot vouch
    (no inotify, an overflow, too many folders) it is the full pass again. A file is hashed again
    unless its device, inode, size, mtime and ctime equal what they were when it was last hashed
    and that ctime lies ``RACY_NS`` before that hashing began (git's "racily clean" case: a file
    written in the same clock tick as it was hashed could change again without a visible stat
    change). What the watch does not see, the gate does not either — the checkpoints' caveat:
    writes through a shared ``mmap``, and another machine's writes on a network file system.
    Not thread-safe: one caller (the graph's driver thread).
    """

    RACY_NS = 2_000_000_000

    def __init__(self, base: Path, roots: Iterable[Path]) -> None:
        self.base = os.path.realpath(base)
        self.roots = list(dict.fromkeys(Path(os.path.realpath(r)) for r in roots))
        self._listed: dict[Path, set[str]] = {}
        self._entries: dict[Path, dict[str, tuple[str, int]]] = {}
        self._watches: dict[Path, TreeWatch] = {}
        self._known: dict[str, tuple[tuple[int, int, int, int, int], int, str]] = {}
        self.listings = 0
        self.full_passes = 0

    def _changes(self, root: Path) -> set[str] | None:
        """What the watch saw change under ``root`` since the last call; None: rescan it all."""
        from cox.actors.store.watch import TreeWatch

        watch = self._watches.get(root)
        if watch is None:
            watch = self._watches[root] = TreeWatch(root)
            watch.start()  # before the first listing: nothing after it is missed
            return None
        return watch.drain()

    def _entry(self, full: str, began: int) -> tuple[str, int] | None:
        try:
            st = os.lstat(full)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        known = self._known.get(full)
        if known is not None and known[0] == key and st.st_ctime_ns < known[1] - self.RACY_NS:
            return known[2], stat.S_IMODE(st.st_mode)
        digest = _hash(full, st.st_size)
        if digest is None:
            return None
        self._known[full] = (key, began, digest)
        return digest, stat.S_IMODE(st.st_mode)

    def _root(self, root: Path, began: int, cancel: CancelToken | None) -> dict[str, tuple[str, int]]:
        from cox.actors.tools.search import list_files

        top = str(root).rstrip("/") + "/"
        changes = self._changes(root)
        listed, entries = self._listed.get(root), self._entries.get(root)
        if changes is not None and listed is not None and entries is not None and changes <= listed \
                and not any(p.rsplit("/", 1)[-1] == ".gitignore" for p in changes):
            if changes:
                entries = dict(entries)  # a snapshot given out is never changed afterwards
            for rel in changes:
                got = self._entry(top + rel, began)
                if got is None:
                    entries.pop(rel, None)
                else:
                    entries[rel] = got
        else:
            listed = self._listed[root] = set(list_files(root, root, cancel))
            self.listings += 1
            self.full_passes += 1
            entries = {}
            for rel in listed:
                got = self._entry(top + rel, began)
                if got is not None:
                    entries[rel] = got
        self._entries[root] = entries
        return entries

    def take(self, cancel: CancelToken | None = None) -> Snapshot:
        """The files of the roots as cox's listing sees them, keyed relative to ``base``."""
        out: Snapshot = {}
        began = time.time_ns()
        prefix = self.base.rstrip("/") + "/"
        if len(self.roots) == 1 and str(self.roots[0]).rstrip("/") + "/" == prefix:
            return self._root(self.roots[0], began, cancel)  # shared, never changed afterwards
        for root in self.roots:
            top = str(root).rstrip("/") + "/"
            inside = top.startswith(prefix) or top == prefix
            lead = top[len(prefix):] if inside else top
            for rel, entry in self._root(root, began, cancel).items():
                out[(lead + rel).replace(os.sep, "/")] = entry
        return out

    def close(self) -> None:
        for watch in self._watches.values():
            watch.close()
        self._watches.clear()


def snapshot(base: Path, roots: Iterable[Path], cancel: CancelToken | None = None) -> Snapshot:
    """One snapshot of the roots (see :class:`Snapshots`), keyed relative to ``base``."""
    snaps = Snapshots(base, roots)
    try:
        return snaps.take(cancel)
    finally:
        snaps.close()


def changed(before: Mapping[str, tuple[str, int]], after: Mapping[str, tuple[str, int]]) -> set[str]:
    """Paths created, deleted, or whose content or mode differs."""
    if before is after:
        return set()
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


@dataclass(frozen=True, slots=True)
class Claim:
    changed: tuple[str, ...]
    evidence: str


def parse_claim(text: str) -> Claim | str:
    """The last ``report`` block of the answer, or why it cannot be read."""
    blocks = REPORT_BLOCK.findall(text)
    if not blocks:
        return "its answer does not end with the ```report block (changed: [...], evidence: ...)"
    body = blocks[-1]
    m = re.search(r"^[ \t]*changed:[ \t]*(.*?)[ \t]*$", body, re.MULTILINE)
    if m is None:
        return "its report block has no 'changed:' line"
    try:
        listed = json.loads(m.group(1) or "null")
    except ValueError:
        return f"its report's 'changed:' is not a JSON list of paths: {m.group(1)[:200]!r}"
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        return "its report's 'changed:' must be a JSON list of path strings"
    e = re.search(r"^[ \t]*evidence:(.*)\Z", body, re.MULTILINE | re.DOTALL)
    evidence = e.group(1).strip() if e else ""
    return Claim(tuple(dict.fromkeys(_norm(p) for p in listed if p.strip())), evidence)


def _norm(path: str) -> str:
    parts = [p for p in path.strip().split("/") if p not in ("", ".")]
    return "/".join(parts) if not path.strip().startswith("/") else "/" + "/".join(parts)


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    reason: str
    seen: tuple[str, ...]
    evidence: str = ""


def _few(paths: Iterable[str]) -> str:
    items = sorted(paths)
    shown = ", ".join(items[:10])
    return shown + (f" and {len(items) - 10} more" if len(items) > 10 else "")


def judge(answer: str, seen: set[str], scope: Iterable[str], writable: bool) -> Verdict:
    """Whether the task's answer passes the gate, given what the engine saw change."""
    got = tuple(sorted(seen))
    claim = parse_claim(answer)
    if isinstance(claim, str):
        return Verdict(False, claim, got)
    entries = list(scope) if writable else []
    if not writable and seen:
        return Verdict(False, f"it is read-only but changed {_few(seen)}", got, claim.evidence)
    outside = [p for p in got if not in_scope(entries, p)]
    if outside:
        return Verdict(False, f"it changed {_few(outside)}, outside its scope ({', '.join(entries)})", got, claim.evidence)
    claimed = set(claim.changed)
    if claimed != seen:
        parts = []
        if claimed - seen:
            parts.append(f"it claims {_few(claimed - seen)} but the engine saw no change there")
        if seen - claimed:
            parts.append(f"it changed {_few(seen - claimed)} without listing it")
        return Verdict(False, "its report disagrees with the engine's snapshot: " + "; ".join(parts), got, claim.evidence)
    if not claim.evidence:
        return Verdict(False, "its report gives no evidence", got)
    return Verdict(True, "", got, claim.evidence)


def head_of(repo: Path) -> str | None:
    """The commit checked out in ``repo`` (what a worktree task's worktree starts from), or None."""
    from cox.gitsafe import run_git

    proc = run_git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}", filters=False)
    return proc.stdout.decode().strip() if proc is not None and proc.returncode == 0 else None


def worktree_changes(worktree: Path, branch: str | None, started_s: int, start: str | None) -> set[str] | str:
    """What a worktree task changed in its own worktree, or why git cannot say: every path whose
    work-tree state differs from where the branch stood when the task started (committed since,
    changed, deleted) plus untracked files git does not ignore.

    Where the branch stood: its reflog's newest entry from a second before ``started_s``, or, for a
    branch created during the task, the reflog's first entry (the commit it was cut from). A
    reused worktree's earlier commits are thus not this task's; a commit made in the very second
    the task started counts as the task's (a false failure, never a false pass). Without a
    reflog: the newest merge-base of HEAD with the parent's HEAD at the start (``start``) and with
    ``origin/HEAD``. Uncommitted changes a reused worktree already held are counted as the task's:
    git keeps no record of when they were made."""
    from cox.gitsafe import run_git

    def git(*args: str) -> bytes | None:
        proc = run_git(worktree, "-c", "core.quotepath=off", *args, filters=False)
        return proc.stdout if proc is not None and proc.returncode == 0 else None

    base = None
    log = git("reflog", "show", "--format=%H %gd", "--date=unix", f"refs/heads/{branch}", "--") if branch else None
    if log:
        entries = []
        for line in log.decode(errors="replace").splitlines():
            sha, _, selector = line.partition(" ")
            stamp = selector.rpartition("@{")[2].rstrip("}")
            if stamp.isdigit():
                entries.append((sha, int(stamp)))
        earlier = [sha for sha, when in entries if when < started_s]
        base = earlier[0] if earlier else (entries[-1][0] if entries else None)
    if base is None:
        bases = [b.decode().strip() for ref in (start, "origin/HEAD") if ref
                 for b in [git("merge-base", "HEAD", ref)] if b]
        if not bases:
            return f"git cannot tell what changed in the worktree {worktree}: no fork point with the workspace's HEAD"
        base = bases[0]
        for other in bases[1:]:
            if git("merge-base", "--is-ancestor", base, other) is not None:  # exit 0: other is newer
                base = other
    diff = git("diff", "--name-only", "--no-renames", "-z", base, "--")
    untracked = git("ls-files", "--others", "--exclude-standard", "-z")
    if diff is None or untracked is None:
        return f"git cannot tell what changed in the worktree {worktree}"
    return {os.fsdecode(p) for p in (diff + b"\0" + untracked).split(b"\0") if p}
