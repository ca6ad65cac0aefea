"""Diagnostics as the model reads them: ``path:line:col: severity: message [source code]``.

One line per diagnostic (a multi-line message is folded onto its line), most severe first, then
by position; positions are 1-based characters (the wire's UTF-16 columns converted with the
line's text when it is known). Everything a server wrote passes :func:`sanitize`: its text is as
untrusted as any tool output.
"""

from __future__ import annotations

from typing import Any

from cox.policy.sanitize import sanitize

from .server import from_utf16

__all__ = ["SEVERITY", "key", "line_of", "lines", "ordered", "summary"]

SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}


def _start(d: dict[str, Any]) -> tuple[int, int]:
    start = (d.get("range") or {}).get("start") or {}
    line, ch = start.get("line", 0), start.get("character", 0)
    return (line if isinstance(line, int) else 0, ch if isinstance(ch, int) else 0)


def _severity(d: dict[str, Any]) -> int:
    s = d.get("severity")
    return s if isinstance(s, int) and s in SEVERITY else 1


def key(d: dict[str, Any]) -> tuple[int, str, str]:
    """What identifies a diagnostic across two reports: its start line, code and message."""
    return (_start(d)[0], str(d.get("code", "")), str(d.get("message", "")))


def line_of(d: dict[str, Any], shown: str, text_lines: list[str] | None) -> str:
    line, units = _start(d)
    col = from_utf16(text_lines[line], units) if text_lines and 0 <= line < len(text_lines) else units
    message = " ".join(str(d.get("message", "")).split())
    tag = " ".join(str(x) for x in (d.get("source"), d.get("code")) if x not in (None, ""))
    return sanitize(f"{shown}:{line + 1}:{col + 1}: {SEVERITY[_severity(d)]}: {message}"
                    + (f" [{tag}]" if tag else ""))


def ordered(diagnostics: list[Any]) -> list[dict[str, Any]]:
    items = [d for d in diagnostics if isinstance(d, dict)]
    return sorted(items, key=lambda d: (_severity(d), *_start(d), str(d.get("message", ""))))


def lines(diagnostics: list[Any], shown: str, text: str | None) -> list[str]:
    text_lines = text.split("\n") if text is not None else None
    return [line_of(d, shown, text_lines) for d in ordered(diagnostics)]


def summary(diagnostics: list[Any]) -> str:
    counts: dict[int, int] = {}
    for d in diagnostics:
        if isinstance(d, dict):
            counts[_severity(d)] = counts.get(_severity(d), 0) + 1
    if not counts:
        return "no diagnostics"
    parts = []
    for sev in sorted(counts):
        n, word = counts[sev], SEVERITY[sev]
        parts.append(f"{n} {word}{'' if n == 1 else 's'}" if word != "info" else f"{n} info")
    return ", ".join(parts)
