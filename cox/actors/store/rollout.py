"""The rollout: a session's events, one JSON object per line, append-only.

Each line is written whole with ``os.write`` (no buffer) and the file is fsynced at every turn
end, so a killed process loses at most the line being written. A write that fails (a full disk,
an I/O error) is cut back to the last whole line before the error is raised: the file never holds
half a line that a later append would glue onto, so freeing space and resuming works. Reading skips a torn last line (and says so) and
skips a corrupt line in the middle with a clear message, keeping everything else; the writer, when
it opens a rollout again (a resume), cuts a torn last line off, so after a restart the file holds
whole lines only.
"""

from __future__ import annotations

import json
import os
from dataclasses import field
from pathlib import Path
from typing import IO, Any

from cox.atomic import open_append
from cox.slim import dataclass


class RolloutWriter:
    """Appends lines to one rollout file. Not thread-safe: the store actor is its only user."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # O_NOFOLLOW, mode 0600: a link left at the rollout's name is refused, not appended through.
        self._file: IO[bytes] | None = open_append(path)
        self._torn = False
        self._held: list[str] = []
        # A torn last line from a killed process is cut off (it cannot be read; the events before
        # it can), so the file holds whole lines only and the next event starts a line of its own.
        self._cut_torn_tail()

    def _cut_torn_tail(self) -> None:
        assert self._file is not None
        fd = self._file.fileno()  # write-only (O_APPEND): the tail is read through a second one
        size = end = os.fstat(fd).st_size
        if size == 0:
            return
        reader = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
        try:
            while end > 0:
                start = max(0, end - 65536)
                newline = os.pread(reader, end - start, start).rfind(b"\n")
                if newline >= 0:
                    end = start + newline + 1
                    break
                end = start
        finally:
            os.close(reader)
        if end != size:
            os.ftruncate(fd, end)

    def append(self, line: str) -> None:
        self._write((line + "\n").encode("utf-8"))

    def hold(self, line: str) -> None:
        """Keep ``line`` (one or more whole lines) to be written by the next :meth:`flush`."""
        self._held.append(line)

    @property
    def held_count(self) -> int:
        return len(self._held)

    def flush(self) -> None:
        """Write the lines held, in order, with one ``write`` (all or nothing, as ``append``).
        They are dropped either way: a failed write is reported once, as a failed append is."""
        if self._held:
            lines, self._held = self._held, []
            self.append("\n".join(lines))

    def _write(self, data: bytes) -> None:
        """All of ``data`` at the end of the file, or nothing: a failed write is truncated back
        to where it started (O_APPEND: the end as it was) and the error raised."""
        f = self._file
        if f is None:
            raise ValueError(f"rollout {self.path} is closed")
        if self._torn:
            data = b"\n" + data
        fd = f.fileno()
        start = os.fstat(fd).st_size
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            try:
                os.ftruncate(fd, start)
            except OSError:
                self._torn = True  # the next append starts on a line of its own
            raise
        self._torn = False

    def sync(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self, fsync: bool = True) -> None:
        if self._file is not None:
            try:
                self.flush()
                if fsync:
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
