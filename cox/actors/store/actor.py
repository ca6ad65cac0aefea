"""The store actor: the one writer of cox.db, the rollouts and the archive.

Every row of cox.db — sessions, usage, archive, presence, checkpoints, post-images, turn
markers — is written on this actor's thread; readers open cox.db read-only (``db.connect_ro``).
The checkpointer reads files and git on its caller's thread and sends the rows here
(``Checkpoint``, ``PostImages``, ``Marker``); the only files written elsewhere are ones no reader
can reach before a row here names them: a staged pre-image's ``archive/<id>`` and the private
checkpoint repository's content-addressed git objects.

Other actors ``tell`` it the typed messages of ``messages.py`` (cheap, ordered per sender) and
``ask`` only when they need an answer (an archive id, an fsync acknowledgement), always with a
timeout.

Rollout lines are held per session while other messages wait and written when the store has
nothing queued, with one ``write`` per session (and always before that session's ``Sync`` or
``Close``, and before a barrier ``Sync("")`` answers): when hundreds of subagents end at once,
their lines cost the writer one write each, and the parent's turn-end sync behind them waits
for list appends, not for hundreds of writes each giving the GIL away. Held lines are as
durable as told ones were (both only in memory until written); a failed write is reported as a
failed append was.

A write that fails (a full disk, an I/O error, a read-only file system) is never only a log
line: the store keeps the first failure of each session until the next ``sync`` and tells the
session once (``("storage_failed", episode, sentence)``, the session given with ``open``), and
the session's next ``TurnEnd`` (told at every turn end of a session that is not a subagent, and
answered to its reply) or ``Sync`` reports it: the rollout gets the error and an error turn_done
instead of the turn's own, so the turn ends with an error and ``cox run`` exits 1. The sentence
says what failed and where.

A store that dies (its supervisor starts a new one) loses the tells still in its mailbox. The new
incarnation knows the sessions opened with it; a write for any other session means records of that
session went to the store that died, so it counts as a failed write of that session's rollout
(kept for its next sync, which raises it) while the write itself still goes ahead: the rollout keeps
whole lines, and the turn that lost some of its record does not end as a success.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from cox.actors.session.messages import StorageFailed
from cox.log import get_logger
from cox.supervisors import CoxActor

from . import checkpoint_rows, db, lock, presence
from . import messages as sm
from .layout import Layout
from .messages import TOLD, Append, Close, Marker, Open, Sync, Title, TurnEnd, Usage
from .rollout import RolloutWriter

if TYPE_CHECKING:
    from .messages import StoreMessage

log = get_logger("cox.store")

HOLD_LINES = 512
"""A session's held lines are written once there are this many, even while messages wait."""


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
        self.opened: set[str] = set()
        """Sessions opened with this incarnation of the store (or adopted after a restart)."""
        self.held: set[str] = set()
        """Sessions whose writer holds lines not written yet."""

    def on_start(self) -> None:
        self.layout.ensure()
        self.conn = db.connect(self.layout.db)
        try:
            self.conn.executescript(presence.SCHEMA)
        except sqlite3.Error as exc:
            log.warning("presence table not created", error=str(exc))
        try:
            checkpoint_rows.ensure_schema(self.conn)
        except sqlite3.Error as exc:  # a checkpoint message then fails: a notice, never a turn
            log.warning("checkpoint tables not created", error=str(exc))

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

    def on_failure(self, exception_type: type[BaseException] | None, exception_value: BaseException | None,
                   traceback: TracebackType | None) -> None:
        """This incarnation dies; its supervisor starts the next one. Close its files and its
        connection (else every death leaks them), but keep the sessions' locks and presence rows:
        the sessions go on, with the next store."""
        for w in self.writers.values():
            try:
                w.close()
            except OSError:
                log.warning("rollout close failed", path=str(w.path))
        self.writers.clear()
        if self.conn is not None:
            try:
                self.conn.close()
            except sqlite3.Error:
                pass
            self.conn = None

    def on_receive(self, message: StoreMessage | TurnEnd) -> Any:
        if isinstance(message, (Append, Sync, Close, Title, Usage, TurnEnd)) and message.session \
                and message.session not in self.opened:
            self._adopt(message)
        try:
            return self._receive(message)
        except (OSError, sqlite3.Error) as exc:
            if isinstance(message, TurnEnd):
                return None  # its answer (this failure) went to its reply
            return self._failed(message, exc)
        finally:
            if self.held and self.actor_inbox.empty():
                self._write_held()

    def _write_held(self, sid: str | None = None) -> None:
        """Write the lines held for ``sid`` (None: every session); a failed write is that
        session's failed append (kept for its next sync, told to it once)."""
        for each in [sid] if sid is not None else list(self.held):
            self.held.discard(each)
            writer = self.writers.get(each)
            if writer is None:
                continue
            try:
                writer.flush()
            except OSError as exc:
                self._failed(Append(each, ""), exc)

    def _adopt(self, message: Append | Sync | Close | Title | Usage | TurnEnd) -> None:
        """A session this store never opened writes: the store before this one stopped with
        some of its record unwritten. Say so once, as a failed rollout write of that session."""
        sid = message.session
        self.opened.add(sid)
        where = self.layout.rollout(sid)
        error = StorageError(f"could not write the rollout {where}: cox's store stopped and was restarted during "
                             "this session, so events sent to it were lost (the lines the rollout holds are whole); "
                             "--resume continues from what it holds")
        log.error("store restarted: a session's records were lost", session=sid, kind=type(message).__name__)
        if sid not in self.failed:
            self.episode += 1
            error.episode = self.episode
            self.failed[sid] = error
        try:
            lock.hold(self.layout.sessions, sid)  # a no-op: this process holds it already
        except Exception as exc:
            log.warning("session lock not taken again", session=sid, error=str(exc))

    def _failed(self, message: StoreMessage, exc: BaseException) -> Any:
        """Say what could not be written; keep it for the session's next sync; tell the session
        the first time; an ask gets the error too."""
        sid = message.session if isinstance(message, (Open, Append, Sync, Close, Title, Usage)) else None
        rollout = isinstance(message, (Append, Open)) or (
            isinstance(message, (Sync, Close)) and not isinstance(exc, sqlite3.Error))
        if rollout:
            what, where = "the rollout", self.layout.rollout(str(sid))
        elif isinstance(message, sm.ArchivePut) and isinstance(exc, OSError):
            what, where = "an archived output to", self.layout.archive
        else:
            what, where = "the session index", self.layout.db
        error = StorageError(describe(what, where, exc))
        log.error("storage write failed", kind=type(message).__name__, session=sid, error=str(error))
        if sid is not None and sid not in self.failed:
            self.episode += 1
            error.episode = self.episode
            self.failed[sid] = error
            reporter = self.reporters.get(sid)
            if reporter is not None:
                try:
                    reporter.tell(StorageFailed(error.episode, str(error)))
                except Exception:  # the session is gone: its next sync, if any, still raises
                    pass
        elif sid is not None:
            error = self.failed[sid]
        if isinstance(message, Sync):
            self.failed.pop(str(sid), None)
        if isinstance(message, TOLD):
            return None  # a tell: raising would stop the store; the session hears of it instead
        raise error

    def _turn_end(self, message: TurnEnd) -> None:
        """A durable session's turn ends (``messages.TurnEnd``): its answer goes to ``reply``,
        always (a failure of this store's own is the answer too, then raised as before)."""
        answer: BaseException | None = None
        try:
            answer = self._end_turn(message)
        except BaseException as exc:
            answer = exc
            raise
        finally:
            try:
                message.reply(answer)
            except Exception:  # noqa: BLE001 - the session is gone: nobody waits
                log.warning("turn end answer not delivered", session=message.session)

    def _end_turn(self, message: TurnEnd) -> StorageError | None:
        sid = message.session
        conn = self.conn
        assert conn is not None
        path = self.layout.rollout(sid)

        def failure(exc: OSError) -> StorageError:
            return self._episode(StorageError(describe("the rollout", path, exc)))

        error: StorageError | None = None
        writer = self.writers.get(sid)
        try:
            if writer is None:
                writer = self.writers[sid] = RolloutWriter(path)
            if sid in self.held:
                self.held.discard(sid)
                writer.flush()
        except OSError as exc:
            error = failure(exc)
        error = self.failed.pop(sid, None) or error  # the first failure since the last sync, if any
        text = message.line if error is None or message.failed is None else message.failed(str(error))
        if writer is not None:
            try:
                writer.append(text)
                writer.sync()
            except OSError as exc:
                error = error or failure(exc)
        if message.meta:
            try:
                db.update_session(conn, sid, **message.meta)
            except sqlite3.Error as exc:
                error = error or self._episode(StorageError(describe("the session index", self.layout.db, exc)))
        if error is not None:
            log.error("storage write failed", kind="TurnEnd", session=sid, error=str(error))
        return error

    def _episode(self, error: StorageError) -> StorageError:
        """Number a failure the answer reports itself (nobody is told of it apart)."""
        self.episode += 1
        error.episode = self.episode
        return error

    # The whole protocol of the store, one case per message. The ``sm.`` names are read only when
    # a message gets that far: the cases above them are all a run sends before its first request.
    def _receive(self, message: StoreMessage | TurnEnd) -> Any:
        conn = self.conn
        assert conn is not None
        match message:
            case TurnEnd():
                self._turn_end(message)
                return None
            case Append(sid, line):
                writer = self.writers.get(sid)
                if writer is None:
                    writer = self.writers[sid] = RolloutWriter(self.layout.rollout(sid))
                writer.hold(line)
                self.held.add(sid)
                if writer.held_count >= HOLD_LINES:
                    self.held.discard(sid)
                    writer.flush()
                return None
            case Sync(sid, meta, durable):
                writer = self.writers.get(sid)
                if not sid:
                    self._write_held()  # a barrier: everything sent before is written
                elif writer is not None and sid in self.held:
                    self.held.discard(sid)
                    writer.flush()  # a failure is this sync's error
                if writer is not None and durable:
                    writer.sync()
                if meta:
                    db.update_session(conn, sid, **meta)
                pending = self.failed.pop(sid, None)
                if pending is not None:
                    raise pending
                return True
            case Open(meta, reporter):
                sid = message.session
                self.opened.add(sid)
                if reporter is not None:
                    self.reporters[sid] = reporter
                lock.hold(self.layout.sessions, sid)  # no-op when the surface already took it
                if sid not in self.writers:
                    self.writers[sid] = RolloutWriter(self.layout.rollout(sid))
                db.upsert_session(conn, meta)
                try:
                    return presence.register(conn, sid, str(meta.get("cwd", "")))
                except sqlite3.Error as exc:
                    log.warning("presence not recorded", error=str(exc))
                    return []
            case Close(sid, durable, meta):
                self.opened.discard(sid)
                self.reporters.pop(sid, None)
                self.failed.pop(sid, None)
                self.held.discard(sid)
                writer = self.writers.pop(sid, None)  # closing writes what it holds
                try:
                    if writer is not None:
                        writer.close(fsync=durable)
                finally:
                    lock.release(self.layout.sessions, sid)
                    try:
                        presence.unregister(conn, sid)
                    except sqlite3.Error:
                        pass
                db.update_session(conn, sid, **(meta or {}), status="closed")
                return True
            case Title(sid, text):
                db.set_title_if_empty(conn, sid, text)
                return None
            case Usage(sid, record):
                db.record_usage(conn, sid, record)
                return None
            case Marker():
                checkpoint_rows.marker(conn, message)
                return None
            case sm.ArchivePut(data, kind):
                from . import archive  # with the first archived output, not at start-up

                return archive.put(conn, self.layout.archive, data, kind)
            case sm.Checkpoint():
                checkpoint_rows.insert(conn, message)
                return None
            case sm.PostImages(sid, root, posts, origin):
                from . import post_images  # with the first checkpointed edit, not at start-up

                post_images.record(conn, sid, root, posts, origin)
                return None
            case sm.ArchiveGet(archive_id):
                from . import archive

                return archive.get(conn, self.layout.archive, archive_id)
            case sm.GetSession(sid):
                return db.get_session(conn, sid)
            case sm.SpentSince(since):
                return db.usage_since(conn, since)
            case sm.ListSessions(limit):
                return db.list_sessions(conn, limit)
        raise ValueError(f"store: unknown message {message!r}")



