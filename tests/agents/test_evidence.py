"""The evidence gate's snapshots: an incremental snapshot (inotify-driven, stat-cached) must
always equal a fresh full one, whatever happened in between; and the verdict's rules."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from cox.actors.store.watch import TreeWatch
from cox.agents.evidence import Snapshots, changed, judge, parse_claim, snapshot

Step = Callable[[Path], None]


def _write(rel: str, text: str) -> Step:
    def step(ws: Path) -> None:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return step


def _same_size_same_mtime(ws: Path) -> None:
    """Rewrite a file with other bytes of the same size and put its mtime back."""
    path = ws / "src" / "a.py"
    st = path.stat()
    path.write_text("X" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _rename(ws: Path) -> None:
    (ws / "src" / "b.py").rename(ws / "src" / "renamed.py")


def _rename_folder(ws: Path) -> None:
    (ws / "src" / "sub").rename(ws / "moved")


STEPS: list[tuple[str, Step]] = [
    ("nothing", lambda ws: None),
    ("modify", _write("src/a.py", "def f(): return 2\n")),
    ("same size, mtime put back", _same_size_same_mtime),
    ("create", _write("src/new.py", "new\n")),
    ("create in a new folder", _write("src/sub/deep/x.py", "x\n")),
    ("delete", lambda ws: (ws / "src" / "new.py").unlink()),
    ("chmod", lambda ws: (ws / "src" / "a.py").chmod(0o755)),
    ("rename", _rename),
    ("rename a folder", _rename_folder),
    ("ignore it", _write(".gitignore", "moved/\n")),
    ("ignored write", _write("moved/deep/y.py", "y\n")),
    ("unignore it", _write(".gitignore", "")),
    ("symlink (not listed)", lambda ws: (ws / "link").symlink_to(ws / "src" / "a.py")),
]


@pytest.mark.parametrize("git", [False, True], ids=["plain", "git"])
def test_an_incremental_snapshot_equals_a_fresh_one_after_every_change(tmp_path: Path, git: bool) -> None:
    ws = tmp_path / "ws"
    _write("src/a.py", "def f(): pass\n")(ws)
    _write("src/b.py", "b\n")(ws)
    if git:
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
    snaps = Snapshots(ws, [ws])
    try:
        last = snaps.take()
        assert last == snapshot(ws, [ws])
        for name, step in STEPS:
            step(ws)
            now = snaps.take()
            fresh = snapshot(ws, [ws])
            assert now == fresh, name
            if name in ("modify", "same size, mtime put back", "chmod"):
                assert changed(last, now) == {"src/a.py"}, name
            if name == "nothing":
                assert changed(last, now) == set()
            if name == "ignored write":
                assert changed(last, now) == set()
            last = now
        assert "moved/deep/y.py" in last and "link" not in last
        if TreeWatch.available():  # nothing, modify, same size, delete and chmod listed nothing again
            assert snaps.listings == 1 + len(STEPS) - 5
    finally:
        snaps.close()


def test_a_second_root_outside_the_base_is_keyed_by_its_absolute_path(tmp_path: Path) -> None:
    ws, other = tmp_path / "ws", tmp_path / "other"
    _write("a.txt", "a")(ws)
    _write("b.txt", "b")(other)
    got = snapshot(ws, [ws, other])
    assert set(got) == {"a.txt", f"{os.path.realpath(other)}/b.txt"}


def test_parse_claim_normalises_paths() -> None:
    claim = parse_claim('```report\nchanged: ["./src/a.py", "src//b.py", "src/a.py"]\nevidence: e\n```')
    assert not isinstance(claim, str)
    assert claim.changed == ("src/a.py", "src/b.py") and claim.evidence == "e"


def test_judge_checks_scope_before_the_claim() -> None:
    answer = '```report\nchanged: ["README.md"]\nevidence: e\n```'
    verdict = judge(answer, {"README.md"}, ["src"], writable=True)
    assert not verdict.ok and verdict.reason == "it changed README.md, outside its scope (src)"
    verdict = judge(answer, {"README.md"}, ["README.md"], writable=True)
    assert verdict.ok and verdict.seen == ("README.md",) and verdict.evidence == "e"


def test_a_racily_clean_file_is_hashed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rewrite within the clock tick of the last hashing leaves the stat unchanged (simulated:
    lstat answers the old stat): the file must be hashed again, not trusted to the cache."""
    ws = tmp_path / "ws"
    _write("a.py", "aaaa")(ws)
    real = os.lstat
    frozen = real(ws / "a.py")

    def lstat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        st = real(path, *args, **kwargs)  # type: ignore[call-overload]
        if str(path).endswith("/a.py"):
            return os.stat_result(tuple(frozen), {"st_mtime_ns": frozen.st_mtime_ns, "st_ctime_ns": frozen.st_ctime_ns})
        return st

    monkeypatch.setattr(os, "lstat", lstat)
    snaps = Snapshots(ws, [ws])
    try:
        first = snaps.take()
        (ws / "a.py").write_text("bbbb")
        assert changed(first, snaps.take()) == {"a.py"}
    finally:
        snaps.close()
