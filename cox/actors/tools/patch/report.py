"""What a patch did, in words and as a diff.

The summary is Codex's (``Success. Updated the following files:`` then ``A``/``M``/``D`` lines,
added first, then modified, then deleted, each in patch order, a move shown as ``M`` of its
destination): models trained on Codex expect it. The diff is unified, ``a/``/``b/`` paths as
written in the patch; a deleted file is one line, not its whole text, to keep the result small.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from .plan import FileChange
from .text import split_lines

__all__ = ["summary", "unified_diff"]


def summary(changes: Sequence[FileChange]) -> str:
    out = ["Success. Updated the following files:"]
    seen: set[tuple[str, str]] = set()
    for label in ("A", "M", "D"):
        for change in changes:
            key = (label, change.shown)
            if change.label == label and key not in seen:
                seen.add(key)
                out.append(f"{label} {change.shown}")
    return "\n".join(out) + "\n"


def _lines(text: str | None) -> list[str]:
    return split_lines(text)[0] if text else []


def _one(change: FileChange) -> list[str]:
    if change.op == "delete":
        if change.old_text is None:
            return [f"--- a/{change.path}", "+++ /dev/null", "(binary file deleted)"]
        count = len(_lines(change.old_text))
        return [f"--- a/{change.path}", "+++ /dev/null", f"(file deleted, {count} line{'' if count == 1 else 's'})"]
    old_name = f"a/{change.path}" if change.op == "update" or change.old_text is not None else "/dev/null"
    new_name = f"b/{change.shown}"
    body = list(difflib.unified_diff(_lines(change.old_text), _lines(change.new_text), old_name, new_name,
                                     lineterm="", n=3))
    if not body:
        return [f"--- {old_name}", f"+++ {new_name}"] + (["(moved, content unchanged)"] if change.move_to
                                                          else ["(no change)"])
    return body


def unified_diff(changes: Sequence[FileChange], max_lines: int | None = None) -> str:
    """All changes as one unified diff, cut after ``max_lines`` lines with a count of the rest."""
    lines: list[str] = []
    for change in changes:
        lines.extend(_one(change))
    if max_lines is not None and len(lines) > max_lines:
        rest = len(lines) - max_lines
        lines = [*lines[:max_lines], f"… {rest} more diff lines not shown"]
    return "\n".join(lines) + ("\n" if lines else "")
