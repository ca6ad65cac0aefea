"""Surfaces read cox.db and never write it (issue 13, item 5): no DDL, no PRAGMA, no row.

``cox sessions``, ``cox stats``, ``cox expand``, ``--continue``'s lookup and the TUI's /rewind
picker used to open cox.db with the writer's ``connect`` (``PRAGMA journal_mode=WAL`` and
``CREATE TABLE IF NOT EXISTS`` from a surface; the picker also ran the checkpoint tables' ALTERs).
Now they open it read-only: a cox.db a store filled is read back as before, and nothing is
written — by the authorizer that sees every statement, and by the file's bytes.
"""

from __future__ import annotations

import argparse
import queue
from pathlib import Path
from typing import Any

import pytest

from cox.actors.store import archive, db
from cox.actors.store.actor import StoreActor
from cox.actors.store.layout import Layout
from cox.actors.store.messages import ArchivePut, Marker, Open, Title, Usage

from .conftest import Writes


class Handle:
    session_id = "S1"

    def __init__(self) -> None:
        self.events: queue.Queue[tuple[Any, str]] = queue.Queue()

    def alive(self) -> bool:
        return True

    def submit(self, sub: Any) -> bool:
        return True

    def interrupt(self) -> bool:
        return True


@pytest.fixture
def filled(cox_home: Path, tmp_path: Path) -> tuple[Layout, str]:
    """A cox.db written by a real store actor: a session (titled), a usage row, an archived output, a marker."""
    layout = Layout(cox_home)
    store = StoreActor.start(layout)
    try:
        store.ask(Open({"id": "S1", "cwd": str(tmp_path), "model": "m"}), timeout=30)
        store.tell(Usage("S1", {"model": "m", "input_tokens": 3, "cost_usd": 0.5}))
        archive_id = store.ask(ArchivePut(b"archived bytes\n"), timeout=30)
        store.ask(Marker("S1", 1, str(tmp_path), "the first turn"), timeout=30)
        store.tell(Title("S1", "the first turn"))
    finally:
        store.stop(timeout=30)
    return layout, str(archive_id)


def test_every_surface_reads_cox_db_without_writing(filled: tuple[Layout, str], tmp_path: Path, writes: Writes,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from cox.surfaces import commands, stats
    from cox.surfaces.tui.app import TUI

    layout, archive_id = filled
    before = layout.db.read_bytes()
    assert writes.seen == []

    assert commands.cmd_sessions(argparse.Namespace(limit=10, grep=None, json=True)) == 0
    assert '"id": "S1"' in capsys.readouterr().out
    assert stats.run(argparse.Namespace(cache=False, month=False, json=True)) == 0
    assert '"total_usd": 0.5' in capsys.readouterr().out
    assert commands.cmd_expand(argparse.Namespace(id=archive_id, lines=None)) == 0
    assert "archived bytes" in capsys.readouterr().out
    assert commands._latest_session(layout, tmp_path) == "S1"
    from cox.surfaces.resume_pick import stored_sessions

    assert [c.id for c in stored_sessions(layout, tmp_path)] == ["S1"]  # the `cox -r` picker's list
    ui = TUI(Handle(), status={"db": str(layout.db)})  # type: ignore[arg-type]
    assert ui.rewind_turns() == [{"turn": 1, "files": 0, "title": "the first turn"}]

    assert writes.seen == []
    assert layout.db.read_bytes() == before


def test_a_reader_cannot_write_through_its_connection(filled: tuple[Layout, str]) -> None:
    import sqlite3

    layout, archive_id = filled
    conn = db.connect_ro(layout.db)
    try:
        assert archive.get(conn, layout.archive, archive_id) == b"archived bytes\n"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("CREATE TABLE IF NOT EXISTS mine (a)")
    finally:
        conn.close()


def test_a_home_the_store_never_filled_reads_as_empty(cox_home: Path, tmp_path: Path, writes: Writes,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A cox.db without the tables (another tool's, an older cox's): the readers say there is
    nothing yet instead of making the tables."""
    import sqlite3

    from cox.surfaces import commands, stats
    from cox.surfaces.tui.app import TUI

    layout = Layout(cox_home).ensure()
    sqlite3.connect(str(layout.db)).close()  # an empty database file
    writes.seen.clear()
    assert commands.cmd_sessions(argparse.Namespace(limit=10, grep=None, json=False)) == 0
    assert "no sessions yet" in capsys.readouterr().out
    assert stats.run(argparse.Namespace(cache=False, month=False, json=False)) == 0
    assert "no usage recorded yet" in capsys.readouterr().out
    assert commands._latest_session(layout, tmp_path) is None
    from cox.surfaces.resume_pick import stored_sessions

    assert stored_sessions(layout, tmp_path) == []
    assert TUI(Handle(), status={"db": str(layout.db)}).rewind_turns() == []  # type: ignore[arg-type]
    assert writes.seen == []
