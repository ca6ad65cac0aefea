"""A session's roots after the first are read-only: the file tools refuse them (the sandbox's side
is in test_cli.py), while a worktree nested inside the main checkout's folder stays writable."""

from __future__ import annotations

from pathlib import Path

import pytest

from cox.actors.tools.base import ToolInputError
from cox.actors.tools.protected import check_writable
from cox.policy.paths import write_roots


def test_only_the_first_root_is_written(tmp_path: Path) -> None:
    wt, repo = tmp_path / "wt", tmp_path / "repo"
    wt.mkdir()
    repo.mkdir()
    assert write_roots([wt, repo]) == [wt]
    check_writable(wt / "a.txt", [wt, repo])
    with pytest.raises(ToolInputError, match="read-only root of this session"):
        check_writable(repo / "a.txt", [wt, repo])
    with pytest.raises(ToolInputError, match="read-only root"):
        check_writable(repo, [wt, repo])
    check_writable(repo / "a.txt", [repo])  # one root: as before


def test_a_first_root_inside_a_read_only_one_is_still_writable(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    wt = repo / "_worktrees" / "repo-t1"  # WT_ROOT inside the checkout
    wt.mkdir(parents=True)
    check_writable(wt / "a.txt", [wt, repo])
    with pytest.raises(ToolInputError, match="read-only root"):
        check_writable(repo / "b.txt", [wt, repo])
    with pytest.raises(ToolInputError, match="git metadata"):
        check_writable(wt / ".git" / "config", [wt, repo])
