"""Snapshots in a private bare repository: what changed is found, the user's repository is not
touched, .gitignore is honoured, and the user's objects are reused through alternates."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cox.actors.store import archive
from cox.actors.store.checkpoint_git import find_user_repo
from cox.actors.store.checkpoints import Checkpointer, CheckpointError
from cox.actors.store.layout import Layout

from .conftest import git, tree_digest


def rows(cp: Checkpointer) -> dict[str, dict]:
    cur = cp._db().execute(
        "SELECT path, kind, archive_id, size, too_big, mode FROM checkpoints WHERE kind!='marker' ORDER BY id")
    keys = [d[0] for d in cur.description]
    return {r[0]: dict(zip(keys, r, strict=True)) for r in cur.fetchall()}


def test_modify_delete_create_without_a_repository(cp: Checkpointer, ws: Path, layout: Layout):
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "a.txt").write_bytes(b"alpha\r\n")
    (ws / "b.txt").write_bytes(b"beta")
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_bytes(b"obj")
    (ws / "run.log").write_text("log")
    before = cp.snapshot()

    (ws / "a.txt").write_bytes(b"ALPHA")
    (ws / "b.txt").unlink()
    (ws / "c.txt").write_text("gamma")
    (ws / "build" / "out.o").write_bytes(b"changed")  # ignored
    (ws / "build" / "more.o").write_bytes(b"new")  # ignored
    (ws / "run.log").write_text("more log")  # ignored

    assert cp.changes_since("s1", 1, "call-1", before) == ["a.txt", "b.txt", "c.txt"]
    r = rows(cp)
    assert set(r) == {"a.txt", "b.txt", "c.txt"}
    assert r["a.txt"]["kind"] == "pre" and r["b.txt"]["kind"] == "deleted" and r["c.txt"]["kind"] == "created"
    conn = cp._db()
    assert archive.get(conn, layout.archive, r["a.txt"]["archive_id"]) == b"alpha\r\n"
    assert archive.get(conn, layout.archive, r["b.txt"]["archive_id"]) == b"beta"
    assert r["c.txt"]["archive_id"] is None
    assert cp.repo_dir.parent == layout.checkpoints
    assert not (ws / ".git").exists()


def test_no_change_is_an_empty_list_and_the_same_tree(cp: Checkpointer, ws: Path):
    (ws / "a.txt").write_text("a")
    t1 = cp.snapshot()
    assert cp.snapshot() == t1
    assert cp.changes_since("s1", 1, "c", t1) == []


def test_gitattributes_cannot_change_the_stored_bytes(cp: Checkpointer, ws: Path, layout: Layout):
    (ws / ".gitattributes").write_text("* text=auto eol=lf\n*.u16 working-tree-encoding=UTF-16\n*.x filter=evil ident\n")
    payloads = {"crlf.txt": b"one\r\ntwo\r\n", "t.u16": b"not utf16", "f.x": b"$Id$\r\n"}
    for name, data in payloads.items():
        (ws / name).write_bytes(data)
    before = cp.snapshot()
    for name in payloads:
        (ws / name).unlink()
    cp.changes_since("s1", 1, "c", before)
    r = rows(cp)
    for name, data in payloads.items():
        assert archive.get(cp._db(), layout.archive, r[name]["archive_id"]) == data


def test_symlinks_and_exec_bits_are_recorded(cp: Checkpointer, ws: Path):
    (ws / "tool.sh").write_text("#!/bin/sh\n")
    (ws / "tool.sh").chmod(0o755)
    os.symlink("tool.sh", ws / "link")
    before = cp.snapshot()
    (ws / "tool.sh").unlink()
    (ws / "link").unlink()
    cp.changes_since("s1", 1, "c", before)
    r = rows(cp)
    assert r["tool.sh"]["mode"] & 0o111
    assert r["link"]["mode"] == 0o120000


def test_too_big_pre_image_from_a_snapshot(layout: Layout, ws: Path):
    cp = Checkpointer(layout, ws, too_big=1024, git_timeout=30)
    (ws / "big").write_bytes(b"x" * 5000)
    before = cp.snapshot()
    (ws / "big").write_bytes(b"y")
    assert cp.changes_since("s1", 1, "c", before) == ["big"]
    r = rows(cp)["big"]
    assert r["too_big"] == 1 and r["archive_id"] is None and r["size"] == 5000
    cp.close()


def test_the_users_repository_is_untouched(repo: Path, cp: Checkpointer, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch):
    ran = tmp_path / "hook-ran"
    hooks = repo / ".git" / "hooks"
    for name in ("pre-commit", "post-index-change", "post-checkout", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {ran}\n")
        (hooks / name).chmod(0o755)
    # A hostile global config (a hooks path, CRLF conversion) and a GIT_DIR left by a hook
    # around cox: none of it may reach the private repository.
    fake_home = tmp_path / "fake-home"
    fake_home.mkdir()
    (fake_home / ".gitconfig").write_text(f"[core]\n\thooksPath = {hooks}\n\tautocrlf = true\n")
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))

    # The repository's own config names a command (fsmonitor) git would run if it read it.
    monitor = hooks / "fsmonitor-cmd"
    monitor.write_text(f"#!/bin/sh\necho fsmonitor >> {ran}\n")
    monitor.chmod(0o755)
    with open(repo / ".git" / "config", "a") as f:
        f.write(f"[core]\n\tfsmonitor = {monitor}\n")

    (repo / "dirty.txt").write_text("untracked\n")
    index_before = (repo / ".git" / "index").read_bytes()
    dotgit_before = tree_digest(repo / ".git")

    before = cp.snapshot()
    (repo / "src" / "app.py").write_text("print('changed')\n")
    (repo / "README.md").unlink()
    (repo / "new.txt").write_bytes(b"a\r\nb\r\n")
    assert cp.changes_since("s1", 1, "c", before) == ["README.md", "new.txt", "src/app.py"]
    tree = cp.snapshot()
    blob = cp._git().run("rev-parse", f"{cp._git().tree(tree)}:new.txt").stdout.decode().strip()
    assert cp._git().run("cat-file", "blob", blob).stdout == b"a\r\nb\r\n"  # no autocrlf
    cp.restore("s1", 1, 2)

    assert (repo / ".git" / "index").read_bytes() == index_before
    assert tree_digest(repo / ".git") == dotgit_before
    assert not ran.exists(), ran.read_text()
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    git(repo, "config", "--unset", "core.fsmonitor")
    assert "dirty.txt" in git(repo, "status", "--porcelain")
    # Control: the hooks are live -- the user's own git runs them.
    git(repo, "add", "dirty.txt")
    assert "post-index-change" in ran.read_text()
    assert not (cp.repo_dir / "hooks").exists()  # no template: no sample hooks in the private repo


def loose_objects(git_dir: Path) -> int:
    return sum(1 for p in (git_dir / "objects").glob("??/*"))


def test_alternates_keep_the_private_store_small(repo: Path, layout: Layout):
    files = 150
    for i in range(files):
        (repo / "src" / f"m{i}.py").write_bytes(os.urandom(2048))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many")
    user = find_user_repo(repo)
    assert user is not None and user.objects == (repo / ".git" / "objects").resolve()

    cp = Checkpointer(layout, repo, git_timeout=30)
    cp.snapshot()
    # Every blob already is in the user's repository: only nothing (the trees match HEAD) or a
    # few trees may be written to the private store.
    assert loose_objects(cp.repo_dir) <= 3
    (repo / "src" / "m0.py").write_bytes(b"changed")
    cp.snapshot()
    assert loose_objects(cp.repo_dir) <= 6
    cp.close()


def test_without_a_repository_blobs_are_copied(ws: Path, layout: Layout):
    """The control of the alternates test: the same files outside a repository are stored."""
    for i in range(50):
        (ws / f"m{i}.py").write_bytes(os.urandom(256))
    cp = Checkpointer(layout, ws, git_timeout=30)
    cp.snapshot()
    assert loose_objects(cp.repo_dir) >= 50
    cp.close()


def test_a_worktree_finds_the_common_objects(repo: Path, tmp_path: Path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "t1", str(wt))
    user = find_user_repo(wt / "src")
    assert user is not None and user.objects == (repo / ".git" / "objects").resolve()


def test_a_git_failure_is_a_checkpoint_error(cp: Checkpointer, ws: Path):
    (ws / "a").write_text("a")
    with pytest.raises(CheckpointError, match="diff-tree"):
        cp.changes_since("s1", 1, "c", "0" * 40)


def test_a_git_timeout_is_a_checkpoint_error(layout: Layout, ws: Path):
    cp = Checkpointer(layout, ws, git_timeout=0.000001)
    with pytest.raises(CheckpointError, match="timed out|could not"):
        cp.snapshot()
    cp.close()


def test_unreadable_file_is_left_out_not_fatal(cp: Checkpointer, ws: Path):
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    (ws / "ok.txt").write_text("ok")
    secret = ws / "secret.txt"
    secret.write_text("s")
    secret.chmod(0)
    try:
        before = cp.snapshot()
        (ws / "ok.txt").write_text("changed")
        assert cp.changes_since("s1", 1, "c", before) == ["ok.txt"]
    finally:
        secret.chmod(0o644)


def test_two_checkpointers_on_one_root_share_the_private_repo(layout: Layout, ws: Path):
    (ws / "a").write_text("a")
    a = Checkpointer(layout, ws, git_timeout=30)
    b = Checkpointer(layout, ws / ".", git_timeout=30)
    assert a.repo_dir == b.repo_dir
    assert a.snapshot() == b.snapshot()
    a.close()
    b.close()


def test_bash_through_a_real_process(cp: Checkpointer, ws: Path):
    (ws / "keep").write_text("k")
    before = cp.snapshot()
    subprocess.run(["bash", "-c", "echo x > made && rm keep"], cwd=ws, timeout=30, check=True)
    assert cp.changes_since("s1", 1, "c", before) == ["keep", "made"]


def test_the_users_info_exclude_is_honoured(repo: Path, cp: Checkpointer):
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("secret.env\n")
    (repo / "secret.env").write_text("KEY=1")
    before = cp.snapshot()
    (repo / "secret.env").write_text("KEY=2")
    (repo / "README.md").write_text("changed")
    assert cp.changes_since("s1", 1, "c", before) == ["README.md"]


def test_a_file_git_cannot_add_is_left_out_not_fatal(cp: Checkpointer, ws: Path):
    """A FIFO (or a file removed mid-scan) makes ``git add`` complain; the snapshot goes on."""
    (ws / "ok.txt").write_text("ok")
    os.mkfifo(ws / "pipe")
    before = cp.snapshot()
    (ws / "ok.txt").write_text("changed")
    assert cp.changes_since("s1", 1, "c", before) == ["ok.txt"]


def test_a_cox_home_inside_the_workspace_is_not_snapshotted(ws: Path):
    """cox run in ~ (or COX_HOME under the project): cox's own database, archive and temporary
    files are not part of the workspace's snapshots."""
    layout = Layout(ws / "state" / "cox-home").ensure()
    (ws / "a.txt").write_text("a")
    c = Checkpointer(layout, ws, git_timeout=30)
    try:
        before = c.snapshot()
        (layout.archive / "x.bin").write_bytes(b"archived")
        (layout.archive / ".tmp-part").write_bytes(b"vanishing")
        (ws / "a.txt").write_text("A")
        assert c.changes_since("s1", 1, "call-1", before) == ["a.txt"]
    finally:
        c.close()


def test_the_checkpointer_cannot_write_and_a_failed_write_never_leaves_the_lock_held(cp: Checkpointer, layout: Layout):
    """The checkpointer reads cox.db read-only: the store actor writes its rows, each message in
    one transaction. A message that fails half-way (here a row the table refuses, after the
    archive rows went in) is rolled back whole and cox.db's write lock is free at once after."""
    import sqlite3

    from cox.actors.store.messages import ArchiveRow, Checkpoint, CheckpointRow

    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        cp._db().execute("INSERT INTO archive (id, kind, size, created_at) VALUES ('x', 'k', 0, 0)")
    bad = Checkpoint("s1", 1, "c1", str(cp.root), (CheckpointRow("a.txt", "no such kind"),),
                     (ArchiveRow("A1", "checkpoint", 1, b"x"),))
    with pytest.raises(CheckpointError, match="session index"):
        cp._ask(bad)
    assert cp._db().execute("SELECT COUNT(*) FROM archive WHERE id='A1'").fetchone()[0] == 0  # rolled back
    other = sqlite3.connect(str(layout.db), timeout=0.2, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # would raise "database is locked" after 0.2 s
        other.execute("ROLLBACK")
    finally:
        other.close()
