"""Bash brace expansion of one literal word, so deny rules see what ``{rm,-rf,x}`` runs.

bash expands ``{a,b}`` and ``{1..3}`` before it looks for the command name, so the word
``{rm,-rf,x}`` is the command ``rm -rf x`` and ``sort {-o,out}`` is ``sort -o out``. The splitter
expands such words itself (bounded: a word that would grow past :data:`LIMIT` words is reported
as too large, and the caller makes the line opaque) and judges the words bash would run.

Only the unquoted parts of a word expand; :func:`has_braces` tells from the raw text whether any
unquoted brace group is there, and :func:`expand` works on the unquoted value (quotes already
removed), so a quoted comma inside braces expands here when bash would not: that only adds forms
for deny and ask rules, never an allow.
"""

from __future__ import annotations

import re

from .words import QUOTED_PART

__all__ = ["LIMIT", "expand", "has_braces", "sequence"]

LIMIT = 256
_GROUP = re.compile(r"(?<!\$)\{[^{}]*(?:,|\.\.)[^{}]*\}|\{[^{}]*\{")
_SEQ = re.compile(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?")


class TooLarge(ValueError):
    """The expansion would be larger than :data:`LIMIT` words."""


def has_braces(raw: str) -> bool:
    """Whether ``raw`` (a word as written) holds an unquoted brace group bash may expand."""
    if "{" not in raw or "}" not in raw:
        return False
    return _GROUP.search(QUOTED_PART.sub("_", raw)) is not None


def expand(word: str) -> list[str]:
    """The words bash makes of ``word`` by brace expansion (``[word]`` when nothing expands).
    Raises :class:`TooLarge` past :data:`LIMIT` words."""
    out = _expand(word)
    return out if out else [word]


def _expand(s: str) -> list[str]:
    start = _open(s, 0)
    while start >= 0:
        end, items = _group(s, start)
        if end >= 0 and items is not None:
            pre, post = s[:start], s[end + 1:]
            tails = _expand(post)
            out: list[str] = []
            for item in items:
                for head in _expand(item):
                    for tail in tails:
                        out.append(pre + head + tail)
                        if len(out) > LIMIT:
                            raise TooLarge(s)
            return out
        start = _open(s, start + 1)
    return [s]


def _open(s: str, i: int) -> int:
    """Index of the next ``{`` that may open a group (``${`` never does)."""
    while True:
        i = s.find("{", i)
        if i <= 0 or s[i - 1] != "$":
            return i
        i += 1


def _group(s: str, start: int) -> tuple[int, list[str] | None]:
    """The closing brace of the group at ``start`` and its items (None: not a brace group)."""
    depth, last = 0, start + 1
    items: list[str] = []
    i = start
    while i < len(s):
        ch = s[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                body = s[start + 1:i]
                if items:
                    items.append(s[last:i])
                    return i, items
                seq = sequence(body)
                return (i, seq) if seq is not None else (-1, None)
        elif ch == "," and depth == 1:
            items.append(s[last:i])
            last = i + 1
        i += 1
    return -1, None


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
