"""The snapshot's fast path: a few changed paths, hashed in Python, layered over the last tree.

A snapshot through git is ``git add`` of the changed paths, ``git write-tree`` and, after the
call, ``git diff-tree`` and two ``git cat-file`` runs for the pre-images: five processes, each of
which reads (and two rewrite) the private index — 25–30 ms in a 10,000-file repository, on the
path between a writing bash call and the model seeing its result. When change notification
(``watch``) names every path that changed, none of that is needed:

- each named path is read here: a file's blob id is ``sha1("blob <size>\\0" + bytes)``, git's own
  object format, and the blob is written as a loose object into the private repository (so a
  later rewind, or git itself, finds it); a symlink's blob is its target; a folder is walked;
- what the path held before is the last real tree's entry (``git ls-tree`` once per tree) or an
  earlier step of this overlay;
- the differences are the snapshot's changes, recorded per step, so ``diff`` of two consecutive
  snapshots needs no git at all.

The state is then "the last real tree, plus these entries" under an id ``<tree>+<n>``. Whatever
this cannot vouch for (a nested repository, a big file, a path whose kind it does not know, too
many paths, an ignore check that failed) returns None and the caller takes the git path, which
writes a real tree again. Untracked paths are asked of ``git check-ignore`` (one run, only when
new files appeared), so an ignored build output is left out exactly as ``git add`` leaves it out.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Callable, Iterable
from dataclasses import field
from pathlib import Path

from cox.atomic import write_atomic
from cox.slim import dataclass

from .post_images import blob_id

GITLINK = 0o160000
SYMLINK = 0o120000
REGULAR, EXECUTABLE = 0o100644, 0o100755

FILE_MAX = 32 * 1024 * 1024
"""A changed file bigger than this goes through git (which streams it), not through memory."""
TOTAL_MAX = 64 * 1024 * 1024
"""At most this many bytes read for one step."""
ENTRIES_MAX = 2000
"""Beyond this many overlay entries the git path folds them into a real tree again."""

Entry = tuple[int, str]
"""(mode, blob id) as git stores them."""


@dataclass
class Step:
    """One snapshot on top of the previous one: the id before it and what changed."""

    before: str
    changes: list[tuple[str, Entry | None, Entry | None]]  # (path, old, new)


@dataclass
class Overlay:
    """Entries changed since the real tree ``base`` (None: the path is gone)."""

    base: str
    base_entries: dict[str, Entry] | None = None  # the base tree's, read when first needed
    entries: dict[str, Entry | None] = field(default_factory=dict)
    n: int = 0

    @property
    def id(self) -> str:
        return self.base if self.n == 0 else f"{self.base}+{self.n}"

    def get(self, rel: str) -> Entry | None:
        if rel in self.entries:
            return self.entries[rel]
        return (self.base_entries or {}).get(rel)

    def under(self, folder: str) -> set[str]:
        """Every path the current state holds below ``folder``."""
        prefix = folder + "/"
        found = {p for p in self.base_entries or {} if p.startswith(prefix)}
        for p, e in self.entries.items():
            if p.startswith(prefix):
                (found.add if e is not None else found.discard)(p)
        return found


class ObjectStore:
    """Loose objects of the private repository (written) and of its alternate (read)."""

    def __init__(self, objects: Path, alternate: Path | None) -> None:
        self.objects = objects
        self.alternate = alternate

    def put(self, sha: str, data: bytes) -> None:
        path = self.objects / sha[:2] / sha[2:]
        if path.exists():
            return
        write_atomic(path, zlib.compress(b"blob %d\0" % len(data) + data, 1), new_mode=0o444,
                     make_parents=True)

    def get(self, sha: str) -> bytes | None:
        """A loose blob's bytes, or None (packed, missing, not a blob): ask git then."""
        for folder in (self.objects, self.alternate):
            if folder is None:
                continue
            try:
                raw = zlib.decompress((folder / sha[:2] / sha[2:]).read_bytes())
            except (OSError, zlib.error):
                continue
            head, _, body = raw.partition(b"\0")
            if head.startswith(b"blob ") and int(head[5:]) == len(body):
                return body
        return None


