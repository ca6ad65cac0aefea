"""Write a checked plan all-or-nothing.

1. Stage: every new text goes to a temp file beside its target (same folder, so the final
   rename cannot cross filesystems), with the target's permission bits. A failure here (disk
   full, a read-only folder) removes the temp files and the folders made for them: nothing of
   the workspace changed.
2. Replace: each target is first hard-linked to a backup name beside it (a copy where links
   are not supported), then atomically replaced by its temp file, or unlinked for a removal. A
   reader never sees a missing or half-written file. If a replace fails, the ones already done
   are put back from their backups, in reverse order, and the error is raised.
3. On success the backups are removed.

Backups are needed because a rename destroys the old inode's name; keeping the pre-images in
memory would not restore permission bits or other links to the same inode.

Every step works in a :class:`cox.atomic.Folder` opened without following links (the paths are
confined, real paths): temporary and backup files are created exclusively under random names, a
folder swapped for a symlink since the patch was checked is refused, and a target that became a
link is replaced or unlinked itself, never written through.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from cox.atomic import Folder, temp_name

from .errors import PatchApplyError
from .plan import PatchPlan

__all__ = ["commit"]


class _Folders:
    """The folders a commit works in, each opened once (and made when missing), all closed at
    the end; ``made`` lists the folders created, outermost first."""

    def __init__(self) -> None:
        self.open: dict[Path, Folder] = {}
        self.made: list[Path] = []

    def get(self, folder: Path, *, create: bool = False) -> Folder:
        f = self.open.get(folder)
        if f is None:
            f = Folder(folder, follow=False, create=create)
            self.open[folder] = f
            self.made += f.made
        return f

    def close(self) -> None:
        for f in self.open.values():
            f.close()
        self.open.clear()


def _mode(plan: PatchPlan, target: Path) -> int | None:
    source = plan.mode_from.get(target, target)
    try:
        st = os.stat(source, follow_symlinks=False)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def _stage(folder: Folder, name: str, data: bytes, mode: int | None) -> str:
    # 0666 minus the umask for a new file, like any other; the source's bits for an update.
    return folder.temp(name, data, mode=mode, new_mode=0o666, suffix=".cox-new")


def _backup(folder: Folder, name: str) -> str | None:
    st = folder.entry(name)
    if st is None:
        return None
    backup = temp_name(name, ".cox-old")
    try:
        folder.hard_link(name, backup)
    except OSError:
        if not stat.S_ISREG(st.st_mode):
            raise
        backup = folder.temp(name, folder.read(name), mode=stat.S_IMODE(st.st_mode), suffix=".cox-old")
    return backup


def _undo(folders: _Folders, staged: dict[Path, tuple[Folder, str]]) -> None:
    for folder, tmp in staged.values():
        with contextlib.suppress(OSError):
            folder.remove(tmp)
    for made in reversed(folders.made):
        with contextlib.suppress(OSError):
            os.rmdir(made)


def commit(plan: PatchPlan) -> None:
    """Apply ``plan`` to the disk, all or nothing. Raises :class:`PatchApplyError` (after putting
    every file back) when the disk refuses a write."""
    folders = _Folders()
    try:
        _commit(plan, folders)
    finally:
        folders.close()


def _commit(plan: PatchPlan, folders: _Folders) -> None:
    staged: dict[Path, tuple[Folder, str]] = {}
    current: Path | None = None
    try:
        for current, data in plan.writes.items():
            folder = folders.get(current.parent, create=True)
            staged[current] = (folder, _stage(folder, current.name, data, _mode(plan, current)))
    except OSError as exc:
        _undo(folders, staged)
        raise PatchApplyError(f"Failed to write {current}: {exc.strerror or exc}; no file was changed") from exc
    done: list[tuple[Folder, str, str | None]] = []
    steps: list[tuple[Path, str | None]] = [*((p, tmp) for p, (_, tmp) in staged.items()),
                                            *((p, None) for p in plan.removes)]
    try:
        for current, tmp in steps:
            folder = folders.get(current.parent)
            backup = _backup(folder, current.name)
            try:
                if tmp is not None:
                    folder.replace(tmp, current.name)
                else:
                    folder.remove(current.name)
            except BaseException:
                if backup is not None:
                    with contextlib.suppress(OSError):
                        folder.remove(backup)
                raise
            done.append((folder, current.name, backup))
    except OSError as exc:
        for folder, name, backup in reversed(done):
            with contextlib.suppress(OSError):
                if backup is not None:
                    folder.replace(backup, name)
                else:
                    folder.remove(name)
        _undo(folders, staged)
        verb = "remove" if current in plan.removes else "write"
        raise PatchApplyError(f"Failed to {verb} {current}: {exc.strerror or exc}; "
                              "every file was put back as it was") from exc
    for folder, _, backup in done:
        if backup is not None:
            with contextlib.suppress(OSError):
                folder.remove(backup)
