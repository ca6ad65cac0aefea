"""A checkout's ``.git`` read as files, never by running git.

``git rev-parse`` in the user's checkout reads its ``.git/config``, which can run commands (see
``cox.gitsafe``). Finding the repository (the checkpoints' object source, the branch the request
names) therefore reads the ``.git`` entries directly. The checkout is not trusted: a ``.git``
file, ``commondir`` or ``HEAD`` may be a FIFO (an open would block), huge, or a link to
anything, so each is read with :func:`read_small` — a short regular file or nothing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

SMALL_MAX = 4096
"""``.git`` files, ``commondir`` and ``HEAD`` are one short line; more than this is not one."""


def read_small(path: Path, limit: int = SMALL_MAX) -> str | None:
    """The text of ``path`` when it is a regular file of at most ``limit`` bytes; None otherwise.
    Opened non-blocking and checked after the open, so a FIFO swapped in cannot stall the read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if len(data) > limit else data.decode("utf-8", "replace")


def git_dirs(root: Path) -> tuple[Path, Path] | None:
    """The git folder of the checkout ``root`` lives in and its common folder: ``.git`` is a
    folder, or a file saying ``gitdir: …`` (worktrees, submodules) whose ``commondir`` names the
    shared folder. A worktree's ``HEAD`` is in the first, its objects in the second."""
    for d in (root, *root.parents):
        dotgit = d / ".git"
        try:
            if dotgit.is_dir():
                gitdir = dotgit
            elif dotgit.exists():
                text = (read_small(dotgit) or "").strip()
                if not text.startswith("gitdir:"):
                    return None
                gitdir = Path(text[len("gitdir:"):].strip())
                if not gitdir.is_absolute():
                    gitdir = d / gitdir
            else:
                continue
            common = gitdir
            c = read_small(gitdir / "commondir")
            if c is not None and c.strip():
                common = Path(c.strip()) if Path(c.strip()).is_absolute() else gitdir / c.strip()
            return gitdir, common
        except OSError:
            return None
    return None
