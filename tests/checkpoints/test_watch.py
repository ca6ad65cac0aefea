"""Change notification keeps the snapshots exact (issue 12, the checkpoint cost).

With inotify the private repository adds only the paths that changed since its last snapshot, or
reuses the last tree when nothing did. The tree must be the one a full pass would give, whatever
changed: each case below compares it with a fresh full pass in a second private repository.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from cox.actors.store.checkpoint_git import PrivateRepo, which_git
from cox.actors.store.watch import TreeWatch

pytestmark = pytest.mark.skipif(not TreeWatch.available(), reason="no inotify here (not Linux)")


def full_tree(root: Path, where: Path) -> str:
    git = which_git()
    assert git is not None
    fresh = PrivateRepo(git, where, root, 60)
    fresh._watch = TreeWatch(root)  # a watch that never started: always the full pass
    try:
        return fresh.snapshot()
    finally:
        shutil.rmtree(where, ignore_errors=True)


def write(p: Path, text: str) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


CASES: dict[str, Callable[[Path], None]] = {
    "modify": lambda ws: write(ws / "a.txt", "changed\n"),
    "create": lambda ws: write(ws / "new.txt", "new\n"),
    "delete": lambda ws: (ws / "a.txt").unlink(),
    "new folder tree": lambda ws: [write(ws / "n" / "m" / f"f{i}", str(i)) for i in range(5)],
    "delete folder": lambda ws: shutil.rmtree(ws / "sub"),
    "rename folder": lambda ws: (ws / "sub").rename(ws / "moved"),
    "chmod +x": lambda ws: os.chmod(ws / "a.txt", 0o755),
    "symlink": lambda ws: os.symlink("a.txt", ws / "link"),
    "ignored file": lambda ws: write(ws / "build" / "out.o", "obj"),
    "gitignore changed": lambda ws: write(ws / ".gitignore", ""),
    "create then delete": lambda ws: (write(ws / "tmp.txt", "x"), (ws / "tmp.txt").unlink()),
    "nothing": lambda ws: None,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_watched_snapshot_equals_a_full_pass(name: str, tmp_path: Path):
    ws = tmp_path / "ws"
    write(ws / "a.txt", "alpha\n")
    write(ws / "sub" / "deep" / "b.txt", "beta\n")
    write(ws / ".gitignore", "build/\n")
    git = which_git()
    assert git is not None
    repo = PrivateRepo(git, tmp_path / "private", ws, 60)
    first = repo.snapshot()  # the full pass that starts the watch
    assert repo._watch is not None and not repo._watch.broken
    CASES[name](ws)
    again = repo.snapshot()
    assert again == full_tree(ws, tmp_path / "fresh")
    if name == "nothing":
        assert again == first
    # And once more after changes on top, through the partial path (in a moved folder too).
    write(ws / "later.txt", "later\n")
    for deep in (ws / "sub" / "deep", ws / "moved" / "deep"):
        if deep.is_dir():
            write(deep / "c.txt", "gamma\n")
    assert repo.snapshot() == full_tree(ws, tmp_path / "fresh2")
    assert not repo._watch.broken
    repo.close()


def test_a_queue_overflow_falls_back_to_the_full_pass(tmp_path: Path):
    ws = tmp_path / "ws"
    write(ws / "a.txt", "alpha\n")
    git = which_git()
    assert git is not None
    repo = PrivateRepo(git, tmp_path / "private", ws, 60)
    repo.snapshot()
    assert repo._watch is not None
    repo._watch.broken = True  # as IN_Q_OVERFLOW leaves it
    write(ws / "b.txt", "beta\n")
    assert repo.snapshot() == full_tree(ws, tmp_path / "fresh")
    assert not repo._watch.broken  # started afresh before that full pass
    write(ws / "c.txt", "gamma\n")
    assert repo.snapshot() == full_tree(ws, tmp_path / "fresh2")
    repo.close()


def test_a_tree_over_the_watch_limit_gives_up_for_good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import cox.actors.store.watch as watch

    ws = tmp_path / "ws"
    for i in range(5):
        write(ws / f"d{i}" / "f", "x")
    monkeypatch.setattr(watch, "MAX_WATCHES", 3)
    w = TreeWatch(ws)
    assert w.start() is False and w.given_up and w.fd == -1
    assert w.drain() is None and w.fd == -1  # not walked again
    git = which_git()
    assert git is not None
    repo = PrivateRepo(git, tmp_path / "private", ws, 60)
    repo.snapshot()
    write(ws / "d0" / "g", "y")
    assert repo.snapshot() == full_tree(ws, tmp_path / "fresh")
    repo.close()
