"""The store actor: the one writer of cox.db, the rollouts and the archive.

Other actors ``tell`` it tuples (cheap, ordered per sender) and ``ask`` only when they need an
answer (an archive id, an fsync acknowledgement), always with a timeout.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from cox.log import get_logger
from cox.supervisors import CoxActor

from . import archive, db
from .layout import Layout
from .rollout import RolloutWriter

log = get_logger("cox.store")


class StoreActor(CoxActor):
    def __init__(self, layout: Layout) -> None:
        super().__init__()
        self.layout = layout
        self.conn: sqlite3.Connection | None = None
        self.writers: dict[str, RolloutWriter] = {}

    def on_start(self) -> None:
        self.layout.ensure()
        self.conn = db.connect(self.layout.db)

    def on_stop(self) -> None:
        for w in self.writers.values():
            try:
                w.close()
            except OSError:
                log.warning("rollout close failed", path=str(w.path))
        self.writers.clear()
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # The whole protocol of the store, one branch per message kind.
    def on_receive(self, message: Any) -> Any:
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
            writer = self.writers.get(message[1])
            if writer is not None:
                writer.sync()
            if len(message) > 2 and message[2]:
                db.update_session(conn, message[1], **message[2])
            return True
        if kind == "open":
            meta = message[1]
            db.upsert_session(conn, meta)
            if meta["id"] not in self.writers:
                self.writers[meta["id"]] = RolloutWriter(self.layout.rollout(meta["id"]))
            return True
        if kind == "close":
            writer = self.writers.pop(message[1], None)
            if writer is not None:
                writer.close()
            db.update_session(conn, message[1], status="closed")
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
