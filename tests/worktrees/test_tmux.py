"""``cox --worktree`` on the real TUI (tmux): the status line names the branch and the worktree,
and /quit on the clean worktree asks, then removes it (the branch stays)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.tui.conftest import tui  # noqa: F401  (the fixture)
from tests.worktrees.gitrepo import git, make_repo


def test_the_tui_in_a_worktree_shows_it_and_quit_removes_a_clean_one(tmp_path: Path, tui: Any) -> None:  # noqa: F811
    repo = make_repo(tmp_path, "ws")
    t = tui([{"text": "Hello from the worktree."}], cli=True, extra="--worktree T42", env={"HOME": str(tmp_path)})
    t.wait(lambda s: "⎇ t42 · ⧉ t42" in s)
    t.send("hi")
    t.wait("Hello from the worktree.")
    t.send("/quit")
    t.wait("remove it?")
    t.keys("y")
    t.wait("EXITED 0")
    wt = tmp_path / "_worktrees" / "ws-t42"
    assert not wt.exists()
    assert git(repo, "rev-parse", "--verify", "t42")  # the branch stays
