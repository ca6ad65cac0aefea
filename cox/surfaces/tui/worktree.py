"""The status line's worktree segment: the branch of the folder cox works in, the lines its
uncommitted changes add and remove, and the linked worktree's name when it is one:
``⎇ t42 +3 −1 · ⧉ t42``.

``probe`` runs git (a few short commands), so the TUI calls it on a thread of its own, at start
and after each turn, never per frame. No git, or not a repository: ``None``, and no segment.
It runs outside the sandbox, in a checkout cox does not trust, so every git goes through
``cox.gitsafe``: no fsmonitor, hook, filter, diff driver or pager the repository names runs.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from cox.gitsafe import run_git

TIMEOUT_S = 5.0
UNTRACKED_FILES = 200  # untracked files whose lines count as added, at most
UNTRACKED_BYTES = 1 << 20  # larger untracked files are not counted


@dataclass(frozen=True)
class GitState:
    branch: str  # the branch, or the short commit id when HEAD is detached
    added: int = 0  # lines added by uncommitted changes (untracked files included)
    removed: int = 0
    worktree: str = ""  # the linked worktree's name ("" in the main checkout)

    def segment(self) -> str:
        out = f"⎇ {self.branch}"
        if self.added or self.removed:
            out += f" +{self.added} −{self.removed}"
        if self.worktree:
            out += f" · ⧉ {self.worktree}"
        return out


def _git(cwd: str, *args: str, filters: bool = False) -> str | None:
    p = run_git(cwd, *args, timeout=TIMEOUT_S, filters=filters)
    if p is None or p.returncode != 0:
        return None
    return p.stdout.decode("utf-8", "replace")


def probe(cwd: str) -> GitState | None:
    """The git state of ``cwd``; None when git is missing or ``cwd`` is not in a work tree."""
    where = _git(cwd, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir")
    if where is None:
        return None
    parts = where.splitlines()
    if len(parts) < 3:
        return None
    top, git_dir, common = parts[:3]
    linked = os.path.realpath(git_dir) != os.path.realpath(common)
    branch = (_git(cwd, "symbolic-ref", "--short", "-q", "HEAD") or "").strip()
    if not branch:
        branch = (_git(cwd, "rev-parse", "--short", "HEAD") or "").strip() or "HEAD"
    added = removed = 0
    # diff reads file contents: the repository's filter drivers are blanked too (filters=True).
    stats = [_git(cwd, "diff", "--numstat", "HEAD", filters=True)]
    if stats[0] is None:  # no commit yet: what is staged and what is not
        stats = [_git(cwd, "diff", "--numstat", "--cached", filters=True),
                 _git(cwd, "diff", "--numstat", filters=True)]
    for text in stats:
        for line in (text or "").splitlines():
            a, _, rest = line.partition("\t")
            r = rest.partition("\t")[0]
            if a.isdigit() and r.isdigit():  # binary files show "-"
                added += int(a)
                removed += int(r)
    others = _git(cwd, "ls-files", "--others", "--exclude-standard", "--full-name", "-z", "--", ":/")
    for name in [n for n in (others or "").split("\0") if n][:UNTRACKED_FILES]:
        added += _lines(os.path.join(top, name))
    return GitState(branch=branch, added=added, removed=removed, worktree=_name(top, common) if linked else "")


def _name(top: str, common: str) -> str:
    """A linked worktree's name: its folder, less the ``<repo>-`` prefix ``cox --worktree`` gives
    it (``_worktrees/repo-t42`` is ``t42``)."""
    leaf = os.path.basename(top.rstrip("/"))
    common = os.path.realpath(common)
    if os.path.basename(common) == ".git":
        prefix = os.path.basename(os.path.dirname(common)) + "-"
        if leaf.startswith(prefix) and len(leaf) > len(prefix):
            return leaf[len(prefix):]
    return leaf


def _lines(path: str) -> int:
    """Lines of an untracked regular file (a link, FIFO or device planted there counts 0: it
    could point anywhere or never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > UNTRACKED_BYTES:
            return 0
        data = os.read(fd, UNTRACKED_BYTES + 1)
    except OSError:
        return 0
    finally:
        os.close(fd)
    if b"\0" in data:
        return 0
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
