"""Check a whole patch against the files and compute every new text, writing nothing.

Hunks are played in order on an in-memory overlay of the workspace, so a patch that adds a file
and then updates it, or deletes one and adds it back, means what it would mean applied hunk by
hunk (as Codex applies it) while the disk stays untouched until every hunk is known to fit.
The result is a :class:`PatchPlan`: per file its final bytes or its removal, ready for
:func:`commit`, plus what the summary and the diff need.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cox.atomic import read_file

from .errors import PatchApplyError
from .parser import AddFile, DeleteFile, Patch, UpdateFile
from .text import apply_chunks

__all__ = ["FileChange", "PatchPlan", "Resolve", "plan_patch"]

Resolve = Callable[[str], Path]
"""Turns a path written in the patch into the real path to use (``policy.paths.confine``);
raises ``ValueError`` (``PathEscape``) for a path that must not be touched."""

_SNIFF = 8192


@dataclass(frozen=True)
class FileChange:
    """One hunk's effect, for the summary and the diff (texts are ``None`` when absent or binary)."""

    op: Literal["add", "update", "delete"]
    path: str
    target: Path
    old_text: str | None
    new_text: str | None
    move_to: str | None = None
    move_target: Path | None = None
    fuzz: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return {"add": "A", "update": "M", "delete": "D"}[self.op]

    @property
    def shown(self) -> str:
        """The path the summary shows: the destination of a move."""
        return self.move_to if self.move_to is not None else self.path


@dataclass
class PatchPlan:
    changes: list[FileChange] = field(default_factory=list)
    writes: dict[Path, bytes] = field(default_factory=dict)
    """Final bytes of every file that is created or changed."""
    removes: list[Path] = field(default_factory=list)
    mode_from: dict[Path, Path] = field(default_factory=dict)
    """New files whose permission bits come from another file (a move's source)."""
    named: list[Path] = field(default_factory=list)
    """Every confined path the patch names, sources and destinations, in order."""

    @property
    def fuzz(self) -> list[str]:
        return [note for c in self.changes for note in c.fuzz]


def _kind(path: Path) -> str:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        raise PatchApplyError(f"Cannot inspect {path}: {exc.strerror or exc}") from exc
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    return "other"


def decode(data: bytes) -> str | None:
    """The text of a file, or ``None`` for a binary one (a NUL byte early on, or not UTF-8)."""
    if b"\0" in data[:_SNIFF]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class _Overlay:
    """The workspace as the hunks played so far left it: overlay entries win over the disk."""

    def __init__(self) -> None:
        self.state: dict[Path, bytes | None] = {}
        self.disk: dict[Path, bytes] = {}

    def kind(self, path: Path) -> str:
        if path in self.state:
            return "missing" if self.state[path] is None else "file"
        return _kind(path)

    def read(self, path: Path, raw: str) -> bytes:
        if path in self.state:
            data = self.state[path]
            assert data is not None  # callers check kind() first
            return data
        try:
            data = read_file(path)  # no link followed on the way or at the name (cox.atomic)
        except OSError as exc:
            raise PatchApplyError(f"Failed to read {raw}: {exc.strerror or exc}", raw) from exc
        self.disk[path] = data
        return data

    def parents_ok(self, path: Path, raw: str) -> None:
        for parent in path.parents:
            k = _kind(parent)
            if k == "dir":
                return
            if k != "missing" or self.state.get(parent) is not None:
                raise PatchApplyError(f"Failed to create parent folders for {raw}: {parent} is a file, "
                                      "not a folder", raw)


def _resolve(resolve: Resolve, raw: str) -> Path:
    try:
        return resolve(raw)
    except ValueError as exc:
        raise PatchApplyError(f"Refused path {raw!r}: {exc}", raw) from exc


def _target_ok(overlay: _Overlay, target: Path, raw: str, verb: str) -> None:
    kind = overlay.kind(target)
    if kind == "dir":
        raise PatchApplyError(f"Failed to {verb} {raw}: a folder is there", raw)
    if kind == "other":
        raise PatchApplyError(f"Failed to {verb} {raw}: not a regular file", raw)
    overlay.parents_ok(target, raw)


def plan_patch(patch: Patch, resolve: Resolve) -> PatchPlan:
    """Check ``patch`` against the files (every path confined, every hunk located) and return
    what applying it would write. Raises :class:`PatchApplyError`; never writes."""
    if not patch.hunks:
        raise PatchApplyError("No files were modified.")
    plan = PatchPlan()
    overlay = _Overlay()
    for hunk in patch.hunks:
        target = _resolve(resolve, hunk.path)
        plan.named.append(target)
        if isinstance(hunk, AddFile):
            _target_ok(overlay, target, hunk.path, "write file")
            before = overlay.read(target, hunk.path) if overlay.kind(target) == "file" else None
            overlay.state[target] = hunk.content.encode("utf-8")
            plan.changes.append(FileChange("add", hunk.path, target, decode(before) if before is not None else None,
                                           hunk.content))
        elif isinstance(hunk, DeleteFile):
            kind = overlay.kind(target)
            if kind != "file":
                why = {"missing": "no such file", "dir": "it is a folder (apply_patch deletes files only)",
                       "other": "not a regular file"}[kind]
                raise PatchApplyError(f"Failed to delete file {hunk.path}: {why}", hunk.path)
            before = overlay.read(target, hunk.path)
            overlay.state[target] = None
            plan.changes.append(FileChange("delete", hunk.path, target, decode(before), None))
        else:
            _update(plan, overlay, hunk, target, resolve)
    for path, final in overlay.state.items():
        if final is None:
            if _kind(path) == "file":
                plan.removes.append(path)
        elif overlay.disk.get(path) != final or _kind(path) != "file":
            plan.writes[path] = final
    return plan


def _update(plan: PatchPlan, overlay: _Overlay, hunk: UpdateFile, target: Path, resolve: Resolve) -> None:
    kind = overlay.kind(target)
    if kind != "file":
        why = {"missing": "no such file", "dir": "it is a folder", "other": "not a regular file"}[kind]
        raise PatchApplyError(f"Failed to read file to update {hunk.path}: {why}", hunk.path)
    data = overlay.read(target, hunk.path)
    text = decode(data)
    if text is None:
        raise PatchApplyError(f"Failed to update {hunk.path}: it is a binary file (or not UTF-8 text); "
                              "apply_patch edits text files only", hunk.path)
    new_text, notes = apply_chunks(text, hunk.chunks, hunk.path)
    dest = target
    if hunk.move_to is not None:
        dest = _resolve(resolve, hunk.move_to)
        plan.named.append(dest)
        _target_ok(overlay, dest, hunk.move_to, "move to")
        if dest != target:
            overlay.state[target] = None
            if _kind(target) == "file":
                plan.mode_from[dest] = target
    overlay.state[dest] = new_text.encode("utf-8")
    plan.changes.append(FileChange("update", hunk.path, target, text, new_text, hunk.move_to,
                                   dest if hunk.move_to is not None else None, tuple(notes)))
