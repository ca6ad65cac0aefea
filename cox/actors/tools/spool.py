"""Collect a process's output without holding it all in memory: the first MiB in memory, the
rest in a temporary file, so a command that prints gigabytes cannot exhaust the session."""

from __future__ import annotations

import codecs
from typing import IO

MEMORY_LIMIT = 1024 * 1024


class Spool:
    def __init__(self, limit: int = MEMORY_LIMIT) -> None:
        self.limit = limit
        self.memory = bytearray()
        self.file: IO[bytes] | None = None
        self.size = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def write(self, data: bytes) -> str:
        """Keep ``data``; returns it decoded (for streaming), multi-byte characters kept whole."""
        self.size += len(data)
        if self.file is None and len(self.memory) + len(data) <= self.limit:
            self.memory += data
        else:
            if self.file is None:
                import tempfile  # with the first output too big for memory

                self.file = tempfile.TemporaryFile(prefix="cox-output-")
                self.file.write(self.memory)
                self.memory = bytearray()
            self.file.write(data)
        return self._decoder.decode(data)

    @property
    def spilled(self) -> bool:
        return self.file is not None

    def read(self) -> bytes:
        if self.file is None:
            return bytes(self.memory)
        self.file.seek(0)
        return self.file.read()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
