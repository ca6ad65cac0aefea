"""Pre-images of the files a write names: bytes archived, created marked, too-big kept bytes-less."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from cox.actors.store import archive, db
from cox.actors.store.checkpoints import TOO_BIG, Checkpointer, CheckpointError, first_words
from cox.actors.store.layout import Layout


def rows(cp: Checkpointer, session: str = "s1") -> list[dict]:
    cur = cp._db().execute(
        "SELECT turn, call_id, path, kind, archive_id, size, too_big, mode FROM checkpoints "
        "WHERE session_id=? AND kind!='marker' ORDER BY id", (session,))
    keys = [d[0] for d in cur.description]
    return [dict(zip(keys, r, strict=True)) for r in cur.fetchall()]


def test_existing_file_is_archived_byte_for_byte(cp: Checkpointer, ws: Path, layout: Layout):
    small = bytes(range(256)) * 4
    big = os.urandom(100 * 1024)  # over 16 KiB: lands under archive/<id>
    (ws / "small.bin").write_bytes(small)
    (ws / "big.bin").write_bytes(big)
    got = cp.pre_images("s1", 1, "c1", [ws / "small.bin", Path("big.bin")])
    assert got == ["small.bin", "big.bin"]
    r = rows(cp)
    assert [x["kind"] for x in r] == ["pre", "pre"]
    assert archive.get(cp._db(), layout.archive, r[0]["archive_id"]) == small
    assert archive.get(cp._db(), layout.archive, r[1]["archive_id"]) == big
    assert (layout.archive / r[1]["archive_id"]).is_file()
    assert r[1]["size"] == len(big) and r[1]["too_big"] == 0


def test_missing_file_is_marked_created(cp: Checkpointer, ws: Path):
    assert cp.pre_images("s1", 1, "c1", [ws / "new" / "deep.txt"]) == ["new/deep.txt"]
    assert [(x["path"], x["kind"], x["archive_id"]) for x in rows(cp)] == [("new/deep.txt", "created", None)]


def test_file_over_8_mib_is_recorded_without_bytes(cp: Checkpointer, ws: Path):
    with open(ws / "huge.dat", "wb") as f:
        f.truncate(TOO_BIG + 1)
    assert cp.pre_images("s1", 2, "c9", [ws / "huge.dat"]) == ["huge.dat"]
    (r,) = rows(cp)
    assert r["kind"] == "pre" and r["too_big"] == 1 and r["archive_id"] is None and r["size"] == TOO_BIG + 1


def test_a_file_is_archived_once_per_turn(cp: Checkpointer, ws: Path):
    f = ws / "a.txt"
    f.write_text("one")
    assert cp.pre_images("s1", 1, "c1", [f, f]) == ["a.txt"]
    f.write_text("two")
    assert cp.pre_images("s1", 1, "c2", [f]) == ["a.txt"]  # covered: turn 1's earliest is kept
    assert cp.pre_images("s1", 2, "c3", [f]) == ["a.txt"]
    assert [(x["turn"], x["call_id"]) for x in rows(cp)] == [(1, "c1"), (2, "c3")]


def test_folders_are_skipped_and_paths_outside_root_are_absolute(cp: Checkpointer, ws: Path, tmp_path: Path):
    (ws / "d").mkdir()
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x")
    got = cp.pre_images("s1", 1, "c1", [ws / "d", outside])
    assert got == [str(outside.resolve())]


def test_mode_is_recorded(cp: Checkpointer, ws: Path):
    f = ws / "run.sh"
    f.write_text("#!/bin/sh\n")
    f.chmod(0o750)
    cp.pre_images("s1", 1, "c1", [f])
    assert rows(cp)[0]["mode"] & 0o777 == 0o750


def test_writes_alongside_the_store_connection(cp: Checkpointer, ws: Path, layout: Layout):
    """Another writer (a second process's store) keeps writing cox.db while a ToolCall thread
    records pre-images through this process's store."""
    other = db.connect(layout.db)
    stop = threading.Event()

    def store_writer() -> None:
        i = 0
        while not stop.is_set():
            db.record_usage(other, "s1", {"model": "m", "input_tokens": i})
            archive.put(other, layout.archive, b"x" * 100)
            i += 1

    t = threading.Thread(target=store_writer)
    t.start()
    try:
        for i in range(40):
            f = ws / f"f{i}.txt"
            f.write_text(str(i))
            assert cp.pre_images("s1", i, f"c{i}", [f]) == [f"f{i}.txt"]
    finally:
        stop.set()
        t.join(10)
        other.close()
    assert len(rows(cp)) == 40


def test_marker_and_timeline(cp: Checkpointer, ws: Path):
    cp.marker("s1", 1, "  add the cache\ncolumn please")
    cp.pre_images("s1", 1, "c1", [ws / "a", ws / "b"])
    cp.marker("s1", 2, "x" * 200)
    cp.marker("s1", 3, "rename things")
    cp.pre_images("s1", 3, "c1", [ws / "a"])
    cp.marker("s2", 1, "another session")
    tl = cp.timeline("s1")
    assert [t["turn"] for t in tl] == [3, 2, 1]
    assert tl[2] == {"turn": 1, "files": 2, "title": "add the cache"}
    assert tl[1]["files"] == 0 and len(tl[1]["title"]) == 80 and tl[1]["title"].endswith("…")
    assert tl[0] == {"turn": 3, "files": 1, "title": "rename things"}
    cp.marker("s1", 3, "renamed")  # one marker per turn: a second call replaces the title
    assert cp.timeline("s1")[0]["title"] == "renamed"
    assert first_words("\n\n  hello   world ") == "hello world"


def test_a_path_that_is_not_a_file_is_reported_after_the_others(cp: Checkpointer, ws: Path):
    os.mkfifo(ws / "pipe")
    (ws / "ok").write_text("ok")
    with pytest.raises(CheckpointError, match="pipe: not a regular file"):
        cp.pre_images("s1", 1, "c", [ws / "pipe", ws / "ok"])
    assert [x["path"] for x in rows(cp)] == ["ok"]
