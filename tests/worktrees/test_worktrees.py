"""cox.worktrees against real repositories: placement, branch, lock, foreign locks, reuse,
the fetch from a local bare origin (and its bounded failure), removal that keeps the branch."""

from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path

import pytest

from cox.worktrees import Worktree, WorktreeError, branch_name, is_clean, open_worktree, place, remove
from tests.worktrees.gitrepo import git, make_repo

OWNER = "cox / pid 123"


def lock_reason(repo: Path, path: Path) -> str | None:
    out = git(repo, "worktree", "list", "--porcelain")
    current = None
    for line in out.splitlines():
        if line.startswith("worktree "):
            current = Path(line[len("worktree "):]).resolve()
        elif current == path.resolve() and line.startswith("locked"):
            return line[len("locked "):] if line != "locked" else ""
    return None


def test_place_nearest_ancestor_holding_worktrees(tmp_path: Path) -> None:
    (tmp_path / "_worktrees").mkdir()
    repo = tmp_path / "a" / "b" / "repo"
    repo.mkdir(parents=True)
    assert place(repo, "T42", {}) == tmp_path / "_worktrees" / "repo-t42"
    (tmp_path / "a" / "_worktrees").mkdir()  # a nearer one wins
    assert place(repo, "t42", {"WT_ROOT": str(tmp_path / "elsewhere")}) == tmp_path / "a" / "_worktrees" / "repo-t42"


def test_place_next_to_the_repository_or_wt_root(tmp_path: Path) -> None:
    repo = tmp_path / "x" / "repo"
    repo.mkdir(parents=True)
    assert place(repo, "t1", {}) == tmp_path / "x" / "_worktrees" / "repo-t1"
    assert place(repo, "t1", {"WT_ROOT": str(tmp_path / "wts")}) == tmp_path / "wts" / "repo-t1"


@pytest.mark.parametrize("bad", ["", "-x", "a/b", "../up", "a..b", "x.lock", "sp ace", "é", "a" * 64])
def test_branch_names_are_checked(bad: str) -> None:
    with pytest.raises(WorktreeError, match="cannot be used"):
        branch_name(bad)
    assert branch_name("Fix-Login_2") == "fix-login_2"


def test_without_a_remote_the_branch_starts_from_head_and_is_locked(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "README.md").write_text("changed, uncommitted\n")  # the main checkout's own state
    wt = open_worktree(repo, "T42", OWNER)
    assert wt == Worktree(tmp_path / "_worktrees" / "repo-t42", "t42", repo.resolve(), True)
    assert wt.name == "t42"
    assert git(wt.path, "symbolic-ref", "--short", "HEAD") == "t42"
    assert git(wt.path, "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")
    assert (wt.path / "README.md").read_text() == "hello\n"
    reason = lock_reason(repo, wt.path)
    assert reason is not None and reason.startswith("cox / pid 123 | t42 | 20")
    assert reason == f"cox / pid 123 | t42 | {time.strftime('%Y-%m-%d', time.gmtime())}"


def test_with_origin_the_branch_is_cut_from_fresh_origin_default_without_upstream(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, origin=True)
    assert not (repo / "NEW.md").exists()  # the clone has not seen upstream's last commit
    wt = open_worktree(repo, "t7", OWNER)
    assert wt.notices == ()
    assert (wt.path / "NEW.md").read_text() == "upstream\n"  # fetched before the branch was cut
    assert git(wt.path, "rev-parse", "HEAD") == git(tmp_path / "origin.git", "rev-parse", "main")
    config = git(repo, "config", "--list")
    assert "branch.t7.remote" not in config and "branch.t7.merge" not in config
    assert not (repo / "NEW.md").exists()  # the main checkout is not touched


def test_a_failed_fetch_falls_back_with_a_notice(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, origin=True)
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    wt = open_worktree(repo, "t8", OWNER)
    assert len(wt.notices) == 1 and "could not fetch origin" in wt.notices[0]
    assert "last fetched origin/main" in wt.notices[0]
    assert git(wt.path, "rev-parse", "HEAD") == git(repo, "rev-parse", "origin/main")


def test_a_fetch_that_hangs_is_bounded(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, origin=True)
    with socket.socket() as server:  # accepts the connection (backlog) and never answers
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        git(repo, "remote", "set-url", "origin", f"git://127.0.0.1:{server.getsockname()[1]}/x")
        t0 = time.monotonic()
        wt = open_worktree(repo, "t9", OWNER, fetch_timeout=1.0)
        assert time.monotonic() - t0 < 30
    assert "took more than 1 s" in wt.notices[0]
    assert wt.created and (wt.path / "README.md").is_file()


