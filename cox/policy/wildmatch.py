"""The one glob-to-regex translator, with the three dialects cox reads globs in.

A glob means slightly different things to a permission rule, to bash and to git, and each of
the three used to have its own translator; they disagreed (the .gitignore fallback expanded
``{a,b}``, which git never does). :func:`translate` is now the only one and the dialect names
the difference:

- ``"rule"``, the path globs of file rules (``Read(~/.ssh/**)``, :mod:`cox.policy.globs`):
  ``**/`` anywhere is any number of folders, a trailing ``/**`` matches the folder itself too
  (a deny on a tree stops a search rooted at it), any other ``**`` spans folders (so
  ``~/.ssh**`` is as wide as it looks); no braces.
- ``"shell"``, bash with ``globstar`` (the ``glob`` tool, ``grep``'s ``glob``): ``**`` is
  special only as a whole segment (``**/`` any number of folders, a trailing ``**`` everything
  below), elsewhere it is ``*``; ``{a,b}`` and ``{1..3}`` expand as bash's brace expansion
  does, and a brace with no comma or range (``{a}``, ``a{b``) is literal, as in bash.
- ``"gitignore"``, git's wildmatch: ``**`` as for the shell, and braces are literal.

Shared by all three: ``*`` and ``?`` never match ``/``; ``[abc]``, ``[a-z]``, ``[!abc]`` /
``[^abc]`` and POSIX classes (``[[:digit:]]``) are classes that never match ``/`` either; an
unclosed ``[`` is literal; ``\\x`` is the character x. The result is regex text without anchors;
callers add their own prefix and ``\\Z``.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Dialect", "translate"]

Dialect = Literal["rule", "shell", "gitignore"]

_POSIX = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v", "upper": "A-Z", "xdigit": "0-9A-Fa-f",
}


def translate(pattern: str, dialect: Dialect) -> str:
    """Regex text (unanchored) for ``pattern`` read in ``dialect``."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            out.append(_stars(pattern, i, j, dialect, out))
            i = j + 1 if out[-1] == "(?:.*/)?" else j
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            cls = _class(pattern, i, dialect)
            if cls is None:
                out.append(re.escape(c))
                i += 1
            else:
                out.append(cls[0])
                i = cls[1]
        elif c == "{" and dialect == "shell":
            group = _braces(pattern, i)
            if group is None:
                out.append(re.escape(c))
                i += 1
            else:
                out.append("(?:" + "|".join(translate(item, dialect) for item in group[0]) + ")")
                i = group[1]
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _stars(pattern: str, i: int, j: int, dialect: Dialect, out: list[str]) -> str:
    """Regex text for the run of ``*`` at ``pattern[i:j]``; ``(?:.*/)?`` means the ``/`` after
    it was eaten too. A rule's trailing ``/**`` rewrites the ``/`` before it."""
    n = len(pattern)
    if dialect == "rule":
        if j - i == 1:
            return "[^/]*"
        if j - i == 2 and j < n and pattern[j] == "/":
            return "(?:.*/)?"
        if j - i == 2 and j == n and out and out[-1] == "/":
            out.pop()
            return "(?:/.*)?"
        return ".*"
    whole = j - i == 2 and (i == 0 or pattern[i - 1] == "/")
    if whole and j < n and pattern[j] == "/":
        return "(?:.*/)?"
    if whole and j == n:
        return ".*"
    return "[^/]*"


def _class(pattern: str, i: int, dialect: Dialect) -> tuple[str, int] | None:
    """The bracket expression at ``pattern[i]`` as a regex class and the index after it, or
    None when it is not closed (the ``[`` is then literal). A reversed range (``z-a``) matches
    nothing, as in git and bash; in a rule it is a mistake worth saying (ValueError)."""
    n = len(pattern)
    j = i + 1
    negate = j < n and pattern[j] in "!^"
    if negate:
        j += 1
    parts: list[str] = []
    first = True
    while j < n and (first or pattern[j] != "]"):
        first = False
        if pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            name = pattern[j + 2:end] if end >= 0 else ""
            if name in _POSIX:
                parts.append(_POSIX[name])
                j = end + 2
                continue
        ch, j = _class_char(pattern, j)
        if j + 1 < n and pattern[j] == "-" and pattern[j + 1] != "]":
            hi, k = _class_char(pattern, j + 1)
            if ord(hi) >= ord(ch):
                parts.append(re.escape(ch) + "-" + re.escape(hi))
            elif dialect == "rule":
                raise ValueError(f"the range {ch}-{hi} is reversed (write {hi}-{ch})")
            j = k
        else:
            parts.append(re.escape(ch))
    if j >= n:
        return None
    body = "".join(parts)
    if negate:
        return "[^/" + body + "]", j + 1
    return ("(?!/)[" + body + "]" if body else "(?!)"), j + 1


def _class_char(pattern: str, j: int) -> tuple[str, int]:
    if pattern[j] == "\\" and j + 1 < len(pattern):
        return pattern[j + 1], j + 2
    return pattern[j], j + 1


def _braces(pattern: str, i: int) -> tuple[list[str], int] | None:
    """The items of the brace group opening at ``pattern[i]`` and the index after it, or None
    when bash would keep the brace literal (bash's expansion: :func:`cox.policy.braces.group`)."""
    from .braces import TooLarge, group

    try:
        return group(pattern, i, "pattern")
    except TooLarge:
        return None
