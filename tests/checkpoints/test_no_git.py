"""Without git on PATH: a clear reason, CheckpointError for snapshots, the rest still works."""

from __future__ import annotations

from pathlib import Path

import pytest

from cox.actors.store.checkpoints import Checkpointer, CheckpointError
from cox.actors.store.layout import Layout


def test_no_git_on_path(layout: Layout, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    ok, reason = Checkpointer.available()
    assert not ok and "git is not on PATH" in reason
    cp = Checkpointer(layout, ws)
    with pytest.raises(CheckpointError, match="git is not on PATH"):
        cp.snapshot()
    with pytest.raises(CheckpointError, match="git is not on PATH"):
        cp.changes_since("s1", 1, "c", "0" * 40)
    # Named-file pre-images and rewinds need no git.
    (ws / "a").write_text("one")
    assert cp.pre_images("s1", 1, "c", [ws / "a"]) == ["a"]
    (ws / "a").write_text("two")
    assert cp.restore("s1", 1, 2) == ["a"]
    assert (ws / "a").read_text() == "one"
    cp.close()


def test_git_available_here():
    ok, version = Checkpointer.available()
    assert ok and version.startswith("git version")