def test_the_repository_runs_nothing_it_configures(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, origin=True)
    marker = tmp_path / "ran"
    (repo / ".gitattributes").write_text("* filter=x\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-q", "-m", "attrs")
    before = git(repo, "rev-parse", "main")
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}.hook\n")
    hook.chmod(0o755)
    for key, value in [("remote.origin.uploadpack", f"touch {marker}.up; git-upload-pack"),
                       ("core.fsmonitor", f"touch {marker}.fs; false"),
                       ("remote.origin.fetch", "+refs/heads/*:refs/heads/*"),
                       ("filter.x.smudge", f"touch {marker}.smudge; cat"), ("filter.x.required", "true")]:
        git(repo, "config", key, value)
    wt = open_worktree(repo, "t10", OWNER)
    assert wt.notices == ()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ran")) == []
    assert git(repo, "rev-parse", "main") == before  # the hostile refspec wrote no local branch


def test_another_owners_lock_is_never_reused_or_removed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    path = place(repo, "t42")
    path.parent.mkdir()
    git(repo, "worktree", "add", "-q", "--lock", "--reason", "Cursor / grok | t42 | 2026-09-01", "-b", "t42",
        str(path))
    with pytest.raises(WorktreeError, match=r"locked by another owner \(Cursor / grok"):
        open_worktree(repo, "t42", OWNER)
    with pytest.raises(WorktreeError, match="another owner"):
        remove(Worktree(path, "t42", repo, False))
    assert lock_reason(repo, path) == "Cursor / grok | t42 | 2026-09-01"
    assert path.is_dir()


def test_a_lock_without_reason_is_someone_elses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    path = place(repo, "t3")
    path.parent.mkdir()
    git(repo, "worktree", "add", "-q", "-b", "t3", str(path))
    git(repo, "worktree", "lock", str(path))
    with pytest.raises(WorktreeError, match="no reason given"):
        open_worktree(repo, "t3", OWNER)


def test_a_worktree_of_ours_is_reused_and_its_lock_renewed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    first = open_worktree(repo, "t42", "cox / pid 1")
    (first.path / "work.txt").write_text("in progress\n")
    again = open_worktree(repo, "t42", "cox / pid 2")
    assert again.path == first.path and not again.created and again.branch == "t42"
    assert (again.path / "work.txt").read_text() == "in progress\n"
    assert (lock_reason(repo, again.path) or "").startswith("cox / pid 2 | t42 |")
    inside = open_worktree(again.path, "t42", "cox / pid 3")  # from inside the worktree: the same one
    assert inside.path == first.path and inside.repo == repo.resolve()


def test_an_existing_branch_is_checked_out_not_recut(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    git(repo, "branch", "t5")
    (repo / "README.md").write_text("two\n")
    git(repo, "commit", "-q", "-am", "second")
    wt = open_worktree(repo, "t5", OWNER)
    assert git(wt.path, "rev-parse", "HEAD") == git(repo, "rev-parse", "t5") != git(repo, "rev-parse", "main")


def test_a_folder_in_the_way_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    path = place(repo, "t6")
    path.mkdir(parents=True)
    with pytest.raises(WorktreeError, match="exists and is not a worktree"):
        open_worktree(repo, "t6", OWNER)


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(WorktreeError, match="not inside a git checkout"):
        open_worktree(tmp_path, "t1", OWNER)


def test_remove_a_clean_one_keeps_the_branch_and_a_dirty_one_is_kept(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    wt = open_worktree(repo, "t1", OWNER)
    (wt.path / "new.txt").write_text("x\n")
    assert not is_clean(wt)
    with pytest.raises(WorktreeError, match="uncommitted changes; it is kept"):
        remove(wt)
    assert wt.path.is_dir()
    (wt.path / "new.txt").unlink()
    assert is_clean(wt)
    remove(wt)
    assert not wt.path.exists()
    assert git(repo, "rev-parse", "--verify", "t1")  # the branch stays: merging is the user's
    assert str(wt.path) not in git(repo, "worktree", "list")


def test_ours_whose_folder_was_deleted_is_made_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    wt = open_worktree(repo, "t2", OWNER)
    shutil.rmtree(wt.path)
    again = open_worktree(repo, "t2", OWNER)
    assert again.created and (again.path / "README.md").is_file()


@pytest.mark.parametrize("how", ["url", "insteadOf"])
def test_an_origin_that_names_a_program_is_not_run(tmp_path: Path, how: str) -> None:
    repo = make_repo(tmp_path, origin=True)
    marker = tmp_path / "ran-ext"
    evil = f"ext::sh -c touch% {marker}"
    if how == "url":
        git(repo, "remote", "set-url", "origin", evil)
    else:
        git(repo, "config", f"url.{evil}.insteadOf", str(tmp_path / "origin.git"))
    wt = open_worktree(repo, "t11", OWNER)
    assert "could not fetch origin" in wt.notices[0]
    assert not marker.exists()
