"""Errors of apply_patch, worded for the model that wrote the patch.

A model cannot see a traceback; it sees one message and tries again. So every error names the
file and the hunk, and a context mismatch shows what was expected and what the file really has.
The first words follow Codex's (``Failed to find expected lines in``, ``Failed to delete file``…)
because models trained on Codex recognise them.
"""

from __future__ import annotations

__all__ = ["PatchApplyError", "PatchError", "PatchParseError"]


class PatchError(ValueError):
    """Any reason a patch was not applied. Nothing was written when this is raised."""


class PatchParseError(PatchError):
    """The patch text does not follow the format (caught before any file is read)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.message = message
        self.line = line
        where = f"Invalid patch hunk on line {line}: " if line is not None else "Invalid patch: "
        super().__init__(where + message)


class PatchApplyError(PatchError):
    """The patch is well formed but does not fit the files (a hunk not found, a missing file,
    a path outside the workspace, a write that failed and was rolled back)."""

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)
