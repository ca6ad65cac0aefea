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
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

from .errors import PatchApplyError
from .plan import PatchPlan

__all__ = ["commit"]


def _sibling(path: Path, tag: str) -> Path:
    return path.with_name(f".{path.name}.cox-{tag}-{os.urandom(4).hex()}")


def _makedirs(folder: Path, made: list[Path]) -> None:
    missing: list[Path] = []
    for p in [folder, *folder.parents]:
        if p.is_dir():
            break
        missing.append(p)
    for p in reversed(missing):
        os.mkdir(p)
        made.append(p)


def _mode(plan: PatchPlan, target: Path) -> int | None:
    source = plan.mode_from.get(target, target)
    try:
        return stat.S_IMODE(os.stat(source).st_mode)
    except OSError:
        return None


def _stage(target: Path, data: bytes, mode: int | None) -> Path:
    tmp = _sibling(target, "new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, like any new file
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _backup(target: Path) -> Path | None:
    if not os.path.lexists(target):
        return None
    backup = _sibling(target, "old")
    try:
        os.link(target, backup)
    except OSError:
        shutil.copy2(target, backup)
    return backup


def _undo(made: list[Path], staged: dict[Path, Path]) -> None:
    for tmp in staged.values():
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    for folder in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def commit(plan: PatchPlan) -> None:
    """Apply ``plan`` to the disk, all or nothing. Raises :class:`PatchApplyError` (after putting
    every file back) when the disk refuses a write."""
    made: list[Path] = []
    staged: dict[Path, Path] = {}
    current: Path | None = None
    try:
        for current, data in plan.writes.items():
            _makedirs(current.parent, made)
            staged[current] = _stage(current, data, _mode(plan, current))
    except OSError as exc:
        _undo(made, staged)
        raise PatchApplyError(f"Failed to write {current}: {exc.strerror or exc}; no file was changed") from exc
    done: list[tuple[Path, Path | None]] = []
    steps: list[tuple[Path, Path | None]] = [*staged.items(), *((p, None) for p in plan.removes)]
    try:
        for current, tmp in steps:
            backup = _backup(current)
            try:
                if tmp is not None:
                    os.replace(tmp, current)
                else:
                    os.unlink(current)
            except BaseException:
                if backup is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(backup)
                raise
            done.append((current, backup))
    except OSError as exc:
        for target, backup in reversed(done):
            with contextlib.suppress(OSError):
                if backup is not None:
                    os.replace(backup, target)
                else:
                    os.unlink(target)
        _undo(made, staged)
        verb = "remove" if current in plan.removes else "write"
        raise PatchApplyError(f"Failed to {verb} {current}: {exc.strerror or exc}; "
                              "every file was put back as it was") from exc
    for _, backup in done:
        if backup is not None:
            with contextlib.suppress(OSError):
                os.unlink(backup)
