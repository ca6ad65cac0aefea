"""Apply one update's chunks to a file's text: locate every chunk, then splice.

Line endings are the file's: a file whose every newline is CRLF is matched line by line without
the CR and written back with CRLF (Codex only does this on Windows; cox does it everywhere, since
a CRLF file in a Linux checkout is still a CRLF file). A file without a final newline keeps
lacking one (Codex always adds one; cox leaves the last byte as it found it, so a patch that
does not touch the end does not change it). Everything else about a chunk follows Codex.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .errors import PatchApplyError
from .parser import Chunk
from .seek import diagnose, seek_sequence

__all__ = ["Layout", "apply_chunks", "join_lines", "split_lines"]

_SHOW_MAX = 20


@dataclass(frozen=True)
class Layout:
    """How a text ends its lines, and whether its last line is terminated."""

    eol: str = "\n"
    final_newline: bool = True


def split_lines(text: str) -> tuple[list[str], Layout]:
    """The lines of ``text`` without terminators, and its layout. An empty text has no lines
    and (so that added lines get one) a final newline."""
    if not text:
        return [], Layout()
    crlf = "\r\n" in text and text.count("\n") == text.count("\r\n")
    body = text.replace("\r\n", "\n") if crlf else text
    lines = body.split("\n")
    final = lines[-1] == ""
    if final:
        lines.pop()
    return lines, Layout("\r\n" if crlf else "\n", final)


def join_lines(lines: Sequence[str], layout: Layout) -> str:
    if not lines:
        return ""
    return layout.eol.join(lines) + (layout.eol if layout.final_newline else "")


def _block(lines: Sequence[str]) -> str:
    shown = [f"  | {x}" for x in lines[:_SHOW_MAX]]
    if len(lines) > _SHOW_MAX:
        shown.append(f"  | … {len(lines) - _SHOW_MAX} more lines")
    return "\n".join(shown)


def apply_chunks(text: str, chunks: Sequence[Chunk], path: str) -> tuple[str, list[str]]:
    """The new text, and a note for each chunk that needed a fuzzy pass to be found.

    Raises :class:`PatchApplyError` naming the chunk whose lines are not in the file."""
    lines, layout = split_lines(text)
    replacements: list[tuple[int, int, tuple[str, ...]]] = []
    notes: list[str] = []
    at = 0
    total = len(chunks)
    for n, chunk in enumerate(chunks, start=1):
        where = f"hunk {n} of {total}, patch line {chunk.line}" if total > 1 else f"patch line {chunk.line}"
        if chunk.context is not None:
            found = seek_sequence(lines, [chunk.context], at)
            if found is None:
                raise PatchApplyError(f"Failed to find context '@@ {chunk.context}' in {path} ({where}).\n"
                                      + diagnose(lines, [chunk.context], at), path)
            if found.fuzz:
                notes.append(f"{path} {where}: context found {found.fuzz}")
            at = found.index + 1
        old, new = chunk.old, chunk.new
        if not old:
            # A pure addition: right after its @@ context line if it has one (cox's choice; Codex
            # appends those at the end of the file too), else at the end of the file (Codex).
            replacements.append((at if chunk.context is not None and not chunk.end_of_file else len(lines),
                                 0, new))
            continue
        found = seek_sequence(lines, old, at, chunk.end_of_file)
        if found is None and old[-1] == "":
            # A trailing empty line often stands for the file's final newline: retry without it.
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = seek_sequence(lines, old, at, chunk.end_of_file) if old else None
            if not old:
                replacements.append((len(lines), 0, new))
                continue
        if found is None:
            raise PatchApplyError(f"Failed to find expected lines in {path} ({where}):\n{_block(chunk.old)}\n"
                                  + diagnose(lines, chunk.old, at, chunk.end_of_file), path)
        if found.fuzz:
            notes.append(f"{path} {where}: lines found {found.fuzz}")
        replacements.append((found.index, len(old), new))
        at = found.index + len(old)
    replacements.sort(key=lambda r: r[0])
    for start, length, new_lines in reversed(replacements):
        lines[start:start + length] = new_lines
    return join_lines(lines, layout), notes
