"""A rewind restores only what this session changed (issue 12, item 2).

Reproduced: the snapshot around a bash call filed every change in the workspace during the call
as the call's own, so rewinding session A deleted session B's new file. Now a file another
session named while A's call ran is not A's; a file that changed since A left it, or that
another session also changed, is a conflict the rewind lists and leaves alone unless forced.
"""

from __future__ import annotations

from pathlib import Path

from cox.actors.store.checkpoints import Checkpointer
from cox.actors.store.layout import Layout


def two(layout: Layout, ws: Path) -> tuple[Checkpointer, Checkpointer]:
    """Two sessions' checkpointers on one workspace (own connections, as two processes have)."""
    return Checkpointer(layout, ws, git_timeout=30), Checkpointer(layout, ws, git_timeout=30)


def named_write(cp: Checkpointer, sid: str, turn: int, path: Path, text: str) -> None:
    """What the write tool does: pre-image, write, post-image."""
    files = cp.pre_images(sid, turn, f"{sid}-w", [path])
    path.write_text(text)
    cp.settle(sid, files)


def test_another_sessions_write_during_a_bash_call_is_not_the_calls(layout: Layout, ws: Path):
    a, b = two(layout, ws)
    try:
        a.marker("A", 1, "make a")
        tree = a.snapshot()                              # A's bash call begins
        (ws / "a.txt").write_text("from A's bash\n")
        named_write(b, "B", 1, ws / "b.txt", "B's file\n")  # B writes while it runs
        assert a.changes_since("A", 1, "bash1", tree) == ["a.txt"]
        restored = a.restore("A", 1, 2)
        assert list(restored) == ["a.txt"] and restored.conflicts == {}
        assert not (ws / "a.txt").exists()
        assert (ws / "b.txt").read_text() == "B's file\n"
    finally:
        a.close()
        b.close()


def test_overlapping_bash_calls_of_two_sessions_never_undo_each_other(layout: Layout, ws: Path):
    a, b = two(layout, ws)
    try:
        ta = a.snapshot()
        tb = b.snapshot()
        (ws / "b.txt").write_text("B's bash wrote this\n")  # whose? neither snapshot can tell
        assert a.changes_since("A", 1, "bash1", ta) == ["b.txt"]
        assert b.changes_since("B", 1, "bash1", tb) == ["b.txt"]
        for cp, sid, other in ((a, "A", "B"), (b, "B", "A")):
            kept = cp.restore(sid, 1, 2)
            assert list(kept) == [] and f"session {other}" in kept.conflicts["b.txt"]
            assert (ws / "b.txt").read_text() == "B's bash wrote this\n"
    finally:
        a.close()
        b.close()


def test_a_file_edited_after_the_session_left_it_is_a_conflict_until_forced(cp: Checkpointer, ws: Path):
    (ws / "f.txt").write_text("v0\n")
    named_write(cp, "A", 1, ws / "f.txt", "A's v1\n")
    named_write(cp, "A", 1, ws / "new.txt", "A made this\n")
    (ws / "f.txt").write_text("the person's edit\n")  # the editor, after A's call
    kept = cp.restore("A", 1, 2)
    assert list(kept) == ["new.txt"]  # A's own, untouched since: undone
    assert "changed since this session left it" in kept.conflicts["f.txt"]
    assert (ws / "f.txt").read_text() == "the person's edit\n"
    forced = cp.restore("A", 1, 3, force=True)
    assert list(forced) == ["f.txt"] and (ws / "f.txt").read_text() == "v0\n"


def test_a_bash_change_edited_afterwards_is_a_conflict(cp: Checkpointer, ws: Path):
    (ws / "g.txt").write_text("v0\n")
    tree = cp.snapshot()
    (ws / "g.txt").write_text("bash v1\n")
    (ws / "made.txt").write_text("by bash\n")
    assert cp.changes_since("A", 1, "bash1", tree) == ["g.txt", "made.txt"]
    (ws / "made.txt").write_text("the person kept working on it\n")
    kept = cp.restore("A", 1, 2)
    assert list(kept) == ["g.txt"] and (ws / "g.txt").read_text() == "v0\n"
    assert set(kept.conflicts) == {"made.txt"}
    assert (ws / "made.txt").read_text() == "the person kept working on it\n"


def test_a_rewind_can_itself_be_rewound_without_a_conflict(cp: Checkpointer, ws: Path):
    (ws / "h.txt").write_text("v0\n")
    named_write(cp, "A", 1, ws / "h.txt", "v1\n")
    assert list(cp.restore("A", 1, 2)) == ["h.txt"] and (ws / "h.txt").read_text() == "v0\n"
    undo = cp.restore("A", 2, 3)
    assert list(undo) == ["h.txt"] and undo.conflicts == {} and (ws / "h.txt").read_text() == "v1\n"
