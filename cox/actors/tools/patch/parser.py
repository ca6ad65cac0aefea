"""Parse Codex's patch format into hunks, without touching any file.

The format (Codex's Lark grammar, ``codex-rs/apply-patch/src/parser.rs``)::

    start:        "*** Begin Patch" LF hunk* "*** End Patch" LF?
    hunk:         add | delete | update
    add:          "*** Add File: " path LF ("+" line LF)*
    delete:       "*** Delete File: " path LF
    update:       "*** Update File: " path LF ("*** Move to: " path LF)? chunk+
    chunk:        ("@@" | "@@ " context) LF (" " | "-" | "+") line LF … ("*** End of File" LF)?

Leniencies, all Codex's, because models produce these and rejecting them only costs a retry:
markers may carry surrounding whitespace; the whole patch may be wrapped in a heredoc
(``<<'EOF'`` … ``EOF``); the first chunk of an update may omit its ``@@``; a blank line inside a
chunk is an empty context line; blank lines between chunks are skipped; CRLF patch text is read
as LF. Three of cox's own, each unambiguous: blank lines between the ``+`` lines of an added file
are empty lines of it (Codex ends the file there, then fails on the next ``+`` line); a git-style
``@@ -12,5 +12,6 @@ def foo`` header is read as ``@@ def foo`` (the numbers are ignored: hunks
are located by content, never by line number); an update with a ``*** Move to:`` and no chunk is
a plain rename (Codex calls it an empty hunk).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import PatchParseError

__all__ = ["AddFile", "Chunk", "DeleteFile", "Hunk", "Patch", "UpdateFile", "parse_patch"]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
MOVE_TO = "*** Move to: "
END_OF_FILE = "*** End of File"
_HEADER = re.compile(r"^\*\*\* (Add|Delete|Update) File:(.*)$")
_HEREDOC_OPEN = ("<<EOF", "<<'EOF'", '<<"EOF"')
_GIT_RANGE = re.compile(r"^-\d+(?:,\d+)? \+\d+(?:,\d+)? @@(.*)$")


@dataclass(frozen=True)
class Chunk:
    """One ``@@`` section of an update: ``old`` lines to find (context and removed lines, in
    order) and the ``new`` lines that replace them. ``context`` is the ``@@ text`` line, found
    first to narrow the search; ``end_of_file`` pins ``old`` to the end of the file."""

    old: tuple[str, ...]
    new: tuple[str, ...]
    context: str | None = None
    end_of_file: bool = False
    line: int = 0
    """Line of the patch where the chunk starts (for error messages)."""


@dataclass(frozen=True)
class AddFile:
    path: str
    content: str
    line: int = 0


@dataclass(frozen=True)
class DeleteFile:
    path: str
    line: int = 0


@dataclass(frozen=True)
class UpdateFile:
    path: str
    chunks: tuple[Chunk, ...]
    move_to: str | None = None
    line: int = 0


Hunk = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True)
class Patch:
    hunks: tuple[Hunk, ...] = field(default_factory=tuple)

    def paths(self) -> list[str]:
        """Every path the patch names, in order, move destinations included."""
        out: list[str] = []
        for h in self.hunks:
            out.append(h.path)
            if isinstance(h, UpdateFile) and h.move_to is not None:
                out.append(h.move_to)
        return out

    @property
    def deletes(self) -> bool:
        return any(isinstance(h, DeleteFile) for h in self.hunks)


def _lines(text: str) -> list[str]:
    """Split like Rust's ``str::lines`` (on LF, one trailing CR dropped), not like
    ``str.splitlines`` which would also split on form feeds and U+2028 inside a line."""
    return [x[:-1] if x.endswith("\r") else x for x in text.split("\n")]


def _body(lines: list[str]) -> list[str]:
    """The lines between the Begin and End markers (a heredoc wrapper is peeled off first)."""
    first = lines[0].strip() if lines else ""
    last = lines[-1].strip() if lines else ""
    if first == BEGIN and last == END and len(lines) >= 2:
        return lines[1:-1]
    if len(lines) >= 4 and lines[0].strip() in _HEREDOC_OPEN and last.endswith("EOF"):
        return _body(lines[1:-1])
    if first != BEGIN:
        raise PatchParseError(f"The first line of the patch must be '{BEGIN}' (got {lines[0][:80]!r})"
                              if lines and lines[0] else f"The first line of the patch must be '{BEGIN}'")
    raise PatchParseError(f"The last line of the patch must be '{END}'")


def parse_patch(text: str) -> Patch:
    """Parse ``text`` into a :class:`Patch`, or raise :class:`PatchParseError` with the line."""
    lines = _lines(text.strip())
    body = _body(lines)
    hunks: list[Hunk] = []
    i = 0
    while i < len(body):
        if not body[i].strip():  # a blank line between hunks
            i += 1
            continue
        hunk, i = _hunk(body, i)
        hunks.append(hunk)
    return Patch(tuple(hunks))


def _hunk(body: list[str], i: int) -> tuple[Hunk, int]:
    line_no = i + 2  # 1-based, after the Begin line
    header = body[i].strip()
    m = _HEADER.match(header)
    if m is None and body[i][:1] in ("+", "-", " ", "@"):
        raise PatchParseError(f"'{body[i][:80]}' is outside any hunk: diff lines belong under a "
                              "'*** Update File: {path}' (and every line of an added file starts with '+')",
                              line_no)
    if m is None:
        raise PatchParseError(f"'{header}' is not a valid hunk header. Valid hunk headers: "
                              "'*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'",
                              line_no)
    kind, path = m.group(1), m.group(2).strip()
    if not path:
        raise PatchParseError(f"'*** {kind} File:' needs a path", line_no)
    i += 1
    if kind == "Add":
        content: list[str] = []
        while i < len(body):
            if body[i].startswith("+"):
                content.append(body[i][1:] + "\n")
                i += 1
                continue
            blank = i
            while blank < len(body) and not body[blank].strip():
                blank += 1
            if blank == i or blank == len(body) or not body[blank].startswith("+"):
                break
            content.extend("\n" for _ in range(blank - i))  # blank lines between '+' lines: empty lines
            i = blank
        return AddFile(path, "".join(content), line_no), i
    if kind == "Delete":
        return DeleteFile(path, line_no), i
    move_to = None
    if i < len(body) and body[i].strip().startswith(MOVE_TO.strip()):
        move_to = body[i].strip()[len(MOVE_TO.strip()):].strip()
        if not move_to:
            raise PatchParseError("'*** Move to:' needs a path", i + 2)
        i += 1
    chunks: list[Chunk] = []
    while i < len(body):
        if not body[i].strip():
            i += 1
            continue
        if body[i].startswith("*"):
            break
        chunk, i = _chunk(body, i, first=not chunks)
        chunks.append(chunk)
    if not chunks and move_to is None:  # a bare move is a rename (cox's leniency; Codex refuses it)
        raise PatchParseError(f"Update file hunk for path '{path}' is empty", line_no)
    return UpdateFile(path, tuple(chunks), move_to, line_no), i


def _context(header: str) -> str | None:
    text = header[2:]
    if not text.strip():
        return None
    text = text[1:] if text.startswith(" ") else text
    git = _GIT_RANGE.match(text.strip())
    if git is not None:
        rest = git.group(1).strip()
        return rest or None
    return text


def _chunk(body: list[str], i: int, *, first: bool) -> tuple[Chunk, int]:
    start = i
    context: str | None = None
    if body[i].startswith("@@"):
        context = _context(body[i])
        i += 1
    elif not first:
        raise PatchParseError(f"Expected update hunk to start with a @@ context marker, got: '{body[i]}'", i + 2)
    old: list[str] = []
    new: list[str] = []
    eof = False
    count = 0
    while i < len(body):
        line = body[i]
        if line.rstrip() == END_OF_FILE:
            if count == 0:
                break
            eof = True
            i += 1
            break
        tag = line[:1]
        if tag == "":
            old.append("")
            new.append("")
        elif tag == " ":
            old.append(line[1:])
            new.append(line[1:])
        elif tag == "-":
            old.append(line[1:])
        elif tag == "+":
            new.append(line[1:])
        else:
            if count == 0:
                raise PatchParseError(f"Unexpected line found in update hunk: '{line}'. Every line should "
                                      "start with ' ' (context line), '+' (added line), or '-' (removed line)",
                                      i + 2)
            break  # the next chunk's @@ or the next hunk's header
        count += 1
        i += 1
    if count == 0:
        raise PatchParseError("Update hunk does not contain any lines", start + 2)
    # Blank lines that end a chunk are separators more often than context: give them back (but
    # never empty ``old``: that would turn the chunk into a pure addition at another place).
    while len(old) > 1 and new and old[-1] == "" and new[-1] == "" and body[i - 1] == "" and not eof:
        old.pop()
        new.pop()
        i -= 1
    return Chunk(tuple(old), tuple(new), context, eof, start + 2), i
