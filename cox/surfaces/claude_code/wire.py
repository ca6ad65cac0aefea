"""The one writer of this dialect's stdout: one JSON object per line, written whole and flushed
under a lock. The driver prints messages, the stdin reader answers control requests, the
session's thread asks hook callbacks and MCP calls go out from theirs: without one lock two lines
could interleave mid-line and the client would read neither."""

from __future__ import annotations

import json
import threading
from typing import IO, Any


class Wire:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.lock = threading.Lock()
        self.closed = False

    def send(self, message: dict[str, Any], *, flush: bool = True) -> bool:
        """Write one line; False when stdout is gone (the client left: nothing to tell it)."""
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        with self.lock:
            if self.closed:
                return False
            try:
                self.out.write(line)
                if flush:
                    self.out.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.closed = True
                return False
        return True

    def flush(self) -> None:
        with self.lock:
            try:
                self.out.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.closed = True
