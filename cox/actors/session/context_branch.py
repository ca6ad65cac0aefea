"""The git branch for the volatile system block, read from ``HEAD`` in Python.

The request names the branch the workspace is on (spec: "date, cwd, branch, memory"), read
again for every request, since the model may switch branches mid-session. It is never asked of
git: ``git rev-parse`` / ``symbolic-ref`` in the user's checkout read its ``.git/config``, which
can run commands (see ``cox.gitsafe``), and a process per request would cost more than the read.
The repository is not trusted either: ``HEAD`` may be a FIFO (an open would block the session),
huge, or hold text meant for the model, so only a short regular file holding a well-formed ref or
object id is believed; anything else is named as unreadable.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

HEAD_MAX = 1024
"""A real ``HEAD`` is one short line; more than this is not a ``HEAD``."""

_HEX = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^/|/$|\.lock$|^\.|/\.")


def branch_line(cwd: Path) -> str:
    """``branch: NAME``, or ``branch: none (…)`` for a detached HEAD, no repository, or a
    ``HEAD`` cox cannot read."""
    from cox.actors.store.checkpoint_git import git_dirs

    found = git_dirs(cwd)
    if found is None:
        return "branch: none (not a git repository)"
    text = _read_head(found[0] / "HEAD")
    if text is None:
        return "branch: unknown (.git/HEAD is not a file cox can read)"
    if text.startswith("ref:"):
        ref = text[len("ref:"):].strip()
        name = ref.removeprefix("refs/heads/")
        if ref.startswith("refs/") and len(ref) <= 255 and not _BAD_REF.search(ref):
            return f"branch: {name}"
    elif _HEX.fullmatch(text):
        return f"branch: none (detached HEAD at {text[:7]})"
    return "branch: unknown (.git/HEAD holds no ref cox can read)"


def _read_head(path: Path) -> str | None:
    """The first line of ``path`` when it is a short regular file; None otherwise. Opened
    non-blocking and checked after the open, so a FIFO swapped in cannot stall the read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > HEAD_MAX:
            return None
        data = os.read(fd, HEAD_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > HEAD_MAX:
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[0].strip() if lines else ""
