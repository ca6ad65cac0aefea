"""``edit``: replace an exact string in a file, and answer with the diff.

An edit is only as good as the model's idea of the file, so it refuses rather than guesses: a
string that is not there gets the nearest candidate lines (the model usually misremembered
whitespace or a line), and a string that is there more than once gets every place it occurs
(the model adds context or asks for ``replace_all``).

Several changes to one file go in one call as ``edits`` (Claude Code's ``MultiEdit``): applied in
order, each to the text the one before left, all or nothing — the file is written once, after
every edit applied, so one failed edit leaves it untouched and the error names which one failed
and why. One call is one write of one file: one checkpoint, one permission decision.

The file is matched with ``\\r\\n`` read as ``\\n``, so a model that writes ``\\n`` can edit a
CRLF file; the bytes around the change are kept exactly, the new text takes the file's line
ending, and the encoding (UTF-8, with or without BOM, UTF-16 with BOM, else Latin-1 byte for
byte) is kept. The file is replaced atomically, as ``write`` does, never through a planted link.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import Any

from cox.atomic import LinkInTheWay, read_file, why, write_atomic
from cox.protocol.types import Risk, ToolCall, ToolResult
from cox.slim import dataclass

from . import catalog
from .base import ToolEnv, ToolInputError, path_denied, read_denied
from .files import BINARY_SNIFF, PathTool, display, resolve
from .protected import check_writable

MAX_CANDIDATES = 3
MAX_CANDIDATE_LINES = 8  # lines shown of each candidate window
MAX_LINE_NUMBERS = 20  # line numbers listed for an ambiguous match
SCAN_BUDGET = 4_000_000  # characters compared when looking for near matches, to bound the work
DIFF_CONTEXT = 2

_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


@dataclass(frozen=True)
class Decoded:
    """A file's text with how to turn it back into the same bytes."""

    text: str
    bom: bytes
    encoding: str

    def encode(self, text: str) -> bytes:
        try:
            return self.bom + text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise ToolInputError(f"the new text cannot be written in the file's encoding ({self.encoding}): "
                                 f"{exc.reason} at {text[exc.start:exc.end]!r}") from exc


