"""``re.compile`` for a module-level regex, done the first time the regex is used.

Why: a module-level ``re.compile`` runs when its module is imported. On the way to ``cox run
-p``'s first request that was ~30 regexes (permission rules, redaction, instruction files, agent
definitions, …), a few milliseconds, though most are used only by a later tool call or file.
``_X = lazyre.compile(pattern, flags)`` is written as ``re.compile`` is and keeps the pattern
text as it is; the stand-in compiles it with the first attribute read of it (``match``, ``sub``,
``pattern``, …) and then keeps each attribute it handed out on itself, so a later call costs
what the compiled regex's own method costs.

It is not a ``re.Pattern``: use it through its attributes only (not ``re.sub(_X, …)`` or
``isinstance``); :meth:`Lazy.compiled` gives the real one. Two threads using it first at the same
moment may both compile it; either result is the same regex.
"""

from __future__ import annotations

import re
from typing import Any, cast

__all__ = ["Lazy", "compile"]


class Lazy:
    """A regex compiled on first use (see the module docstring)."""

    def __init__(self, pattern: str, flags: int | re.RegexFlag = 0) -> None:
        self._source = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        rx = self._compiled
        if rx is None:
            rx = self._compiled = re.compile(*self._source)
        return rx

    def is_compiled(self) -> bool:
        return self._compiled is not None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # no regex attribute starts with one; copy and pickle probe for them
            raise AttributeError(name)
        value = getattr(self.compiled(), name)
        setattr(self, name, value)  # found in the instance from now on, without this method
        return value

    def __repr__(self) -> str:
        return f"lazyre.compile({self._source[0]!r}, {self._source[1]!r})"


def compile(pattern: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]:  # noqa: A001  # re.compile's name
    """``re.compile(pattern, flags)`` on first use (typed as the regex it stands for)."""
    return cast("re.Pattern[str]", Lazy(pattern, flags))
