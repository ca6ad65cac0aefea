"""The rewind scenario of issue 4: three turns of edits, writes and an ``rm`` through bash;
rewind to turn 1 restores the files byte for byte; rewinding the rewind restores the later state."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cox.actors.store.checkpoints import Checkpointer, Restored
from cox.actors.store.layout import Layout

from .conftest import git, snapshot_files


def write_tool(cp: Checkpointer, turn: int, call: str, path: Path, data: bytes) -> None:
    """What the write tool does: pre-images first, then the write (creating parent folders)."""
    cp.pre_images("s1", turn, call, [path])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def edit_tool(cp: Checkpointer, turn: int, call: str, path: Path, old: bytes, new: bytes) -> None:
    cp.pre_images("s1", turn, call, [path])
    data = path.read_bytes()
    assert data.count(old) == 1
    path.write_bytes(data.replace(old, new))


def bash_tool(cp: Checkpointer, turn: int, call: str, root: Path, line: str) -> list[str]:
    tree = cp.snapshot()
    subprocess.run(["bash", "-c", line], cwd=root, timeout=30, check=True)
    return cp.changes_since("s1", turn, call, tree)


@pytest.mark.parametrize("in_repo", [True, False], ids=["git-repo", "plain-folder"])
def test_three_turns_rewind_and_rewind_the_rewind(layout: Layout, ws: Path, in_repo: bool):
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_bytes(b"def main():\r\n    return 1\r\n")
    (ws / "data.bin").write_bytes(bytes(range(256)) * 300)  # 76 KiB: archived as a file
    (ws / "notes.md").write_bytes(b"# notes\n\nkeep me\n")
    (ws / "run.sh").write_bytes(b"#!/bin/sh\necho run\n")
    (ws / "run.sh").chmod(0o755)
    (ws / ".gitignore").write_text("cache/\n")
    if in_repo:
        git(ws, "init", "-q")
        git(ws, "add", "-A")
        git(ws, "commit", "-qm", "base")
    cp = Checkpointer(layout, ws, git_timeout=30)
    start = snapshot_files(ws)

    # Turn 1: an edit and a new file in a new folder.
    cp.marker("s1", 1, "make main return 2 and add a helper")
    edit_tool(cp, 1, "t1c1", ws / "src" / "main.py", b"return 1", b"return 2")
    write_tool(cp, 1, "t1c2", ws / "src" / "util" / "helper.py", b"HELPER = True\n")
    after_1 = snapshot_files(ws)

    # Turn 2: edit the same file again, rewrite the binary, a second edit of it in the same turn.
    cp.marker("s1", 2, "more changes")
    edit_tool(cp, 2, "t2c1", ws / "src" / "main.py", b"return 2", b"return 3")
    write_tool(cp, 2, "t2c2", ws / "data.bin", os.urandom(40_000))
    write_tool(cp, 2, "t2c3", ws / "data.bin", b"tiny")
    after_2 = snapshot_files(ws)

    # Turn 3: bash removes files, appends, creates, makes a script non-executable, and
    # writes to an ignored folder (not checkpointed, never touched by a rewind).
    cp.marker("s1", 3, "clean up")
    changed = bash_tool(cp, 3, "t3c1", ws,
                        "rm notes.md src/util/helper.py && printf 'x\\0y' >> src/main.py && "
                        "echo made > made.txt && chmod -x run.sh && mkdir -p cache && echo c > cache/c")
    assert changed == ["made.txt", "notes.md", "run.sh", "src/main.py", "src/util/helper.py"]
    after_3 = snapshot_files(ws)
    cache = (ws / "cache" / "c").read_bytes()

    assert [(t["turn"], t["files"]) for t in cp.timeline("s1")] == [(3, 5), (2, 2), (1, 2)]

    # Rewind to turn 1: the workspace as it was when turn 1 began, byte for byte.
    restored = cp.restore("s1", 1, 4)
    assert isinstance(restored, Restored) and restored.not_restorable == {}
    # helper.py was created in turn 1 and removed in turn 3: already as it was, not rewritten.
    assert sorted(restored) == ["data.bin", "made.txt", "notes.md", "run.sh", "src/main.py"]
    now = snapshot_files(ws)
    now.pop("cache/c")
    assert now == start
    assert (ws / "cache" / "c").read_bytes() == cache
    tl = cp.timeline("s1")
    assert tl[0] == {"turn": 4, "files": 5, "title": "rewind to T1"}

    # Rewind the rewind: back to the state before it (the end of turn 3).
    again = cp.restore("s1", 4, 5)
    assert sorted(again) == sorted(restored)
    assert snapshot_files(ws) == after_3

    # And any turn in between: turn 3 began with turn 2's result, turn 2 with turn 1's.
    cp.restore("s1", 3, 6)
    now = snapshot_files(ws)
    assert {k: v for k, v in now.items() if k != "cache/c"} == {k: v for k, v in after_2.items()}
    cp.restore("s1", 2, 7)
    now = snapshot_files(ws)
    assert {k: v for k, v in now.items() if k != "cache/c"} == after_1
    cp.close()


def test_restore_reports_too_big_and_leaves_folders(layout: Layout, ws: Path):
    cp = Checkpointer(layout, ws, too_big=100, git_timeout=30)
    (ws / "big").write_bytes(b"b" * 500)
    cp.pre_images("s1", 1, "c", [ws / "big", ws / "newdir"])
    (ws / "big").write_bytes(b"small")
    (ws / "newdir").mkdir()  # a folder where a file was to be created
    restored = cp.restore("s1", 1, 2)
    assert list(restored) == []
    assert set(restored.not_restorable) == {"big", "newdir"}
    assert "MiB" in restored.not_restorable["big"]
    assert (ws / "big").read_bytes() == b"small"
    cp.close()


def test_restore_of_unchanged_files_writes_nothing(cp: Checkpointer, ws: Path):
    (ws / "a").write_text("same")
    cp.pre_images("s1", 1, "c", [ws / "a"])
    assert cp.restore("s1", 1, 2) == []
    assert [t["turn"] for t in cp.timeline("s1")] == [1]  # nothing rewound: no rewind turn


def test_restore_through_a_symlink_and_of_a_symlink(cp: Checkpointer, ws: Path):
    (ws / "target.txt").write_text("v1")
    os.symlink("target.txt", ws / "via")
    cp.pre_images("s1", 1, "c", [ws / "via"])  # the write tool writes through the link
    (ws / "via").write_text("v2")
    tree = cp.snapshot()
    (ws / "via").unlink()
    cp.changes_since("s1", 2, "c", tree)
    cp.restore("s1", 1, 3)
    assert os.path.islink(ws / "via") and os.readlink(ws / "via") == "target.txt"
    assert (ws / "target.txt").read_text() == "v1"


def test_rewind_only_touches_its_own_session_and_root(layout: Layout, ws: Path, tmp_path: Path):
    other_root = tmp_path / "other"
    other_root.mkdir()
    a = Checkpointer(layout, ws, git_timeout=30)
    b = Checkpointer(layout, other_root, git_timeout=30)
    for c, root in ((a, ws), (b, other_root)):
        (root / "f").write_text("old")
        c.pre_images("s1", 1, "c", [root / "f"])
        c.pre_images("s2", 1, "c", [root / "f"])
        (root / "f").write_text("new")
    # s2 named the file too, after s1: its change may be the one there now, so s1's rewind is a
    # conflict (issue 12) until forced.
    kept = a.restore("s1", 1, 2)
    assert list(kept) == [] and "session s2" in kept.conflicts["f"]
    assert (ws / "f").read_text() == "new"
    a.restore("s1", 1, 2, force=True)
    assert (ws / "f").read_text() == "old"
    assert (other_root / "f").read_text() == "new"
    a.close()
    b.close()


def test_a_file_replaced_by_a_symlink_comes_back_as_a_file(cp: Checkpointer, ws: Path):
    (ws / "conf").write_bytes(b"real\n")
    (ws / "elsewhere").write_bytes(b"other\n")
    tree = cp.snapshot()
    subprocess.run(["bash", "-c", "ln -sf elsewhere conf"], cwd=ws, timeout=30, check=True)
    assert cp.changes_since("s1", 1, "c", tree) == ["conf"]
    assert cp.restore("s1", 1, 2) == ["conf"]
    assert not os.path.islink(ws / "conf") and (ws / "conf").read_bytes() == b"real\n"
    assert (ws / "elsewhere").read_bytes() == b"other\n"
    # The rewind recorded the link itself, not its target: undoing it brings the link back.
    assert cp.restore("s1", 2, 3) == ["conf"]
    assert os.readlink(ws / "conf") == "elsewhere"
    assert (ws / "elsewhere").read_bytes() == b"other\n"
