"""Replace a file so that a reader sees the old bytes or the new ones, never half of either.

One helper for every such write (edited files, the MCP trust store, the tool-listing cache, the
token file): a temporary file in the same folder (``mkstemp``: mode 0600), then ``os.replace``;
the temporary file is removed if anything fails on the way.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, fsync: bool = False,
                 suffix: str = ".tmp") -> None:
    """Replace ``path`` with ``data``. ``mode``: the new file's permission bits (default: 0600,
    as ``mkstemp`` makes it); ``fsync``: on disk before the rename (for what must survive a
    power cut, not for caches)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
