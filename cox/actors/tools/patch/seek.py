"""Find a hunk's lines in a file by content, with four passes of decreasing strictness.

Codex's ``seek_sequence``: exact; ignoring trailing whitespace; ignoring surrounding whitespace;
then with typographic dashes, quotes and odd spaces read as their ASCII twins. Models copy code
from memory, and memory drops a trailing space or turns ``--`` into an en dash; a stricter search
would fail those patches for nothing, a looser one (edit distance) could land a hunk on the wrong
lines. The first pass that finds the lines wins, and within a pass the first position does.

When nothing matches, :func:`diagnose` says why in terms a model can act on: the closest run
of lines and the first line that differs, or the nearest single lines.
"""

from __future__ import annotations

import difflib
import heapq
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["PASSES", "SeekMatch", "diagnose", "nearest", "normalise", "seek_sequence"]

_TOKENS = re.compile(r"\w+|[^\w\s]")
_SHORTLIST = 30

_ASCII = str.maketrans({
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
    **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
})


def normalise(line: str) -> str:
    """The fourth pass's view of a line: trimmed, typographic punctuation as ASCII."""
    return line.strip().translate(_ASCII)


def _exact(line: str) -> str:
    return line


def _rstrip(line: str) -> str:
    return line.rstrip()


def _strip(line: str) -> str:
    return line.strip()


PASSES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("exact", _exact),
    ("ignoring trailing whitespace", _rstrip),
    ("ignoring surrounding whitespace", _strip),
    ("reading typographic dashes and quotes as ASCII", normalise),
)


@dataclass(frozen=True)
class SeekMatch:
    index: int
    """0-based line where the pattern starts."""
    pass_: int
    """0 exact … 3 typographic; see :data:`PASSES`."""

    @property
    def fuzz(self) -> str | None:
        return None if self.pass_ == 0 else PASSES[self.pass_][0]


def seek_sequence(lines: Sequence[str], pattern: Sequence[str], start: int = 0,
                  eof: bool = False) -> SeekMatch | None:
    """Where ``pattern`` occurs in ``lines`` at or after ``start``. With ``eof`` the pattern
    must end the file (as Codex does: no fall back to an earlier position). An empty pattern
    matches at ``start``."""
    if not pattern:
        return SeekMatch(start, 0)
    n = len(pattern)
    if n > len(lines):
        return None
    first = len(lines) - n if eof else start
    if first < start:
        return None
    last = len(lines) - n
    for number, (_, view) in enumerate(PASSES):
        want = [view(p) for p in pattern]
        seen: Sequence[str] = [view(x) for x in lines[first:]] if number else lines[first:]
        head = want[0]
        for i in range(last - first + 1):
            if seen[i] == head and all(seen[i + k] == want[k] for k in range(1, n)):
                return SeekMatch(first + i, number)
    return None


def _shown(line: str) -> str:
    return repr(line if len(line) <= 120 else line[:120] + "…")


def diagnose(lines: Sequence[str], pattern: Sequence[str], start: int = 0, eof: bool = False) -> str:
    """Why ``pattern`` was not found, for the model: the best partial run and where it broke,
    or the file lines nearest to the pattern's first line. Lines are numbered from 1."""
    out: list[str] = []
    anywhere = seek_sequence(lines, pattern, 0, False)
    if anywhere is not None:
        where = f"line {anywhere.index + 1}"
        if anywhere.index < start:
            out.append(f"These lines exist at {where}, before the end of the previous hunk (line {start}): "
                       "hunks of one file must be in file order and must not overlap.")
        elif eof:
            out.append(f"These lines exist at {where}, but the hunk is marked '*** End of File' and the "
                       "file ends differently.")
        return "\n".join(out)
    best_len, best_at = 0, -1
    want = [normalise(p) for p in pattern]
    seen = [normalise(x) for x in lines]
    for i, line in enumerate(seen):
        if line != want[0]:
            continue
        k = 1
        while k < len(pattern) and i + k < len(seen) and seen[i + k] == want[k]:
            k += 1
        if k > best_len:
            best_len, best_at = k, i
    if best_len > 0:
        broke = best_at + best_len
        span = f"line {broke} matches" if best_len == 1 else f"lines {best_at + 1}-{broke} match"
        out.append(f"Closest match: {span} the first {best_len} of {len(pattern)} hunk lines; then")
        out.append(f"  expected: {_shown(pattern[best_len])}")
        out.append(f"  found:    {_shown(lines[broke]) if broke < len(lines) else '(end of file)'}"
                   + (f"  (line {broke + 1})" if broke < len(lines) else ""))
        return "\n".join(out)
    probe = next((p for p in pattern if p.strip()), pattern[0])
    near = nearest(lines, probe)
    if near:
        out.append(f"No line of the file equals {_shown(probe)}; nearest lines:")
        out.extend(f"  {i + 1}: {_shown(lines[i])}" for i in near)
    else:
        out.append(f"No line of the file resembles {_shown(probe)}.")
    return "\n".join(out)


def nearest(lines: Sequence[str], probe: str, n: int = 3, cutoff: float = 0.5) -> list[int]:
    """Indexes of the lines most like ``probe``, best first. Lines sharing the most tokens are
    shortlisted (cheap, so a 100,000-line file answers in a fraction of a second), then ranked
    by character similarity."""
    want = set(_TOKENS.findall(probe))
    if not want:
        return []
    scored: list[tuple[float, int]] = []
    for i, line in enumerate(lines):
        have = set(_TOKENS.findall(line))
        shared = len(want & have)
        if shared:
            scored.append((shared / len(want | have), -i))
    target = probe.strip()
    ranked: list[tuple[float, int]] = []
    for _, neg in heapq.nlargest(_SHORTLIST, scored):
        ratio = difflib.SequenceMatcher(None, target, lines[-neg].strip(), autojunk=False).ratio()
        if ratio >= cutoff:
            ranked.append((-ratio, -neg))
    return [i for _, i in sorted(ranked)[:n]]
