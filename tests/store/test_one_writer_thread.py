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
import time
from pathlib import Path
from typing import Any

from cox.actors.provider.scripted import ScriptedProvider
from cox.actors.session.actor import SessionSettings
from cox.actors.tools.registry import builtin_tools
from cox.policy.permission import Engine
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode, new_ulid
from cox.surfaces.runtime import App
from tests.waits import BOUND_S

from .conftest import Writes


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
