"""The TUI in a worktree: /quit offers to remove a clean worktree (the branch stays), keeps a
dirty one and says so; the status line names the worktree as ``cox --worktree`` did."""

from __future__ import annotations

from pathlib import Path

import pytest
import urwid

from cox.surfaces.tui.app import TUI
from cox.surfaces.tui.worktree import probe
from cox.worktrees import open_worktree
from tests.tui.test_model import FakeHandle
from tests.worktrees.gitrepo import git, make_repo


def notices(ui: TUI) -> list[str]:
    return [b.text for b in ui.model.blocks if b.kind == "notice"]


def test_quit_on_a_clean_worktree_asks_and_yes_removes_it_keeping_the_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    wt = open_worktree(repo, "t42", "cox / pid 1")
    ui = TUI(FakeHandle(), status={"cwd": str(wt.path), "worktree": wt})
    ui.command("/quit")
    assert ui.modal_open()  # asked, not gone yet
    with pytest.raises(urwid.ExitMainLoop):
        ui.modal_key((80, 24), "y")
    assert not wt.path.exists()
    assert git(repo, "rev-parse", "--verify", "t42")  # the branch is never deleted
    assert f"removed worktree {wt.path}; branch t42 stays" in notices(ui)


def test_quit_on_a_clean_worktree_no_keeps_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    wt = open_worktree(repo, "t1", "cox / pid 1")
    ui = TUI(FakeHandle(), status={"cwd": str(wt.path), "worktree": wt})
    ui.command("/quit")
    with pytest.raises(urwid.ExitMainLoop):
        ui.modal_key((80, 24), "n")
    assert wt.path.is_dir() and f"worktree {wt.path} kept (branch t1)" in notices(ui)


def test_quit_on_a_dirty_worktree_keeps_it_and_says_so(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    wt = open_worktree(repo, "t2", "cox / pid 1")
    (wt.path / "work.txt").write_text("unsaved\n")
    ui = TUI(FakeHandle(), status={"cwd": str(wt.path), "worktree": wt})
    with pytest.raises(urwid.ExitMainLoop):
        ui.command("/quit")
    assert not ui.modal_open() and wt.path.is_dir()
    assert f"worktree {wt.path} has uncommitted changes: kept (branch t2)" in notices(ui)


def test_quit_outside_a_worktree_just_leaves(tmp_path: Path) -> None:
    ui = TUI(FakeHandle(), status={"cwd": str(tmp_path)})
    with pytest.raises(urwid.ExitMainLoop):
        ui.command("/quit")


def test_the_status_segment_names_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    wt = open_worktree(repo, "T42", "cox / pid 1")
    (wt.path / "README.md").write_text("bye\nmore\n")
    (wt.path / "x.txt").write_text("one\n")
    state = probe(str(wt.path))
    assert state is not None and state.segment() == "⎇ t42 +3 −1 · ⧉ t42"
