"""The rollout is append-only, survives a torn last line, and the store indexes sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cox.actors.store import db
from cox.actors.store.archive import get, put
from cox.actors.store.rollout import RolloutWriter, read_rollout


def test_append_and_read(tmp_path: Path):
    w = RolloutWriter(tmp_path / "s.jsonl")
    for i in range(3):
        w.append(json.dumps({"type": "text_delta", "text": str(i)}))
    w.close()
    read = read_rollout(tmp_path / "s.jsonl")
    assert [e["text"] for e in read.events] == ["0", "1", "2"]
    assert read.notices == []


def test_torn_last_line_is_skipped_with_a_notice(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"type": "turn_started", "turn": 1}\n{"type": "text_de')
    read = read_rollout(path)
    assert [e["type"] for e in read.events] == ["turn_started"]
    assert "cut short" in read.notices[0]
    # Opening it again (a resume) cuts the torn line off: the new event is not glued to it, and
    # the file holds whole lines only.
    w = RolloutWriter(path)
    w.append('{"type": "turn_done", "turn": 1, "stop": "end_turn"}')
    w.close()
    read = read_rollout(path)
    assert [e["type"] for e in read.events] == ["turn_started", "turn_done"]
    assert read.notices == []
    assert path.read_text() == '{"type": "turn_started", "turn": 1}\n{"type": "turn_done", "turn": 1, "stop": "end_turn"}\n'


def test_a_rollout_that_is_one_torn_line_is_cut_to_nothing(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type": "text_de' + b"x" * 200_000)  # longer than one read of the tail
    w = RolloutWriter(path)
    w.append('{"type": "turn_started", "turn": 1}')
    w.close()
    assert path.read_text() == '{"type": "turn_started", "turn": 1}\n'


def test_killed_writer_loses_at_most_the_line_being_written(tmp_path: Path):
    path = tmp_path / "k.jsonl"
    code = f"""
import json, os, sys
from cox.actors.store.rollout import RolloutWriter
w = RolloutWriter(__import__('pathlib').Path({str(path)!r}))
for i in range(200):
    w.append(json.dumps({{"type": "text_delta", "text": str(i)}}))
w._file.write(b'{{"type": "text_delta", "te')
w._file.flush()
os._exit(9)
"""
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ}, timeout=60)
    assert proc.returncode == 9
    read = read_rollout(path)
    assert len(read.events) == 200
    assert len(read.notices) == 1


def test_sessions_index_and_archive(tmp_path: Path):
    conn = db.connect(tmp_path / "cox.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.upsert_session(conn, {"id": "S1", "cwd": "/w", "model": "m"})
    db.set_title_if_empty(conn, "S1", "first prompt")
    db.set_title_if_empty(conn, "S1", "second prompt")
    db.update_session(conn, "S1", turns=2)
    row = db.get_session(conn, "S1")
    assert row is not None and row["title"] == "first prompt" and row["turns"] == 2
    small = put(conn, tmp_path / "archive", b"small")
    big_data = b"x" * 100_000
    big = put(conn, tmp_path / "archive", big_data)
    assert get(conn, tmp_path / "archive", small) == b"small"
    assert get(conn, tmp_path / "archive", big) == big_data
    assert (tmp_path / "archive" / big).is_file() and not (tmp_path / "archive" / small).exists()