class Reader:
    """Reads the named paths into entries; ``None`` from :meth:`read` means "use git"."""

    def __init__(self, root: Path, store: ObjectStore, state: Overlay) -> None:
        self.root = root
        self.store = store
        self.state = state
        self.read_bytes = 0

    def read(self, changed: Iterable[str], ignored: Callable[[list[str]], set[str] | None]
             ) -> list[tuple[str, Entry | None, Entry | None]] | None:
        now: dict[str, Entry | None] = {}
        for rel in sorted(changed):
            got = self._path(rel)
            if got is None:
                return None
            now.update(got)
        fresh = [p for p, e in now.items() if e is not None and self.state.get(p) is None]
        if fresh:
            skip = ignored(fresh)
            if skip is None:
                return None
            for p in skip:
                del now[p]
        out = []
        for p, new in sorted(now.items()):
            old = self.state.get(p)
            if old != new:
                out.append((p, old, new))
        return out

    def _path(self, rel: str) -> dict[str, Entry | None] | None:
        parts = rel.split("/")
        if ".git" in parts:
            return {}
        through_link = False
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            held = self.state.get(folder)
            if held is not None and held[0] == GITLINK:
                return {}  # inside a submodule: git records only its commit
            try:
                if not stat.S_ISDIR(os.lstat(self.root / folder).st_mode):
                    through_link = True  # a link (or a file) on the way: git sees no such path
                    break
            except FileNotFoundError:
                through_link = True
                break
            except OSError:
                return None
            if os.path.lexists(self.root / folder / ".git"):
                return None  # inside a nested repository git would record as a gitlink
        path = self.root / rel
        try:
            if through_link:
                raise FileNotFoundError(rel)
            st = os.lstat(path)
        except FileNotFoundError:
            gone: dict[str, Entry | None] = {p: None for p in self.state.under(rel)}
            if self.state.get(rel) is not None:
                gone[rel] = None
            return gone
        except OSError:
            return None
        if stat.S_ISDIR(st.st_mode):
            return self._folder(rel)
        out: dict[str, Entry | None] = {p: None for p in self.state.under(rel)}  # a folder became a file
        entry = self._entry(path, st)
        if entry is None:
            return None
        out[rel] = entry
        return out

    def _folder(self, rel: str) -> dict[str, Entry | None] | None:
        if os.path.lexists(self.root / rel / ".git"):
            return None
        held = self.state.get(rel)
        out: dict[str, Entry | None] = {p: None for p in self.state.under(rel)}
        if held is not None:
            out[rel] = None  # a file became a folder
        for dirpath, dirnames, filenames in os.walk(self.root / rel):
            if ".git" in dirnames or ".git" in filenames:
                return None
            for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                full = Path(dirpath) / name
                sub = full.relative_to(self.root).as_posix()
                try:
                    st = os.lstat(full)
                except FileNotFoundError:
                    continue
                except OSError:
                    return None
                entry = self._entry(full, st)
                if entry is None:
                    return None
                out[sub] = entry
            dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        return out

    def _entry(self, path: Path, st: os.stat_result) -> Entry | None:
        if stat.S_ISLNK(st.st_mode):
            data = os.fsencode(os.readlink(path))
            mode = SYMLINK
        elif stat.S_ISREG(st.st_mode):
            if st.st_size > FILE_MAX or self.read_bytes + st.st_size > TOTAL_MAX:
                return None
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                return None
            with os.fdopen(fd, "rb") as f:
                data = f.read()
            mode = EXECUTABLE if st.st_mode & stat.S_IXUSR else REGULAR
        else:
            return None  # a FIFO, a socket, a device: git's own rules
        self.read_bytes += len(data)
        sha = blob_id(data)
        self.store.put(sha, data)
        return mode, sha


def parse_ls_tree(out: bytes) -> dict[str, Entry]:
    """``git ls-tree -r -z --full-tree`` output: path -> (mode, id), blobs and gitlinks."""
    entries: dict[str, Entry] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, _kind, sha = meta.split(b" ")
        entries[os.fsdecode(path)] = (int(mode, 8), sha.decode("ascii"))
    return entries
