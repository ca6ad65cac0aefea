"""The store actor: the one writer of cox.db, the rollouts and the archive.

Other actors ``tell`` it tuples (cheap, ordered per sender) and ``ask`` only when they need an
answer (an archive id, an fsync acknowledgement), always with a timeout.

A write that fails (a full disk, an I/O error, a read-only file system) is never only a log
line: the store keeps the first failure of each session until the next ``sync`` and tells the
session once (``("storage_failed", episode, sentence)``, the session given with ``open``), and
``sync`` — asked at every turn end — raises :class:`StorageError` with that sentence, so the turn
ends with an error and ``cox run`` exits 1. The sentence says what failed and where.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from cox.log import get_logger
from cox.supervisors import CoxActor

from . import archive, db, lock, presence
from .layout import Layout
from .rollout import RolloutWriter

log = get_logger("cox.store")


TOLD = frozenset({"append", "title", "usage"})
"""Messages sent with ``tell``: nobody waits for their answer."""


class StorageError(Exception):
    """cox could not write its own record (rollout, cox.db, archive); the message says which
    file and why. ``episode`` numbers failures so a session reports each only once."""

    def __init__(self, message: str, episode: int = 0) -> None:
        super().__init__(message)
        self.episode = episode


def describe(what: str, where: Path, exc: BaseException) -> str:
    """``could not write the rollout /h/sessions/X.jsonl: no space left on device (ENOSPC)``."""
    from cox.atomic import why as reason

    why = reason(exc)
    hint = ""
    if "space" in why or "full" in why:
        hint = "; free some space there, then --resume continues from the last whole event"
    elif "read-only" in why:
        hint = "; set COX_HOME to a folder you can write"
    return f"could not write {what} {where}: {why}{hint}"


class StoreActor(CoxActor):
    def __init__(self, layout: Layout) -> None:
        super().__init__()
        self.layout = layout
        self.conn: sqlite3.Connection | None = None
        self.writers: dict[str, RolloutWriter] = {}
        self.reporters: dict[str, Any] = {}  # session id -> the session actor to tell of a failure
        self.failed: dict[str, StorageError] = {}  # session id -> first failure since its last sync
        self.episode = 0

    def on_start(self) -> None:
        self.layout.ensure()
        self.conn = db.connect(self.layout.db)
        try:
            self.conn.executescript(presence.SCHEMA)
        except sqlite3.Error as exc:
            log.warning("presence table not created", error=str(exc))

    def on_stop(self) -> None:
        for sid, w in self.writers.items():
            try:
                w.close()
            except OSError:
                log.warning("rollout close failed", path=str(w.path))
            lock.release(self.layout.sessions, sid)
        self.writers.clear()
        if self.conn is not None:
            for sid in list(self.reporters):
                try:
                    presence.unregister(self.conn, sid)
                except sqlite3.Error:
                    pass
            self.conn.close()
            self.conn = None

    def on_receive(self, message: Any) -> Any:
        try:
            return self._receive(message)
        except (OSError, sqlite3.Error) as exc:
            return self._failed(message, exc)

    def _failed(self, message: Any, exc: BaseException) -> Any:
        """Say what could not be written; keep it for the session's next sync; tell the session
        the first time; an ask gets the error too."""
        kind = message[0]
        sid = message[1]["id"] if kind == "open" else message[1] if kind in (
            "append", "sync", "close", "title", "usage") else None
        if kind in ("append", "open") or (kind in ("sync", "close") and not isinstance(exc, sqlite3.Error)):
            what, where = "the rollout", self.layout.rollout(str(sid))
        elif kind == "archive_put" and isinstance(exc, OSError):
            what, where = "an archived output to", self.layout.archive
        else:
            what, where = "the session index", self.layout.db
        error = StorageError(describe(what, where, exc))
        log.error("storage write failed", kind=kind, session=sid, error=str(error))
        if isinstance(sid, str) and sid not in self.failed:
            self.episode += 1
            error.episode = self.episode
            self.failed[sid] = error
            reporter = self.reporters.get(sid)
            if reporter is not None:
                try:
                    reporter.tell(("storage_failed", error.episode, str(error)))
                except Exception:  # the session is gone: its next sync, if any, still raises
                    pass
        elif isinstance(sid, str):
            error = self.failed[sid]
        if kind == "sync":
            self.failed.pop(str(sid), None)
        if kind in TOLD:
            return None  # a tell: raising would stop the store; the session hears of it instead
        raise error

    # The whole protocol of the store, one branch per message kind.
    def _receive(self, message: Any) -> Any:
        kind = message[0]
        conn = self.conn
        assert conn is not None
        if kind == "append":
            _, sid, line = message
            writer = self.writers.get(sid)
            if writer is None:
                writer = self.writers[sid] = RolloutWriter(self.layout.rollout(sid))
            writer.append(line)
            return None
        if kind == "sync":
            sid = message[1]
            writer = self.writers.get(sid)
            if writer is not None:
                writer.sync()
            if len(message) > 2 and message[2]:
                db.update_session(conn, sid, **message[2])
            pending = self.failed.pop(sid, None)
            if pending is not None:
                raise pending
            return True
        if kind == "open":
            meta = message[1]
            sid = meta["id"]
            if len(message) > 2 and message[2] is not None:
                self.reporters[sid] = message[2]
            lock.hold(self.layout.sessions, sid)  # no-op when the surface already took it
            if sid not in self.writers:
                self.writers[sid] = RolloutWriter(self.layout.rollout(sid))
            db.upsert_session(conn, meta)
            try:
                return presence.register(conn, sid, str(meta.get("cwd", "")))
            except sqlite3.Error as exc:
                log.warning("presence not recorded", error=str(exc))
                return []
        if kind == "close":
            sid = message[1]
            self.reporters.pop(sid, None)
            self.failed.pop(sid, None)
            writer = self.writers.pop(sid, None)
            try:
                if writer is not None:
                    writer.close()
            finally:
                lock.release(self.layout.sessions, sid)
                try:
                    presence.unregister(conn, sid)
                except sqlite3.Error:
                    pass
            db.update_session(conn, sid, status="closed")
            return True
        if kind == "title":
            db.set_title_if_empty(conn, message[1], message[2])
            return None
        if kind == "usage":
            db.record_usage(conn, message[1], message[2])
            return None
        if kind == "archive_put":
            return archive.put(conn, self.layout.archive, message[1], message[2] if len(message) > 2 else "tool_output")
        if kind == "archive_get":
            return archive.get(conn, self.layout.archive, message[1])
        if kind == "get_session":
            return db.get_session(conn, message[1])
        if kind == "spent_since":
            return db.usage_since(conn, message[1])
        if kind == "list_sessions":
            return db.list_sessions(conn, message[1] if len(message) > 1 else 50)
        raise ValueError(f"store: unknown message {kind!r}")



