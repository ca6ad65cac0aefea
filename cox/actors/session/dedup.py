"""Dedup of repeated reads: an identical read-only file call within the window, with no write
to its subject since, is answered "unchanged since #<id>" instead of sending the bytes again."""

from __future__ import annotations

import json
from pathlib import Path

from cox.protocol.types import Risk, ToolCall

DEDUP_TOOLS = frozenset({"read", "grep", "glob", "ls"})
"""Tools whose output depends only on the files they name (bash's `date` does not)."""


class ReadCache:
    def __init__(self, window_turns: int) -> None:
        self.window = window_turns
        self._seen: dict[tuple[str, str], tuple[int, str, str]] = {}

    @classmethod
    def for_session(cls, dedup_window_turns: int, microcompact_after_turns: int) -> ReadCache:
        """A repeated read is answered from the earlier result only while that result is still
        sent whole (microcompaction has not turned it into a pointer yet)."""
        if microcompact_after_turns > 0:
            return cls(min(dedup_window_turns, microcompact_after_turns))
        return cls(dedup_window_turns)

    @staticmethod
    def _key(call: ToolCall) -> tuple[str, str]:
        return call.name, json.dumps(call.input, sort_keys=True, default=str)

    def lookup(self, call: ToolCall, turn: int) -> str | None:
        """The id of the earlier identical call, when it may stand for this one."""
        if self.window <= 0 or call.name not in DEDUP_TOOLS or call.risk is not Risk.READ_ONLY:
            return None
        hit = self._seen.get(self._key(call))
        if hit is None or turn - hit[0] >= self.window:
            return None
        return hit[1]

    def remember(self, call: ToolCall, turn: int) -> None:
        if call.name in DEDUP_TOOLS and call.risk is Risk.READ_ONLY:
            self._seen[self._key(call)] = (turn, call.id, call.subject)

    def invalidate(self, written: list[Path] | None) -> None:
        """A call is about to change ``written`` (None: it cannot say, so anything)."""
        if written is None:
            self._seen.clear()
            return
        if not written:
            return
        paths = [str(p) for p in written]
        for key, (_, _, subject) in list(self._seen.items()):
            if any(_related(subject, p) for p in paths):
                del self._seen[key]

    def clear(self) -> None:
        self._seen.clear()


def _related(subject: str, path: str) -> bool:
    """The write at ``path`` may change what a call on ``subject`` saw (same file, or one
    inside a folder the call listed or searched)."""
    if not subject:
        return True
    s = subject.rstrip("/")
    return path == s or path.startswith(s + "/") or s.startswith(path.rstrip("/") + "/")
