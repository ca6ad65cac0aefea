"""Bash brace expansion, the one expander: of a word's value, of a word's raw text, of a glob.

bash expands ``{a,b}`` and ``{1..3}`` before it looks for the command name, so the word
``{rm,-rf,x}`` is the command ``rm -rf x`` and ``sort {-o,out}`` is ``sort -o out``. The splitter
expands such words itself (bounded: a word that would grow past :data:`LIMIT` words is reported
as too large, and the caller makes the line opaque) and judges the words bash would run.

:func:`expand` reads its text in one of three ways (``mode``):

- ``"value"``: a word's unquoted value (quotes already removed; the splitter's deny forms), so a
  quoted comma inside braces expands here when bash would not: that only adds forms for deny
  and ask rules, never an allow;
- ``"raw"``: a word as written (the read guard's paths): braces, commas and ``$`` inside quotes
  or after a backslash are literal and the words keep their quotes; a sequence (``{1..9}``)
  raises :class:`Unexpandable`, since its words would be judged as text they are not;
- ``"pattern"``: a glob (the ``glob`` tool's shell dialect, :mod:`cox.policy.wildmatch`): a
  backslash escapes.

:func:`has_braces` tells from the raw text whether any unquoted brace group is there.
"""

from __future__ import annotations

import re
from typing import Literal

from .words import QUOTED_PART

__all__ = ["LIMIT", "Mode", "TooLarge", "Unexpandable", "expand", "group", "has_braces", "sequence"]

LIMIT = 256
Mode = Literal["value", "raw", "pattern"]
_GROUP = re.compile(r"(?<!\$)\{[^{}]*(?:,|\.\.)[^{}]*\}|\{[^{}]*\{")
_SEQ = re.compile(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?")
_ESCAPE = re.compile(r"\\.", re.DOTALL)


class Unexpandable(ValueError):
    """The expansion cannot be followed: too large, or a sequence in raw text."""


class TooLarge(Unexpandable):
    """The expansion would be larger than its limit (:data:`LIMIT` words by default)."""


def has_braces(raw: str) -> bool:
    """Whether ``raw`` (a word as written) holds an unquoted brace group bash may expand."""
    if "{" not in raw or "}" not in raw:
        return False
    return _GROUP.search(QUOTED_PART.sub("_", raw)) is not None


def expand(word: str, mode: Mode = "value", limit: int = LIMIT) -> list[str]:
    """The words bash makes of ``word`` by brace expansion (``[word]`` when nothing expands).
    Raises :class:`TooLarge` past ``limit`` words, :class:`Unexpandable` for a sequence in
    ``"raw"`` mode."""
    out = _expand(word, mode, limit)
    return out if out else [word]


def _literal(s: str, mode: Mode) -> bytearray:
    """A mask of the characters of ``s`` that cannot open, split or close a group."""
    mask = bytearray(len(s))
    if mode != "value":
        for m in (QUOTED_PART if mode == "raw" else _ESCAPE).finditer(s):
            mask[m.start():m.end()] = b"\x01" * (m.end() - m.start())
    if mode == "raw":  # a quote left open quotes the rest
        opened = next((i for i, ch in enumerate(s) if ch in "'\"" and not mask[i]), len(s))
        mask[opened:] = b"\x01" * (len(s) - opened)
    return mask


def _expand(s: str, mode: Mode, limit: int) -> list[str]:
    start = _open(s, 0, mode)
    while start >= 0:
        found = group(s, start, mode)
        if found is not None:
            items, end = found
            pre, post = s[:start], s[end:]
            tails = _expand(post, mode, limit)
            out: list[str] = []
            for item in items:
                for head in _expand(item, mode, limit):
                    for tail in tails:
                        out.append(pre + head + tail)
                        if len(out) > limit:
                            raise TooLarge(s)
            return out
        start = _open(s, start + 1, mode)
    return [s]


def _open(s: str, i: int, mode: Mode) -> int:
    """Index of the next ``{`` that may open a group (``${`` never does)."""
    literal = _literal(s, mode) if mode != "value" else None
    while True:
        i = s.find("{", i)
        if i < 0 or not ((i and s[i - 1] == "$") or (literal is not None and literal[i])):
            return i
        i += 1


def group(s: str, start: int, mode: Mode = "value") -> tuple[list[str], int] | None:
    """The items of the brace group whose ``{`` is at ``start`` and the index after its ``}``,
    or None when bash keeps that brace literal (no comma at its level, not a sequence). A
    sequence's items are its words (in ``"raw"`` mode it raises :class:`Unexpandable`)."""
    literal = _literal(s, mode)
    depth, last = 0, start + 1
    items: list[str] = []
    for i in range(start, len(s)):
        ch = s[i]
        if literal[i]:
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                if items:
                    return [*items, s[last:i]], i + 1
                seq = sequence(s[start + 1:i])
                if seq is not None and mode == "raw":
                    raise Unexpandable(s)
                return (seq, i + 1) if seq is not None else None
        elif ch == "," and depth == 1:
            items.append(s[last:i])
            last = i + 1
    return None


def sequence(body: str) -> list[str] | None:
    """The words of a brace sequence's body (``1..3``, ``a..e..2``, ``01..10``), or None when
    it is not one. Raises :class:`TooLarge` past :data:`LIMIT` words."""
    m = _SEQ.fullmatch(body)
    if m is None:
        return None
    if m.group(1) is not None:
        a, b, step = int(m.group(1)), int(m.group(2)), abs(int(m.group(3) or 1)) or 1
        if abs(b - a) // step > LIMIT:
            raise TooLarge(body)
        width = max(len(m.group(1)), len(m.group(2))) if m.group(1).lstrip("-").startswith("0") or \
            m.group(2).lstrip("-").startswith("0") else 0
        rng = range(a, b + (1 if b >= a else -1), step if b >= a else -step)
        return [str(n).zfill(width) if width else str(n) for n in rng]
    a, b, step = ord(m.group(4)), ord(m.group(5)), abs(int(m.group(6) or 1)) or 1
    rng = range(a, b + (1 if b >= a else -1), step if b >= a else -step)
    return [chr(c) for c in rng]
