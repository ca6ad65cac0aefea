"""The store actor is cox.db's one writer (issue 13, item 5), shown on a real session.

Every sqlite connection the process opens is wrapped with an authorizer that records, for each
statement that would change cox.db (an INSERT, UPDATE, DELETE, CREATE, ALTER or a PRAGMA that
sets something), the name of the thread preparing it; every rollout line records its thread too.
A session then writes a file (named pre-image), changes files from bash (snapshot rows), prints
an output big enough to be archived as a file, rewinds (the rewind's own rows and marker) and
rewinds the rewind. Every write must come from the store actor's thread. Before, the
checkpointer wrote its rows from the ToolCall threads and the turn markers from a thread of
their own, each through its own connection.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cox.actors.provider.scripted import ScriptedProvider
from cox.actors.session.actor import SessionSettings
from cox.actors.store import rollout
from cox.actors.tools.registry import builtin_tools
from cox.policy.permission import Engine
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode, new_ulid
from cox.surfaces.runtime import App
from tests.waits import BOUND_S

WRITES = {sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE, sqlite3.SQLITE_CREATE_TABLE,
          sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_ALTER_TABLE, sqlite3.SQLITE_DROP_TABLE,
          sqlite3.SQLITE_DROP_INDEX, sqlite3.SQLITE_CREATE_TRIGGER, sqlite3.SQLITE_CREATE_VIEW}


class Writes:
    """(thread name, what, table) of every cox.db write statement, from any connection."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str, str]] = []
        self.rollout_threads: set[str] = set()

    def authorizer(self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
        if db == "temp":
            return sqlite3.SQLITE_OK
        wrote = action in WRITES or (action == sqlite3.SQLITE_PRAGMA and arg2 is not None)
        if wrote:
            with self.lock:
                self.seen.append((threading.current_thread().name, str(action), str(arg1)))
        return sqlite3.SQLITE_OK

    def foreign(self) -> list[tuple[str, str, str]]:
        with self.lock:
            return [w for w in self.seen if not w[0].startswith("StoreActor-")]


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Writes:
    found = Writes()
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_connect(*args, **kwargs)
        conn.set_authorizer(found.authorizer)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    real_append = rollout.RolloutWriter.append

    def append(self: rollout.RolloutWriter, line: str) -> None:
        found.rollout_threads.add(threading.current_thread().name)
        real_append(self, line)

    monkeypatch.setattr(rollout.RolloutWriter, "append", append)
    return found


def _events_until(handle: Any, kind: str) -> list[Any]:
    out = []
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        try:
            event, _ = handle.events.get(timeout=0.2)
        except queue.Empty:
            continue
        out.append(event)
        if event.type == kind:
            return out
    raise AssertionError(f"no {kind}; got {[e.type for e in out]}")


def test_only_the_store_actor_thread_writes_cox_db(tmp_path: Path, cox_home: Path, writes: Writes) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("original\n")
    (ws / "big.txt").write_bytes(b"b" * 40_000)  # a pre-image archived as a file, not inline
    replies = [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "keep.txt", "content": "turn one\n"}},
                        {"id": "w2", "name": "write", "input": {"path": "big.txt", "content": "small now\n"}}]},
        {"text": "t1"},
        {"tool_calls": [{"id": "b1", "name": "bash",
                         "input": {"command": "echo appended >> keep.txt; seq 1 30000"}}]},
        {"text": "t2"},
    ]
    engine = Engine.compile(["Bash(echo:*)", "Bash(seq:*)"], [], [], home=tmp_path, roots=[ws])
    settings = SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="scripted", home=tmp_path,
                               permission_mode=PermissionMode.BYPASS)
    app = App(cox_home)
    try:
        handle = app.open_session(settings, ScriptedProvider({"replies": replies}), builtin_tools(), engine)
        for text in ("one", "two"):
            handle.submit(m.UserTurn(text=text))
            events = _events_until(handle, "turn_done")
            assert events[-1].stop.value == "end_turn", [(e.type, getattr(e, "result", None)) for e in events]
        done = [e for e in events if e.type == "tool_call_done"]
        assert done and done[0].result.archive_id and (done[0].result.total_bytes or 0) > 100_000  # archived whole
        handle.submit(m.Rewind(to_turn=1, what="code"))
        _events_until(handle, "rewound")
        assert (ws / "keep.txt").read_text() == "original\n"
        assert (ws / "big.txt").read_bytes() == b"b" * 40_000
        handle.submit(m.Rewind(to_turn=3, what="code"))  # undo the rewind (its rows are turn 3)
        _events_until(handle, "rewound")
        assert (ws / "big.txt").read_text() == "small now\n"
    finally:
        app.close()

    # The writes happened, and all of them on the store actor's thread.
    tables = {table for _, _, table in writes.seen}
    assert {"checkpoints", "post_images", "archive", "sessions"} <= tables, tables
    assert writes.foreign() == []
    assert writes.rollout_threads and all(t.startswith("StoreActor-") for t in writes.rollout_threads)
    conn = sqlite3.connect(f"file:{cox_home / 'cox.db'}?mode=ro", uri=True)
    try:
        kinds = dict(conn.execute("SELECT kind, COUNT(*) FROM checkpoints GROUP BY kind").fetchall())
        filed = conn.execute("SELECT COUNT(*) FROM archive WHERE inline IS NULL").fetchone()[0]
    finally:
        conn.close()
    assert kinds.get("marker", 0) >= 3 and kinds.get("pre", 0) >= 2, kinds  # two turns and the rewind's
    assert filed >= 2  # the big output and the big pre-image
