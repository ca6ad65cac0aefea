"""A strict reader for the flat front matter of agent files (Claude Code's ``.claude/agents/*.md``).

Why not a YAML library: cox has none among its dependencies, and the files are written by
whoever wrote the repository, so the reader must be small enough to trust and must never crash
or hang. It reads what agent files really use: ``key: value`` lines between two ``---`` lines,
where a value is a plain scalar (a `` #`` comment stripped, indented continuation lines folded),
a single- or double-quoted scalar (YAML's escapes), a ``[a, b]`` flow list, a block list of
``- item`` lines, or a ``|`` / ``>`` block scalar. A nested value it does not interpret (a
``hooks:`` mapping, a list of mappings, ``{…}``) is kept as a :class:`Block`, so a file that
uses a field cox ignores still loads; the caller refuses a Block where it needs a scalar.
Everything else is a :class:`FrontMatterError` naming the line: the only exception raised.
"""

from __future__ import annotations

import re

from cox import lazyre
from cox.slim import dataclass

__all__ = ["Block", "FrontMatterError", "Value", "split"]

_KEY = lazyre.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$")
_BLOCK_SCALAR = lazyre.compile(r"^([|>])([+-]?[1-9]?|[1-9][+-])[ \t]*(?:#.*)?$")
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
            "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85",
            "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_HEX = {"x": 2, "u": 4, "U": 8}


@dataclass(frozen=True, slots=True)
class Block:
    """A nested value this reader does not interpret (a mapping, a list of mappings, an alias)."""

    line: int
    text: str


Value = str | list[str] | Block | None
"""A field's value: a string, a list of strings, an uninterpreted Block, or None (empty / null)."""


class FrontMatterError(ValueError):
    """The front matter is not the flat format agent files use; ``line`` is 1-based in the file."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def split(text: str) -> tuple[dict[str, tuple[int, Value]], str]:
    """(the fields by key, each with its line; the body after the closing ``---``, stripped)."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != "---":
        raise FrontMatterError(1, "no front matter: an agent file starts with a line '---', then "
                                  "'name:' and 'description:' lines, then '---' and the prompt")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if end is None:
        raise FrontMatterError(1, "the front matter opened on line 1 is never closed by a '---' line")
    return _fields(lines[1:end], first=2), "\n".join(lines[end + 1:]).strip()


def _fields(lines: list[str], first: int) -> dict[str, tuple[int, Value]]:
    out: dict[str, tuple[int, Value]] = {}
    i = 0
    while i < len(lines):
        line, number = lines[i], first + i
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            raise FrontMatterError(number, "an indented line that continues no field")
        m = _KEY.match(line)
        if m is None:
            raise FrontMatterError(number, "expected 'key: value'")
        key, raw = m.group(1), (m.group(2) or "").strip()
        if key in out:
            raise FrontMatterError(number, f"{key!r} is given twice (first on line {out[key][0]})")
        more: list[str] = []  # the lines that continue this field: indented ones (or '- ' items)
        while i < len(lines) and _continues(lines[i], list_item=not raw):
            more.append(lines[i])
            i += 1
        while more and not more[-1].strip():
            more.pop()
        out[key] = (number, _value(raw, more, number))
    return out


def _continues(line: str, list_item: bool) -> bool:
    return not line.strip() or line[0] in " \t" or (list_item and (line == "-" or line.startswith("- ")))


def _value(raw: str, more: list[str], number: int) -> Value:
    if raw[:1] in ('"', "'"):
        return _quoted(_joined(raw, more), number)
    if _BLOCK_SCALAR.match(raw):
        return _block_scalar(raw[0], more)
    if raw[:1] in ("&", "*", "!", "{"):
        return Block(number, "\n".join([raw, *more]))
    if raw[:1] == "[":
        return _flow_list(_joined(raw, more), number)
    if raw:
        return _plain(" ".join([_uncomment(raw), *(_uncomment(m.strip()) for m in more if m.strip())]).strip())
    if not more:
        return None
    items = [m.strip() for m in more if m.strip() and not m.strip().startswith("#")]
    if items and all(s == "-" or s.startswith("- ") for s in items):
        values: list[str] = []
        for s in items:
            item = s[1:].strip()
            if _KEY.match(item) or item[:1] in ("[", "{", "&", "*", "!", "|", ">", "-"):
                return Block(number, "\n".join(more))
            value = _quoted(item, number) if item[:1] in ('"', "'") else _plain(_uncomment(item))
            if value is not None:
                values.append(value)
        return values
    if any(_KEY.match(s) or s.startswith("- ") for s in items):
        return Block(number, "\n".join(more))
    return _plain(" ".join(_uncomment(s) for s in items))


