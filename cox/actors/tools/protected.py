"""Places the file tools never write, whatever the permission mode: git metadata and cox's own.

A repository's ``.git`` is code: its ``config`` names an fsmonitor, filters and a hooks folder,
and its ``hooks`` are programs, all run the next time anyone runs git there (a ``.git`` file
redirects git to another folder). A project's ``.cox/`` configures cox itself, and ``COX_HOME``
holds the next session's config, trust store and checkpoints. The sandbox keeps these read-only
for every command; ``write``, ``edit`` and ``apply_patch`` run in cox's own process, outside the
sandbox, so they refuse the same places here, after confinement has resolved every symlink (a
link into ``.git`` is caught by where it lands).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .base import ToolInputError

PROTECTED_NAMES = (".git", ".cox")


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_writable(path: Path, roots: Sequence[str | os.PathLike[str]],
                   writable: Sequence[str | os.PathLike[str]] = ()) -> None:
    """Raise :class:`ToolInputError` when ``path`` (a confined, resolved path) is git metadata or
    cox's: a ``.git`` or ``.cox`` entry at any depth below its workspace root, or ``COX_HOME``;
    or when it lies in a read-only root (every root after the first that is not also one of the
    ``writable`` roots: ``paths.read_only_roots``)."""
    from cox.actors.store.layout import cox_home
    from cox.policy.paths import read_only_roots

    if len(roots) > 1 and not any(_inside(path, Path(os.path.realpath(r))) for r in (roots[0], *writable)):
        for ro in read_only_roots(roots, writable):
            if _inside(path, Path(os.path.realpath(ro))):
                raise ToolInputError(f"{path} is in {ro}, a read-only root of this session (the main checkout "
                                     f"of its worktree); edits land in {roots[0]}: write the file there instead")
    home = Path(os.path.realpath(cox_home()))
    if _inside(path, home):
        raise ToolInputError(f"{path} is inside cox's home ({home}): the file tools do not write there "
                             "(it configures the next session); change it yourself if you mean to")
    for root in roots:
        real = Path(os.path.realpath(root))
        if not _inside(path, real):
            continue
        for part in path.relative_to(real).parts:
            if part in PROTECTED_NAMES:
                what = ("git metadata: its config and hooks run programs the next time git runs there"
                        if part == ".git" else "cox's project configuration")
                raise ToolInputError(f"{path} is {what}; the file tools do not write inside {part}/, "
                                     "change it yourself if you mean to")
        return
