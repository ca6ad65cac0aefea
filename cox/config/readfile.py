"""Read a settings file a repository may have planted, without hanging on it.

Why: git stores symlinks, so a cloned repository can make ``.cox/config.toml`` or
``.claude/settings.json`` point at ``/dev/zero``, ``/dev/stdin`` or a FIFO; a plain ``read_bytes``
then blocks or fills memory before cox has said a word. A settings file is read only when it is a
regular file of a sane size, opened without blocking first.

Where the user's Claude Code files are (``user_claude_dir``) is here too, so that finding them
costs nothing more than this module: Claude's settings reader (``claude.py``) loads only when
there is a file to read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

__all__ = ["LIMIT", "NotASettingsFile", "read_settings_bytes", "user_claude_dir", "user_settings_path"]

LIMIT = 4 * 1024 * 1024  # far above any real settings file


class NotASettingsFile(OSError):
    """The path exists but is not something cox reads as settings (``strerror`` says why)."""


def read_settings_bytes(path: Path, limit: int = LIMIT) -> bytes:
    """The bytes of ``path``. Raises ``FileNotFoundError`` when it is missing, and
    :class:`NotASettingsFile` when it is a folder, a device, a FIFO or larger than ``limit``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise NotASettingsFile(errno.EISDIR, "is a folder, not a settings file")
        if not stat.S_ISREG(st.st_mode):
            raise NotASettingsFile(errno.EINVAL, "is not a regular file (a device, FIFO or socket)")
        if st.st_size > limit:
            raise NotASettingsFile(errno.EFBIG, f"is larger than {limit // (1024 * 1024)} MB")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 65536):
            size += len(chunk)
            if size > limit:  # it grew while being read
                raise NotASettingsFile(errno.EFBIG, f"is larger than {limit // (1024 * 1024)} MB")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def user_claude_dir(home: Path, env: Mapping[str, str]) -> Path:
    """The user's Claude Code folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude`` (its settings,
    CLAUDE.md, agents, commands and skills)."""
    folder = env.get("CLAUDE_CONFIG_DIR")
    return Path(folder).expanduser() if folder else home / ".claude"


def user_settings_path(home: Path, env: Mapping[str, str]) -> Path:
    """``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude/settings.json``."""
    return user_claude_dir(home, env) / "settings.json"
