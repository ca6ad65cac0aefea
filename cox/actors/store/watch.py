"""Change notification for the checkpoint snapshots: which paths under a workspace changed.

A snapshot is a stat pass over the whole work tree (``git add --all``), paid twice around every
writing bash call — about 100 ms in a 10,000-file repository. With inotify (Linux) the private
repository knows which paths changed since its last snapshot: none means the last tree still
stands (no git at all), a few means ``git add`` of just those paths. Anything it cannot vouch
for — no inotify, the watch limit reached, a queue overflow, an error — makes :meth:`drain`
return None and the caller does the full pass, so a missed event can only cost time.

inotify reports every writer (another session, the person's editor) just as the stat pass saw
them: what the checkpoint files as a call's own is unchanged; only the cost is. What inotify
does not see: writes through a shared ``mmap`` and changes made by another machine on a network
file system; a folder renamed inside the tree restarts the watch (the full pass).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
from collections.abc import Callable
from pathlib import Path

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
_HEADER = struct.Struct("iIII")
MAX_WATCHES = 20_000  # beyond this many folders the stat pass is the better deal


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.inotify_init1  # noqa: B018 - present?
        return libc
    except (OSError, AttributeError):
        return None


class TreeWatch:
    """inotify watches on every folder under ``root`` (``skip`` leaves some out, ``.git`` always)."""

    def __init__(self, root: Path, skip: Callable[[str], bool] | None = None) -> None:
        self.root = root
        self.skip = skip or (lambda rel: False)
        self.fd = -1
        self.wds: dict[int, str] = {}  # watch descriptor -> folder, relative ('' = the root)
        self.changed: set[str] = set()
        self.broken = True  # until start() succeeds: "cannot vouch", full pass
        self.given_up = False  # too many folders (or no inotify): never restarted, full passes only
        self._libc = _libc()

    @staticmethod
    def available() -> bool:
        """Whether this system has inotify (Linux)."""
        return _libc() is not None

    def start(self) -> bool:
        """Watch the tree; False (and a full pass every time) when inotify is not available."""
        libc = self._libc
        if libc is None or self.fd >= 0:
            return False
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return False
        self.fd = fd
        self.broken = not self._watch_tree("")
        if self.broken:  # a tree this big would be walked again at every snapshot: stop trying
            self.given_up = True
            self.close()
        return not self.broken

    def _watch_tree(self, rel: str) -> bool:
        """Watch ``rel`` and every folder below it (a real folder, never through a link)."""
        stack = [rel]
        while stack:
            d = stack.pop()
            if not self._add(d):
                return False
            try:
                with os.scandir(self.root / d if d else self.root) as it:
                    for entry in it:
                        if entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                            sub = f"{d}/{entry.name}" if d else entry.name
                            if not self.skip(sub):
                                stack.append(sub)
            except FileNotFoundError:
                continue  # gone already: its parent's event names it
            except OSError:
                return False
        return True

    def _add(self, rel: str) -> bool:
        assert self._libc is not None
        if len(self.wds) >= MAX_WATCHES:
            return False
        path = os.fsencode(str(self.root / rel if rel else self.root))
        wd = self._libc.inotify_add_watch(self.fd, path, MASK)
        if wd < 0:
            return ctypes.get_errno() in (errno.ENOENT, errno.ENOTDIR)  # vanished: its parent tells
        self.wds[wd] = rel
        return True

    def drain(self) -> set[str] | None:
        """The relative paths changed since the last drain, or None when that is not known
        (then the caller scans everything, and the watch starts afresh from that scan)."""
        if self.fd < 0 or self.given_up:
            return None
        while not self.broken:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                self.broken = True
                break
            self._parse(data)
        if self.broken:
            # Start afresh before the caller's full pass: nothing after this moment is missed.
            self.close()
            self.changed.clear()
            self.start()
            return None
        out, self.changed = self.changed, set()
        return out

    def _parse(self, data: bytes) -> None:
        pos = 0
        while pos + _HEADER.size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, pos)
            name = data[pos + _HEADER.size: pos + _HEADER.size + length].rstrip(b"\0")
            pos += _HEADER.size + length
            if mask & IN_Q_OVERFLOW:
                self.broken = True
                return
            folder = self.wds.get(wd)
            if mask & IN_IGNORED:
                self.wds.pop(wd, None)
                continue
            if folder is None or mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                continue  # the parent's own event names the folder
            if not name:
                continue  # the folder's own attributes
            entry = os.fsdecode(name)
            if entry == ".git":
                continue
            rel = f"{folder}/{entry}" if folder else entry
            if self.skip(rel):
                continue
            self.changed.add(rel)
            if mask & IN_ISDIR and mask & IN_MOVED_FROM:
                # The watches below it now name the old path: only a fresh start is exact.
                self.broken = True
                return
            if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO) and not self._watch_tree(rel):
                self.broken = True
                return

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.wds.clear()
