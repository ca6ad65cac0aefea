"""Shell words as the splitter sees them: the value after quote removal, the text as written, and
whether the value is only known when the command runs.

A word's canonical form (:func:`quote`) is what rules and grants compare: a word written without
quotes is its own form (``~``, ``*.py`` keep their meaning), a quoted one is re-quoted the one way
:func:`shlex.quote` does. :func:`vague` says when a word may turn into something else at run time
(an expansion, an unquoted glob), which the read-only allowlist must not take at face value.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from cox.slim import dataclass

__all__ = ["ASSIGNMENT", "GLOB_CHARS", "QUOTED_PART", "Word", "base", "canon", "word_forms", "plain_words", "quote", "vague"]

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
GLOB_CHARS = re.compile(r"[*?\[]")
# a quoted part of a word as written: what is left once these are gone is unquoted
QUOTED_PART = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"|\\.", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word: ``value`` after quote removal, ``raw`` as written, and whether it holds an
    expansion whose value only the running shell knows (``$x``, ``$(…)``)."""

    value: str
    raw: str
    dynamic: bool = False


def plain_words(tokens: Sequence[str]) -> list[Word]:
    """Words from text that has no tree (a parse error's pieces, a rule): values as written."""
    return [Word(t, t, "$" in t or "`" in t) for t in tokens]


def quote(w: Word) -> str:
    # A word written without quotes or escapes is its own canonical form (``~``, ``*.py`` keep
    # their meaning); a quoted one is re-quoted the one way shlex does, so ``"a b"`` is ``'a b'``.
    return w.raw if w.dynamic or w.raw == w.value else shlex.quote(w.value)


def word_forms(words: Sequence[Word]) -> list[str]:
    """Each word in canonical form. A first word that only looks like an assignment
    (``"FOO=1" cmd`` runs a program named ``FOO=1``) is quoted, so it never reads the same as a
    real assignment."""
    parts = [quote(w) for w in words]
    if parts and not words[0].dynamic and parts[0] == words[0].value and ASSIGNMENT.match(parts[0]):
        parts[0] = "'" + parts[0] + "'"
    return parts


def canon(words: Sequence[Word], extra: Sequence[str] = ()) -> str:
    """The canonical text of ``words`` followed by ``extra`` strings (redirects) as written."""
    return " ".join([*word_forms(words), *extra])


def base(value: str) -> str:
    """The program name of a command word: ``/usr/bin/env`` is ``env`` (rules see the basename)."""
    return value.rsplit("/", 1)[1] if "/" in value else value


def vague(w: Word) -> bool:
    """Whether a word's value is only known when it runs: an expansion, or an unquoted glob
    (a file named ``--output=x`` turns ``sort *`` into ``sort --output=x …``)."""
    if w.dynamic:
        return True
    raw = w.raw
    return GLOB_CHARS.search(raw) is not None and GLOB_CHARS.search(QUOTED_PART.sub("_", raw)) is not None
