"""The rollout: a session's events, one JSON object per line, append-only.

Each line is flushed as it is written and the file is fsynced at every turn end, so a killed
process loses at most the line being written. Reading skips a torn last line (and says so) and
stops with a clear message at a corrupt line in the middle, keeping everything before it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cox.atomic import open_append


class RolloutWriter:
    """Appends lines to one rollout file. Not thread-safe: the store actor is its only user."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # O_NOFOLLOW, mode 0600: a link left at the rollout's name is refused, not appended through.
        self._file: IO[str] | None = open_append(path, text=True)
        # A torn last line from a killed process must not glue onto the next event.
        if path.stat().st_size > 0:
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    self._file.write("\n")
                    self._file.flush()

    def append(self, line: str) -> None:
        f = self._file
        if f is None:
            raise ValueError(f"rollout {self.path} is closed")
        f.write(line + "\n")
        f.flush()

    def sync(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            try:
                self.sync()
            finally:
                self._file.close()
                self._file = None


@dataclass(slots=True)
class RolloutRead:
    events: list[dict[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def read_rollout(path: Path) -> RolloutRead:
    """Parse a rollout into event dicts. A torn last line is skipped with a notice; a bad line
    in the middle is skipped with a notice naming its line number (the rest still loads)."""
    out = RolloutRead()
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    last_index = len(lines) - 1
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
            if not isinstance(obj, dict) or "type" not in obj:
                raise ValueError("not an event object")
        except ValueError:
            torn = i == last_index or all(not x.strip() for x in lines[i + 1 :])
            if torn:
                out.notices.append(
                    f"the last line of {path.name} was cut short (the process was killed mid-write); skipped it"
                )
            else:
                out.notices.append(f"line {i + 1} of {path.name} is not a valid event; skipped it")
            continue
        out.events.append(obj)
    return out
