"""cox's own file writes: whole and atomic, and never through a link someone planted.

A repository (or a command the model ran) can leave a symlink where cox is about to write: at a
temporary name cox would use (``.hello.txt.cox-tmp -> ~/.bashrc`` once overwrote the user's shell
start-up file), at the target itself, or in place of a folder on the way (``ws/sub -> /etc``).
So every write here, for edited files, rewinds, the archive, the rollout and cox's own stores:

- works inside one opened folder (:class:`Folder`): the temporary file, the rename and any
  removal are made relative to that folder's descriptor, so nothing swapped in on the way after
  it was opened is followed. With ``follow=False`` (workspace files, whose path the caller has
  already resolved and confined) the folder is reached component by component with
  ``O_NOFOLLOW``: a symlink anywhere on the way is refused with :class:`LinkInTheWay`;
- creates its temporary file exclusively (``O_CREAT|O_EXCL|O_NOFOLLOW``) under a random name, so
  nothing that already exists, a planted link included, is ever opened for writing;
- renames it over the target (``os.replace``): a symlink at the target is replaced by the file,
  never written through, and a hard link elsewhere keeps the old bytes. A reader sees the old
  bytes or the new ones, never half of either; the temporary file is removed if anything fails.

Appends (the rollout, logs) open with ``O_NOFOLLOW`` (:func:`open_append`); a file about to be
rewritten (``edit``, a patch) is read the same way (:func:`read_file`), so a link swapped in after
the path was confined cannot pull another file's bytes into the workspace.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from types import TracebackType
from typing import IO, Literal, overload

__all__ = ["Folder", "LinkInTheWay", "open_append", "read_file", "remove_file", "temp_name", "write_atomic"]

# O_PATH: a folder the user may only traverse (no read permission) can still be stepped through.
_DIR = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC
NAME_KEEP = 200  # characters of the target's name kept in a temporary name (names stop at 255 bytes)


class LinkInTheWay(OSError):
    """A symlink where cox will not follow one: a folder on the way to a file it writes or
    removes (strict mode), or the file it reads to rewrite."""

    def __init__(self, link: Path, path: Path) -> None:
        try:
            to = f" (to {os.readlink(link)})"
        except OSError:
            to = ""
        super().__init__(errno.ELOOP, f"{link} is a symlink{to}: cox does not write, rewrite or remove a "
                                      "file through a link it did not resolve itself")
        self.link = link
        self.path = path


class Folder:
    """One open folder; every entry operation is relative to its descriptor.

    ``follow=False``: every component of ``path`` must be a real folder (``O_NOFOLLOW`` at each
    step), else :class:`LinkInTheWay`. ``create``: make the missing folders (recorded in
    ``made``, outermost first), each with ``mkdir`` relative to its parent, which never follows
    a link either."""

    def __init__(self, path: str | os.PathLike[str], *, follow: bool = True, create: bool = False) -> None:
        self.path = Path(os.path.normpath(os.path.abspath(path)))
        self.made: list[Path] = []
        self.fd = self._open_strict(create) if not follow else self._open_following(create)

    def _open_following(self, create: bool) -> int:
        if create and not self.path.is_dir():
            missing = [p for p in (self.path, *self.path.parents) if not p.exists()]
            self.path.mkdir(parents=True, exist_ok=True)
            self.made = list(reversed(missing))
        return os.open(self.path, _DIR)

    def _open_strict(self, create: bool) -> int:
        fd = os.open("/", _DIR)
        here = Path("/")
        try:
            for part in self.path.parts[1:]:
                here = here / part
                try:
                    nfd = self._step(fd, part, here)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                        self.made.append(here)
                    except FileExistsError:
                        pass  # made meanwhile; the open below checks what it is
                    nfd = self._step(fd, part, here)
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _step(self, fd: int, part: str, here: Path) -> int:
        try:
            return os.open(part, _DIR | _NOFOLLOW, dir_fd=fd)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
                raise LinkInTheWay(here, self.path) from None
            raise

    # -- entries ---------------------------------------------------------------------------------

    def entry(self, name: str) -> os.stat_result | None:
        """``lstat`` of ``name`` in this folder (a link is itself, not its target), or None."""
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def temp(self, name: str, data: bytes, *, mode: int | None = None, new_mode: int = 0o600,
             suffix: str = ".tmp", fsync: bool = False) -> str:
        """A new file holding ``data`` beside ``name``, created exclusively under a random name
        (returned). ``mode``: its exact permission bits; else ``new_mode`` minus the umask."""
        while True:
            tmp = temp_name(name, suffix)
            try:
                fd = os.open(tmp, _NEW, new_mode, dir_fd=self.fd)
                break
            except FileExistsError:
                continue  # taken (planted, or a 1 in 4 billion draw): another name
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                if mode is not None:
                    os.fchmod(f.fileno(), mode)
                if fsync:
                    f.flush()
                    os.fsync(f.fileno())
        except BaseException:
            self._discard(tmp)
            raise
        return tmp

    def read(self, name: str) -> bytes:
        """The bytes of the regular file ``name`` (``O_NOFOLLOW``: a link there is an error, and
        so is a FIFO or a device, which could block or never end)."""
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        except OSError as e:
            if e.errno == errno.ELOOP and _is_link(self.fd, name):
                raise LinkInTheWay(self.path / name, self.path / name) from None
            raise
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise OSError(errno.EINVAL, f"{self.path / name} is not a regular file")
            return f.read()

    def replace(self, src: str, dst: str) -> None:
        """Rename ``src`` over ``dst`` (a link at ``dst`` is replaced, not followed)."""
        os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def remove(self, name: str) -> None:
        """Unlink ``name``: a symlink is removed itself, its target is left alone."""
        os.unlink(name, dir_fd=self.fd)

    def hard_link(self, src: str, dst: str) -> None:
        """A second name for ``src``'s own inode (a symlink's inode if ``src`` is one)."""
        os.link(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)

    def symlink(self, target: str, name: str) -> None:
        os.symlink(target, name, dir_fd=self.fd)

    def write(self, name: str, data: bytes, *, mode: int | None = None, keep_mode: bool = False,
              new_mode: int = 0o600, fsync: bool = False, suffix: str = ".tmp") -> None:
        """Replace ``name`` with ``data`` atomically. ``keep_mode``: the permission bits of the
        regular file there now (a link there is not asked: its target is none of our business)."""
        if keep_mode and mode is None:
            st = self.entry(name)
            if st is not None and stat.S_ISREG(st.st_mode):
                mode = stat.S_IMODE(st.st_mode)
        tmp = self.temp(name, data, mode=mode, new_mode=new_mode, suffix=suffix, fsync=fsync)
        try:
            self.replace(tmp, name)
        except BaseException:
            self._discard(tmp)
            raise

    def _discard(self, name: str) -> None:
        try:
            os.unlink(name, dir_fd=self.fd)
        except OSError:
            pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def why(exc: BaseException) -> str:
    """An OSError in words a person can act on: ``no space left on device (ENOSPC)``."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"{(exc.strerror or str(exc)).lower()} ({errno.errorcode.get(exc.errno, exc.errno)})"
    return str(exc) or type(exc).__name__


