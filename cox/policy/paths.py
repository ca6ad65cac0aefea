"""Path confinement: every path a model names is resolved and kept inside the workspace roots.

A model (or a file it read) may ask for ``../../etc/passwd``, ``~/.ssh/id_rsa`` or a path through
a symlink that points out of the workspace. :func:`confine` resolves ``~``, ``..`` and every
symlink that exists (the way the kernel would when the tool opens the path), then refuses the
path unless the result is one of the roots or lies under one, before any file tool touches it.
A path that does not exist yet (a file ``write`` will create) is resolved as far as it exists.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PathEscape", "confine", "lexical", "read_only_roots", "write_roots"]


class PathEscape(ValueError):
    """A path that resolves outside the workspace roots (or cannot be a path at all)."""


def write_roots(roots: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The roots a session writes in: the first. Any further root is read-only — a worktree
    session's main checkout (``cox --worktree``), which the model reads while every edit lands in
    the worktree: the file tools refuse it and the sandbox leaves it read-only — unless it is
    one of the session's writable roots too (``--add-dir``: :func:`read_only_roots`)."""
    return [Path(os.fspath(r)) for r in roots[:1]]


def read_only_roots(roots: Sequence[str | os.PathLike[str]],
                    writable: Sequence[str | os.PathLike[str]] = ()) -> list[Path]:
    """The roots after the first that are not also ``writable`` (the session's writable roots,
    where ``--add-dir`` puts the folders it adds besides the roots): the ones nothing writes."""
    open_ = {os.path.realpath(os.fspath(w)) for w in writable}
    return [Path(os.fspath(r)) for r in roots[1:] if os.path.realpath(os.fspath(r)) not in open_]


def _expand(path: str, home: Path | None) -> str:
    if path == "~" or path.startswith("~/"):
        base = str(home) if home is not None else os.path.expanduser("~")
        return base + path[1:]
    if path.startswith("~"):
        return os.path.expanduser(path)  # ~user: the account's home, or unchanged if unknown
    return path


def confine(path: str | os.PathLike[str], roots: Sequence[str | os.PathLike[str]], *,
            cwd: str | os.PathLike[str] | None = None, home: str | os.PathLike[str] | None = None) -> Path:
    """The real path of ``path`` (relative to ``cwd``, default the first root), or
    :class:`PathEscape` when it lies outside every root."""
    raw = os.fspath(path)
    if not raw:
        raise PathEscape("the path is empty")
    if "\0" in raw:
        raise PathEscape(f"the path {raw!r} contains a NUL byte")
    if not roots:
        raise PathEscape(f"{raw} cannot be used: this session has no workspace roots")
    real_roots = [os.path.realpath(os.fspath(r)) for r in roots]
    base = os.fspath(cwd) if cwd is not None else real_roots[0]
    expanded = _expand(raw, Path(home) if home is not None else None)
    joined = os.path.join(base, expanded)
    resolved = os.path.realpath(joined)
    for root in real_roots:
        if resolved == root or resolved.startswith(root.rstrip("/") + "/"):
            return Path(resolved)
    lexical = os.path.normpath(joined)
    via = ""
    if any(lexical == r or lexical.startswith(r.rstrip("/") + "/") for r in real_roots):
        via = " through a symlink"
    where = ", ".join(real_roots)
    raise PathEscape(f"{raw} resolves{via} to {resolved}, outside the workspace "
                     f"{'root' if len(real_roots) == 1 else 'roots'} ({where}); "
                     "only files inside the workspace can be used")


def lexical(path: str | os.PathLike[str], cwd: str | os.PathLike[str], home: str | os.PathLike[str] | None = None) -> str:
    """``path`` made absolute as written (``~`` expanded, ``..`` collapsed) with no symlink
    resolved: what a rule about the name the model used sees, next to :func:`confine`'s real path."""
    expanded = _expand(os.fspath(path), Path(home) if home is not None else None)
    return os.path.normpath(os.path.join(os.fspath(cwd), expanded))
