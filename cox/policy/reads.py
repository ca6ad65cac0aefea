"""Read-only bash commands that read what a Read deny rule protects.

The default config denies the file tools ``~/.ssh/**`` and other credential stores, yet ``cat
~/.ssh/id_rsa`` is a read-only command the risk default would run without asking. This guard
finds read-only commands whose arguments (or ``< file`` inputs, or the directory a recursive
search starts from) name such a path, following ``cd`` along the line; the engine then asks
instead of running them unasked (and cox run -p denies). It never denies on its own and never
makes a command covered that was not: it only takes away the read-only auto-allow.

It is a best-effort guard for the plain cases (a path built at run time or piped in from
``find`` escapes it); the sandbox is the boundary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .bash import Split
from .globs import normalise
from .rules import Rule

__all__ = ["ReadGuard", "literal_base"]

_GREPS = frozenset({"grep", "egrep", "fgrep"})


def searches_recursively(text: str) -> bool:
    """Whether a (canonical) command reads every file under its directory arguments."""
    words = text.split()
    name = words[0] if words else ""
    if name in ("rg", "ag"):
        return True
    return name in _GREPS and any(w in ("--recursive", "--dereference-recursive") or (
        w.startswith("-") and not w.startswith("--") and ("r" in w or "R" in w)) for w in words[1:])


class ReadGuard:
    """The Read deny rules of one engine, compiled for checking many paths fast."""

    def __init__(self, rules: Sequence[Rule], home: str, roots: Sequence[str]) -> None:
        self.rules = tuple(rules)
        self.home = home
        self.root = roots[0] if roots else "/"
        self.any = next((r for r in self.rules if r.regex is None), None)  # a bare Read deny
        patterns = [f"(?:{r.regex.pattern})" for r in self.rules if r.regex is not None]
        self.rx = re.compile("|".join(patterns), re.DOTALL) if patterns else None
        self.bases = [(r, b) for r in self.rules if (b := self._literal_base(r)) is not None]

    def check(self, sp: Split) -> dict[str, tuple[Rule, str]]:
        """``{command text: (deny rule, what it reads)}`` for the read-only commands of ``sp``."""
        if not self.rules:
            return {}
        out: dict[str, tuple[Rule, str]] = {}
        cwd: str | None = self.root
        for c in sp.commands:
            if not c.read_only:
                continue
            recursive = searches_recursively(c.text)
            for p in (*c.paths, ".") if recursive else c.paths:
                if cwd is None and not p.startswith(("/", "~")):
                    continue  # after ``cd -`` relative paths are anyone's guess
                full = normalise(p, self.home, cwd or "/")
                r = self.denied(full)
                if r is None and recursive:
                    r = self.denied_below(full)
                    p = f"every file under {p}" if r is not None else p
                if r is not None:
                    out[c.text] = (r, p)
                    break
            if c.text == "cd" or c.text.startswith(("cd ", "pushd ")):
                cwd = self.home if not c.paths else normalise(c.paths[0], self.home, cwd) if cwd else None
        return out

    def denied(self, path: str) -> Rule | None:
        if self.any is not None:
            return self.any
        if self.rx is None or self.rx.match(path) is None:
            return None
        return next((r for r in self.rules if r.matches(path)), None)

    def denied_below(self, path: str) -> Rule | None:
        """A deny rule for something inside directory ``path`` (``rg key ~`` reads ~/.ssh)."""
        below = path.rstrip("/") + "/"
        return next((r for r, base in self.bases if (base + "/").startswith(below)), None)

    def _literal_base(self, r: Rule) -> str | None:
        return literal_base(r.value, self.home)


def literal_base(value: str, home: str) -> str | None:
    """The absolute directory a home-anchored or absolute path rule starts with (before any
    glob character; the whole path when it has none); None for a relative one, which may match
    anywhere under a root. (The sandbox masks what it names.)"""
    cut = min((i for i, ch in enumerate(value) if ch in "*?[\\"), default=len(value))
    literal = value[:cut].rsplit("/", 1)[0] if cut < len(value) else value
    if not literal or not literal.startswith(("/", "~")):
        return None
    return normalise(literal, home, "/")
