"""The store's failures reach the session (issue 12, item 1): a cox.db or archive write that
fails is told to the session once and raised by the next sync, with what failed and where; the
store itself keeps running. Presence records: live sessions are listed, dead pids are not."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cox.actors.session.messages import StorageFailed
from cox.actors.store import presence
from cox.actors.store.actor import StorageError, StoreActor
from cox.actors.store.messages import Append, ArchivePut, Close, Open, Sync, Title, Usage

from .conftest import Reporter


def test_a_failed_db_write_is_told_once_and_raised_by_the_next_sync(store: StoreActor, tmp_path: Path):
    rep = Reporter()
    assert store.on_receive(Open({"id": "S", "cwd": str(tmp_path)}, rep)) == []
    assert store.conn is not None
    store.conn.execute("PRAGMA query_only=ON")  # every write now fails as a read-only db does
    assert store.on_receive(Usage("S", {"model": "m"})) is None  # a tell: the store lives on
    assert store.on_receive(Title("S", "t")) is None
    assert len(rep.told) == 1
    told = rep.told[0]
    assert isinstance(told, StorageFailed) and told.episode == 1
    sentence = told.sentence
    assert f"could not write the session index {store.layout.db}" in sentence
    with pytest.raises(StorageError) as info:
        store.on_receive(Sync("S"))
    assert str(info.value) == sentence and info.value.episode == 1
    store.conn.execute("PRAGMA query_only=OFF")
    assert store.on_receive(Sync("S")) is True  # reported once, then clear
    store.on_receive(Append("S", '{"type": "notice", "message": "fine"}'))
    assert store.on_receive(Sync("S")) is True


def test_a_failed_archive_write_names_the_archive(store: StoreActor, tmp_path: Path):
    rep = Reporter()
    store.on_receive(Open({"id": "S", "cwd": str(tmp_path)}, rep))
    store.layout.archive.rmdir()
    store.layout.archive.write_text("a file where the folder was")
    with pytest.raises(StorageError) as info:
        store.on_receive(ArchivePut(b"x" * 100_000))
    assert f"could not write an archived output to {store.layout.archive}" in str(info.value)


def test_presence_lists_live_sessions_in_the_workspace_and_ignores_dead_pids(store: StoreActor, tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    conn = store.conn
    assert conn is not None
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          timeout=60)
    conn.execute("INSERT INTO presence VALUES ('GONE', ?, ?, '', 0)", (int(dead.stdout), str(ws)))
    conn.execute("INSERT INTO presence VALUES ('LIVE', ?, ?, '', 0)", (os.getppid(), str(ws)))
    conn.execute("INSERT INTO presence VALUES ('ELSEWHERE', ?, ?, '', 0)", (os.getppid(), str(tmp_path)))
    found = store.on_receive(Open({"id": "ME", "cwd": str(ws)}, None))
    assert [o["session_id"] for o in found] == ["LIVE"]
    assert conn.execute("SELECT COUNT(*) FROM presence WHERE session_id='GONE'").fetchone()[0] == 0
    assert "LIVE" in presence.notice(found)
    store.on_receive(Close("ME"))
    assert conn.execute("SELECT COUNT(*) FROM presence WHERE session_id='ME'").fetchone()[0] == 0


def test_sqlite_full_is_described(tmp_path: Path):
    from cox.actors.store.actor import describe

    text = describe("the session index", tmp_path / "cox.db", sqlite3.OperationalError("database or disk is full"))
    assert "database or disk is full" in text and "free some space" in text


def test_presence_names_the_first_few_and_counts_them_all(store: StoreActor, tmp_path: Path):
    ws = tmp_path / "many"
    ws.mkdir()
    for i in range(8):
        store.on_receive(Open({"id": f"S{i}", "cwd": str(ws)}, None))
    found = store.on_receive(Open({"id": "ME", "cwd": str(ws)}, None))
    assert [o["session_id"] for o in found] == [f"S{i}" for i in range(presence.SHOWN)]
    assert found.total == 8
    assert presence.notice(found).startswith("8 other cox session(s)") and "and 3 more" in presence.notice(found)