def temp_name(name: str, suffix: str) -> str:
    """A random hidden name beside ``name`` (``.NAME.<8 hex><suffix>``). Only for an operation
    that fails when the name exists (``O_EXCL``, ``link``, ``symlink``), never for a plain open."""
    return f".{name[:NAME_KEEP]}.{os.urandom(4).hex()}{suffix}"


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def write_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None, keep_mode: bool = False,
                 new_mode: int = 0o600, fsync: bool = False, suffix: str = ".tmp", follow: bool = True,
                 make_parents: bool = False) -> None:
    """Replace ``path`` with ``data``. ``mode``: the new file's exact permission bits;
    ``keep_mode``: those of the file there now; otherwise ``new_mode`` minus the umask (default
    0600: cox's own files). ``fsync``: on disk before the rename (for what must survive a power
    cut, not for caches). ``follow=False``: no folder on the way may be a symlink (workspace
    files); ``make_parents``: create missing folders first."""
    p = Path(path)
    with Folder(p.parent, follow=follow, create=make_parents) as folder:
        folder.write(p.name, data, mode=mode, keep_mode=keep_mode, new_mode=new_mode, fsync=fsync, suffix=suffix)


def read_file(path: str | os.PathLike[str], *, follow: bool = False) -> bytes:
    """The bytes of the regular file ``path`` as a writer about to replace it sees them: no link
    at the name, and with ``follow=False`` (the default) none on the way either."""
    p = Path(path)
    with Folder(p.parent, follow=follow) as folder:
        return folder.read(p.name)


def remove_file(path: str | os.PathLike[str], *, follow: bool = False) -> None:
    """Unlink ``path`` itself (a symlink, not what it points to); with ``follow=False`` (the
    default) no folder on the way may be a symlink."""
    p = Path(path)
    with Folder(p.parent, follow=follow) as folder:
        folder.remove(p.name)


@overload
def open_append(path: str | os.PathLike[str], *, text: Literal[False] = ..., mode: int = ...) -> IO[bytes]: ...
@overload
def open_append(path: str | os.PathLike[str], *, text: Literal[True], mode: int = ...) -> IO[str]: ...
def open_append(path: str | os.PathLike[str], *, text: bool = False, mode: int = 0o600) -> IO[bytes] | IO[str]:
    """Open ``path`` for appending (created with ``mode`` minus the umask if missing) without
    following a symlink there: a planted link is an error, not a way out."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        if text:
            return os.fdopen(fd, "a", encoding="utf-8")
        return os.fdopen(fd, "ab")
    except BaseException:
        os.close(fd)
        raise
