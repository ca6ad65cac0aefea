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
    "folder becomes a link": lambda ws: (shutil.rmtree(ws / "sub"), os.symlink(ws / "outside", ws / "sub")),
    "file becomes a folder": lambda ws: ((ws / "a.txt").unlink(), write(ws / "a.txt" / "in.txt", "in\n")),
    "nested repository": lambda ws: (write(ws / "nested" / ".git" / "HEAD", "ref: refs/heads/main\n"),
                                     write(ws / "nested" / "f.txt", "f\n")),
    "ignored inside new folder": lambda ws: (write(ws / "n" / "keep.txt", "k"), write(ws / "n" / "build" / "x", "x")),
    "empty folder": lambda ws: (ws / "empty").mkdir(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_watched_snapshot_equals_a_full_pass(name: str, tmp_path: Path):
    ws = tmp_path / "ws"
    write(ws / "a.txt", "alpha\n")
    write(ws / "sub" / "deep" / "b.txt", "beta\n")
    write(ws / ".gitignore", "build/\n")
    write(ws.parent / "outside" / "a.txt", "not the workspace's\n")
    os.symlink(ws.parent / "outside", ws / "outside")
    git = which_git()
    assert git is not None
    repo = PrivateRepo(git, tmp_path / "private", ws, 60)
    first = repo.snapshot()  # the full pass that starts the watch
    assert repo._watch is not None and not repo._watch.broken
    CASES[name](ws)
    again = repo.snapshot()
    assert repo.tree(again) == full_tree(ws, tmp_path / "fresh")
    if name == "nothing":
        assert again == first
    # And once more after changes on top, through the partial path (in a moved folder too).
    write(ws / "later.txt", "later\n")
    for deep in (ws / "sub" / "deep", ws / "moved" / "deep"):
        if deep.is_dir():
            write(deep / "c.txt", "gamma\n")
    assert repo.tree(repo.snapshot()) == full_tree(ws, tmp_path / "fresh2")
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
    assert repo.tree(repo.snapshot()) == full_tree(ws, tmp_path / "fresh2")
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


def test_the_fast_path_runs_no_git_and_its_diffs_match_git_over_random_changes(tmp_path: Path):
    """Thirty rounds of random writes, deletions, modes, links and folders: every snapshot, written
    as a real tree, equals a full pass, and every diff the fast path recorded equals git's."""
    import random

    rng = random.Random(7)
    ws = tmp_path / "ws"
    for i in range(20):
        write(ws / f"d{i % 4}" / f"f{i}.txt", f"{i}\n")
    write(ws / ".gitignore", "*.o\n")
    git = which_git()
    assert git is not None
    repo = PrivateRepo(git, tmp_path / "private", ws, 60)
    runs: list[str] = []
    real_run = repo.run

    def run(*args, **kw):
        runs.append(args[0])
        return real_run(*args, **kw)

    repo.run = run  # type: ignore[method-assign]
    before = repo.snapshot()
    fast_rounds = 0
    for n in range(30):
        files = [p for p in ws.rglob("*") if p.is_file() and ".git" not in p.parts]
        op = rng.choice(["write", "new", "delete", "chmod", "link", "folder", "ignored"])
        # (an ignored file needs check-ignore; a changed .gitignore, the full pass)
        target = rng.choice([f for f in files if f.suffix != ".o" and f.name != ".gitignore"])
        if op == "write":
            target.write_text(f"round {n}\n")
        elif op == "new":
            write(ws / f"d{rng.randrange(6)}" / f"n{n}.txt", f"new {n}\n")
        elif op == "delete":
            target.unlink()
        elif op == "chmod":
            os.chmod(target, 0o755 if not os.access(target, os.X_OK) else 0o644)
        elif op == "link":
            os.symlink(target.name, target.parent / f"l{n}")
        elif op == "folder":
            for i in range(3):
                write(ws / f"new{n}" / "deep" / f"g{i}", f"{n}.{i}")
        else:
            write(ws / f"d{rng.randrange(4)}" / f"x{n}.o", "object")
        runs.clear()
        watching = repo._watch is not None and repo._watch.fd >= 0 and not repo._watch.broken
        after = repo.snapshot()
        # (ls-tree: the first fast step on a new real tree.) Only while inotify watches: a
        # machine out of inotify instances (fs.inotify.max_user_instances, shared by every
        # process of this user) gets the full pass, which the equalities below still check.
        if op in ("write", "delete", "chmod") and watching and not repo._watch.broken:
            assert runs in ([], ["ls-tree"]), f"round {n} ({op}): the fast path ran git: {runs}"
            fast_rounds += 1
        fast = repo.diff(before, after)
        real_before, real_after = repo.tree(before), repo.tree(after)
        assert real_after == full_tree(ws, tmp_path / f"fresh{n}"), f"round {n} ({op})"
        assert fast == repo.diff(real_before, real_after), f"round {n} ({op})"
        before = after
    repo.close()
    if TreeWatch(ws).start():  # inotify works here now: the fast path must have been taken
        assert fast_rounds >= 5, fast_rounds
