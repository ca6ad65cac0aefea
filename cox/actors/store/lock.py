"""One writer per session: a process holds ``sessions/<id>.lock`` (an ``flock``) while it
appends to that session's rollout.

Two processes resuming one session would both append to one rollout, and the next resume would
rebuild an interleaved history (commands that ran reported as "aborted"). The lock is taken
before the session starts (``--resume``/``--continue``) and again, as a no-op, when the store
opens the rollout; it is released when the store closes the session, or by the kernel when the
process dies — a SIGKILLed holder never leaves a stale lock. The file holds the holder's pid, so
the refusal can name it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

_held: dict[str, int] = {}  # lock path -> fd, for this process
_guard = threading.Lock()


class SessionBusy(Exception):
    """Another live process holds the session; ``pid`` is its process id (0 if unknown)."""

    def __init__(self, session_id: str, pid: int) -> None:
        who = f"process {pid}" if pid else "another process"
        super().__init__(
            f"session {session_id} is in use by {who}; wait for it to end, stop it, or pass "
            "--fork-session to continue a copy under a new session id")
        self.session_id = session_id
        self.pid = pid


def lock_path(sessions: Path, session_id: str) -> Path:
    return sessions / f"{session_id}.lock"


def holder(path: Path) -> int:
    """The pid written in a lock file (0 when unreadable)."""
    try:
        return int(path.read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError):
        return 0


def hold(sessions: Path, session_id: str) -> None:
    """Take the session's lock for this process (idempotent), or raise :class:`SessionBusy`."""
    path = lock_path(sessions, session_id)
    key = str(path)
    with _guard:
        if key in _held or fcntl is None:
            return
        sessions.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SessionBusy(session_id, holder(path)) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        except OSError:
            pass  # a full disk: the lock still holds, only the pid is not named
        _held[key] = fd


def release(sessions: Path, session_id: str) -> None:
    """Drop this process's lock on the session (no-op when not held)."""
    with _guard:
        fd = _held.pop(str(lock_path(sessions, session_id)), None)
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock; the file stays for the next holder


def busy(sessions: Path, session_id: str) -> SessionBusy | None:
    """Whether another live process holds the session (what :func:`hold` would refuse), told
    without taking the lock: the resume picker marks such a session before anyone chooses it.
    A holder named in the file but dead (the kernel dropped its lock) is not probed at all; a
    live one is probed with a shared, non-blocking ``flock`` dropped at once."""
    path = lock_path(sessions, session_id)
    with _guard:
        if str(path) in _held or fcntl is None:
            return None
    from .presence import alive

    pid = holder(path)
    if pid == os.getpid() or (pid and not alive(pid)):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None  # no lock file: never held
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return SessionBusy(session_id, pid)
    except OSError:
        return None
    finally:
        os.close(fd)  # closing drops the probe's shared lock
    return None