def decode(data: bytes) -> Decoded | None:
    """The text of ``data``, or None for a binary file."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return Decoded(data[len(bom) :].decode(encoding), bom, encoding)
            except UnicodeDecodeError:
                return None
    if b"\0" in data[:BINARY_SNIFF]:
        return None
    try:
        return Decoded(data.decode("utf-8"), b"", "utf-8")
    except UnicodeDecodeError:
        return Decoded(data.decode("latin-1"), b"", "latin-1")  # every byte round-trips


class Normalised:
    """``text`` with each ``\\r\\n`` read as ``\\n``, and the way back to positions in ``text``."""

    def __init__(self, text: str) -> None:
        self.original = text
        self.text = text.replace("\r\n", "\n")
        # Normalised positions of the "\n" whose "\r" was dropped, in order.
        self.dropped: list[int] = []
        if len(self.text) != len(text):
            shift = 0
            for m in re.finditer("\r\n", text):
                self.dropped.append(m.start() - shift)
                shift += 1
        crlf = len(self.dropped)
        self.newline = "\r\n" if crlf and crlf >= self.text.count("\n") - crlf else "\n"

    def original_index(self, i: int) -> int:
        """Where normalised position ``i`` starts in the original (a ``\\r\\n`` included whole)."""
        return i + bisect.bisect_left(self.dropped, i)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _numbered(lines: list[str], first: int, indent: str = "  ") -> list[str]:
    width = len(str(first + len(lines)))
    shown = [f"{indent}{n:>{width}}\t{line}" for n, line in enumerate(lines[:MAX_CANDIDATE_LINES], start=first)]
    if len(lines) > MAX_CANDIDATE_LINES:
        shown.append(f"{indent}… {len(lines) - MAX_CANDIDATE_LINES} more lines")
    return shown


def _squash(s: str) -> str:
    return " ".join(s.split())


def near_matches(text: str, old: str) -> list[tuple[int, int, float]]:
    """The windows of ``len(old)`` lines that look most like ``old``: (first line, last line,
    similarity), best first, not overlapping. Whitespace runs count as one space."""
    import difflib  # on a failed edit only: not worth its import at every start-up

    lines = text.split("\n")
    want = [_squash(x) for x in old.strip("\n").split("\n")]
    size = max(1, len(want))
    target = "\n".join(want)
    squashed = [_squash(x) for x in lines]
    budget = SCAN_BUDGET
    scored: list[tuple[float, int]] = []
    for start in range(max(1, len(lines) - size + 1)):
        window = "\n".join(squashed[start : start + size])
        budget -= len(window) + len(target)
        if budget < 0:
            break
        sm = difflib.SequenceMatcher(None, window, target, autojunk=False)
        if sm.real_quick_ratio() < 0.5 or sm.quick_ratio() < 0.5:
            continue
        ratio = sm.ratio()
        if ratio >= 0.5:
            scored.append((ratio, start))
    scored.sort(key=lambda x: (-x[0], x[1]))
    chosen: list[tuple[int, int, float]] = []
    for ratio, start in scored:
        first, last = start + 1, min(len(lines), start + size)
        if any(first <= b and last >= a for a, b, _ in chosen):
            continue  # overlaps a better candidate
        chosen.append((first, last, ratio))
        if len(chosen) == MAX_CANDIDATES:
            break
    return chosen


def _line_number_prefixes(old: str) -> str | None:
    """``old`` without the ``  12\\t`` prefixes ``read`` puts on lines, if every line has one."""
    lines = old.split("\n")
    if lines and all(re.match(r"\s*\d+\t", x) for x in lines if x):
        return "\n".join(re.sub(r"^\s*\d+\t", "", x) for x in lines)
    return None


def not_found(text: str, old: str, where: str) -> str:
    parts = [f"old_string was not found in {where}; nothing was changed."]
    stripped = _line_number_prefixes(old)
    if stripped is not None and stripped in text:
        parts.append("It matches once the line-number prefixes from read are removed: "
                     "leave out the number and tab at the start of each line.")
    elif _squash(old) and _squash(old) in _squash(text):
        parts.append("The text is there with different whitespace or indentation: copy it exactly.")
    candidates = near_matches(text, old)
    if candidates:
        lines = text.split("\n")
        parts.append("Nearest candidates:")
        for first, last, ratio in candidates:
            label = f"line {first}" if first == last else f"lines {first}–{last}"
            parts.append(f"  {label} ({ratio:.0%} similar):")
            parts.extend(_numbered(lines[first - 1 : last], first, indent="    "))
    else:
        parts.append("No similar lines either: read the file again before editing it.")
    return "\n".join(parts)


def _diff(before: str, after: str, where: str) -> tuple[str, int, int]:
    import difflib

    diff = list(difflib.unified_diff(before.split("\n"), after.split("\n"), f"a/{where}", f"b/{where}",
                                     n=DIFF_CONTEXT, lineterm=""))
    added = sum(1 for x in diff if x.startswith("+") and not x.startswith("+++"))
    removed = sum(1 for x in diff if x.startswith("-") and not x.startswith("---"))
    return "\n".join(diff), added, removed


def atomic_write(path: Path, data: bytes) -> None:
    """Replace the existing file ``path`` with ``data``, keeping its permission bits; no link on
    the way is followed (``cox.atomic``)."""
    write_atomic(path, data, keep_mode=True, new_mode=0o666, follow=False, suffix=".cox-tmp")


class EditFailed(Exception):
    """One replacement cannot be made: the sentence the model reads (nothing was written)."""


def replace_once(text: str, newline: str, old: str, new: str, replace_all: bool, where: str) -> tuple[str, int]:
    """``text`` (the file's, its line endings as they are) with ``old`` replaced by ``new``, and
    how many places changed; raises :class:`EditFailed` saying why it cannot be done."""
    if old == new:
        raise EditFailed("old_string and new_string are the same; there is nothing to change")
    if not old:
        raise EditFailed("old_string is empty; give the text to replace (use write to create a file)")
    norm = Normalised(text)
    old_n, new_n = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    if old_n == new_n:
        raise EditFailed("old_string and new_string differ only in line endings; there is nothing to change")
    starts = [m.start() for m in re.finditer(re.escape(old_n), norm.text)]
    if not starts:
        raise EditFailed(not_found(norm.text, old_n, where))
    if len(starts) > 1 and not replace_all:
        numbers = [_line_of(norm.text, s) for s in starts]
        listed = ", ".join(map(str, numbers[:MAX_LINE_NUMBERS])) + (" …" if len(numbers) > MAX_LINE_NUMBERS else "")
        raise EditFailed(
            f"old_string occurs {len(starts)} times in {where} (at lines {listed}); nothing was changed. "
            "Add surrounding lines to old_string so it matches once, or set replace_all to change every one.")
    replacement = new_n.replace("\n", newline)
    pieces: list[str] = []
    at = 0
    for s in starts:
        begin, end = norm.original_index(s), norm.original_index(s + len(old_n))
        pieces += [norm.original[at:begin], replacement]
        at = end
    pieces.append(norm.original[at:])
    return "".join(pieces), len(starts)


def _edits(call_input: dict[str, Any]) -> list[dict[str, Any]]:
    """The replacements a call asks for: its ``edits`` list, or its one old_string/new_string."""
    if "edits" not in call_input:
        if "old_string" not in call_input or "new_string" not in call_input:
            raise ToolInputError("edit: give old_string and new_string, or an edits list of them")
        return [_typed({k: call_input[k] for k in EDIT_FIELDS if k in call_input}, "")]
    if any(k in call_input for k in EDIT_FIELDS):
        raise ToolInputError("edit: give either old_string/new_string or an edits list, not both")
    edits = call_input["edits"]
    if not isinstance(edits, list) or not edits:
        raise ToolInputError("edit: 'edits' must be a non-empty list of {old_string, new_string, replace_all?}")
    for i, one in enumerate(edits, start=1):
        if not isinstance(one, dict):
            raise ToolInputError(f"edit: edits[{i}] must be an object with old_string and new_string")
        unknown = [k for k in one if k not in EDIT_FIELDS]
        if unknown or "old_string" not in one or "new_string" not in one:
            raise ToolInputError(f"edit: edits[{i}] takes old_string, new_string and replace_all"
                                 + (f", not {', '.join(map(repr, unknown))}" if unknown else ""))
    return [_typed(one, f"edits[{i}]: ") for i, one in enumerate(edits, start=1)]


def _typed(one: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(one.get("old_string"), str) or not isinstance(one.get("new_string"), str):
        raise ToolInputError(f"{where}'old_string' and 'new_string' must be strings")
    if not isinstance(one.get("replace_all", False), bool):
        raise ToolInputError(f"{where}'replace_all' must be true or false")
    return one


EDIT_FIELDS = ("old_string", "new_string", "replace_all")

class EditTool(PathTool):
    spec = catalog.EDIT

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.WRITE

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        from cox.actors.lsp.after_edit import run_with

        return run_with(self, call, env, lambda: self._call(call, env))  # lsp.after_edit

    def _call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        path = resolve(call.input, env)
        check_writable(path, env.roots, env.services.writable_roots)
        edits = _edits(call.input)
        where = display(path, env)
        rule = path_denied(env, str(call.input["path"]), path)
        if rule is not None:  # a miss shows the nearest lines and a hit the diff: edit reads the file
            return read_denied(where, rule)
        if path.is_dir():
            return ToolResult.error(f"{where} is a folder, not a file")
        if not path.exists():
            return ToolResult.error(f"{where} does not exist; use write to create it")
        if not path.is_file():  # a FIFO or a device would block or never end the read
            return ToolResult.error(f"{where} is not a regular file; edit works on text files")
        try:
            decoded = decode(read_file(path))  # no link followed: the bytes of the file we replace
        except LinkInTheWay as exc:
            return ToolResult.error(f"{exc}; nothing was changed")
        if decoded is None:
            return ToolResult.error(f"{where} is a binary file; edit works on text files")
        newline = Normalised(decoded.text).newline
        updated, count = decoded.text, 0
        for i, one in enumerate(edits, start=1):
            try:
                updated, n = replace_once(updated, newline, one["old_string"], one["new_string"],
                                          one.get("replace_all", False), where)
            except EditFailed as exc:
                if len(edits) == 1:
                    return ToolResult.error(str(exc))
                after = " (in the file as the edits before it left it)" if i > 1 else ""
                return ToolResult.error(f"edit {i} of {len(edits)} failed{after}: {exc}\n"
                                        f"None of the {len(edits)} edits was applied; {where} is unchanged.")
            count += n
        try:
            data = decoded.encode(updated)
        except ToolInputError as exc:
            return ToolResult.error(f"{exc}; nothing was changed")
        try:
            atomic_write(path, data)
        except LinkInTheWay as exc:
            return ToolResult.error(f"{exc}; nothing was changed")
        except OSError as exc:  # a full disk, a read-only file system: the old bytes stay whole
            return ToolResult.error(f"could not write {where}: {why(exc)}; nothing was changed")
        diff, added, removed = _diff(decoded.text.replace("\r\n", "\n"), updated.replace("\r\n", "\n"), where)
        head = f"edited {where}: {count} replacement{'s' if count > 1 else ''}"
        if len(edits) > 1:
            head += f" in {len(edits)} edits"
        meta = {"replacements": count, "added": added, "removed": removed, **({"edits": len(edits)} if len(edits) > 1 else {})}
        return ToolResult(visible=f"{head} (+{added} −{removed})\n{diff}", meta=meta)