def _joined(raw: str, more: list[str]) -> str:
    """A quoted or flow value that goes on over the next lines, folded the way YAML folds them."""
    text = raw
    for m in more:
        text += "\n" if not m.strip() else (" " if not text.endswith("\n") else "") + m.strip()
    return text


def _uncomment(s: str) -> str:
    m = re.search(r"[ \t]#", s)
    return (s[: m.start()] if m else s).rstrip()


def _plain(s: str) -> str | None:
    return None if s in ("", "~", "null", "Null", "NULL") else s


def _quoted(text: str, number: int) -> str:
    value, rest = _scan_quoted(text, number)
    if _uncomment(" " + rest).strip():
        raise FrontMatterError(number, f"text after the closing quote: {rest.strip()[:40]!r}")
    return value


def _scan_quoted(text: str, number: int) -> tuple[str, str]:
    """(the quoted string at the start of ``text``, what follows its closing quote)."""
    quote, out, i = text[0], [], 1
    while i < len(text):
        c = text[i]
        if c == quote:
            if quote == "'" and text[i + 1: i + 2] == "'":
                out.append("'")
                i += 2
                continue
            return "".join(out), text[i + 1:]
        if c == "\\" and quote == '"':
            esc = text[i + 1: i + 2]
            if esc in _HEX:
                digits = text[i + 2: i + 2 + _HEX[esc]]
                if len(digits) != _HEX[esc] or not all(d in "0123456789abcdefABCDEF" for d in digits):
                    raise FrontMatterError(number, f"a bad \\{esc} escape in a quoted value")
                code = int(digits, 16)
                if code > 0x10FFFF:
                    raise FrontMatterError(number, f"a bad \\{esc} escape in a quoted value")
                out.append(chr(code))
                i += 2 + _HEX[esc]
                continue
            if esc == "\n":
                i += 2
                continue
            if esc not in _ESCAPES:
                raise FrontMatterError(number, f"an unknown escape \\{esc} in a quoted value")
            out.append(_ESCAPES[esc])
            i += 2
            continue
        out.append(c)
        i += 1
    raise FrontMatterError(number, "a quoted value that is never closed")


def _flow_list(text: str, number: int) -> list[str] | Block:
    """``[a, "b", c]``: items split at commas outside quotes and parentheses."""
    body = text[1:]
    items: list[str] = []
    current, quoted, depth, i = "", None, 0, 0
    while i < len(body):
        c = body[i]
        if quoted is None and not current.strip() and c in "\"'":
            quoted, rest = _scan_quoted(body[i:], number)
            i, current = len(body) - len(rest), ""
            continue
        if depth == 0 and c in ",]":
            item = quoted if quoted is not None else _plain(current.strip())
            if item is not None:
                items.append(item)
            quoted, current = None, ""
            if c == "]":
                if _uncomment(" " + body[i + 1:]).strip():
                    raise FrontMatterError(number, "text after the closing ']'")
                return items
            i += 1
            continue
        if quoted is not None:
            if c.strip():
                raise FrontMatterError(number, "text after a quoted list item")
        elif c in "[{":
            return Block(number, text)
        else:
            depth += (c == "(") - (c == ")" and depth > 0)
            current += c
        i += 1
    raise FrontMatterError(number, "a '[' list that is never closed by ']'")


def _block_scalar(style: str, more: list[str]) -> str | None:
    """``|`` keeps the lines; ``>`` folds them (a blank line stays a line break)."""
    indents = [len(m) - len(m.lstrip()) for m in more if m.strip()]
    if not indents:
        return None
    cut = min(indents)
    lines = [m[cut:] if m.strip() else "" for m in more]
    if style == "|":
        return "\n".join(lines).strip("\n")
    out: list[str] = []
    for line in lines:
        if not line:
            out.append("\n")
        elif out and not out[-1].endswith("\n"):
            out[-1] += " " + line
        else:
            out.append(line)
    return "".join(out).strip("\n")
