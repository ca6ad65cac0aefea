"""apply_patch: Codex's patch format, checked whole against the files and applied all-or-nothing.

Pure code, no threads: :mod:`.parser` reads the text, :mod:`.seek` locates hunks with the four
passes, :mod:`.text` splices one file, :mod:`.plan` checks every hunk of every file on an
in-memory overlay, :mod:`.writer` writes the result atomically, :mod:`.report` words it and
:mod:`.shell` spots ``apply_patch <<'EOF'`` in a shell line. :func:`apply_patch` is the whole
path for callers (the tool and ``cox apply-patch``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import PatchApplyError, PatchError, PatchParseError
from .parser import AddFile, Chunk, DeleteFile, Hunk, Patch, UpdateFile, parse_patch
from .plan import FileChange, PatchPlan, Resolve, plan_patch
from .report import summary, unified_diff
from .seek import SeekMatch, seek_sequence
from .shell import ShellPatch, detect_shell_apply_patch
from .writer import commit

__all__ = [
    "AddFile", "Chunk", "DeleteFile", "FileChange", "Hunk", "Patch", "PatchApplyError", "PatchError",
    "PatchOutcome", "PatchParseError", "PatchPlan", "Resolve", "SeekMatch", "ShellPatch", "UpdateFile",
    "apply_patch", "commit", "detect_shell_apply_patch", "parse_patch", "plan_patch", "seek_sequence",
    "summary", "unified_diff",
]


@dataclass(frozen=True)
class PatchOutcome:
    """What an applied (or, with ``dry_run``, a checked) patch changes."""

    plan: PatchPlan
    summary: str

    def diff(self, max_lines: int | None = None) -> str:
        return unified_diff(self.plan.changes, max_lines)


def apply_patch(text: str, resolve: Resolve, *, dry_run: bool = False) -> PatchOutcome:
    """Parse ``text``, check every hunk against the files (paths through ``resolve``), then
    write all of it or, on any :class:`PatchError`, nothing."""
    plan = plan_patch(parse_patch(text), resolve)
    if not dry_run:
        commit(plan)
    return PatchOutcome(plan, summary(plan.changes))
