"""A rewind never follows a link planted after the checkpoint.

Between a checkpoint and /rewind the model (or a command it ran) can swap a file or a folder for a
symlink that points out of the workspace. Restoring must replace or remove the link itself, never
write through it or delete its target, and must not write under a folder that is now a link.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cox.actors.store.checkpoints import Checkpointer

SECRET = b"the user's own file\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the workspace with a file whose bytes must survive."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_bytes(SECRET)
    (home / "a.txt").write_bytes(SECRET)
    return home


def intact(outside: Path) -> bool:
    return sorted(p.name for p in outside.iterdir()) == [".bashrc", "a.txt"] and all(
        (outside / n).read_bytes() == SECRET for n in (".bashrc", "a.txt"))


def test_a_file_replaced_by_a_link_is_restored_as_a_file(cp: Checkpointer, ws: Path, outside: Path) -> None:
    (ws / "a.txt").write_bytes(b"before\n")
    cp.pre_images("s1", 1, "c1", [ws / "a.txt"])
    (ws / "a.txt").write_bytes(b"edited\n")
    (ws / "a.txt").unlink()
    (ws / "a.txt").symlink_to(outside / ".bashrc")
    restored = cp.restore("s1", 1, 2)
    assert restored == ["a.txt"], restored.not_restorable
    assert not os.path.islink(ws / "a.txt") and (ws / "a.txt").read_bytes() == b"before\n"
    assert intact(outside)
    # Undoing the rewind brings the link back (it was recorded, not followed).
    assert cp.restore("s1", 2, 3) == ["a.txt"]
    assert os.readlink(ws / "a.txt") == str(outside / ".bashrc")
    assert intact(outside)


def test_a_created_file_that_is_now_a_link_removes_the_link_only(cp: Checkpointer, ws: Path, outside: Path) -> None:
    cp.pre_images("s1", 1, "c1", [ws / ".bashrc"])  # marked created
    (ws / ".bashrc").symlink_to(outside / ".bashrc")
    restored = cp.restore("s1", 1, 2)
    assert restored == [".bashrc"]
    assert not os.path.lexists(ws / ".bashrc")
    assert intact(outside)


def test_nothing_is_written_or_removed_under_a_folder_that_became_a_link(cp: Checkpointer, ws: Path,
                                                                        outside: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "a.txt").write_bytes(b"before\n")
    cp.pre_images("s1", 1, "c1", [ws / "sub" / "a.txt", ws / "sub" / ".bashrc"])  # a pre, a created
    (ws / "sub" / "a.txt").unlink()
    (ws / "sub").rmdir()
    (ws / "sub").symlink_to(outside)  # now ws/sub/a.txt and ws/sub/.bashrc are the user's files
    restored = cp.restore("s1", 1, 2)
    assert restored == []
    assert set(restored.not_restorable) == {"sub/a.txt", "sub/.bashrc"}
    assert all("sub is a symlink" in why for why in restored.not_restorable.values()), restored.not_restorable
    assert intact(outside)


def test_a_bash_swap_of_a_folder_for_a_link_is_undone_in_order(cp: Checkpointer, ws: Path, outside: Path) -> None:
    """Seen by the snapshot: ``sub`` appeared as a link, ``sub/a.txt`` vanished. The rewind removes
    the link first, then makes ``sub`` a real folder again and puts the file back in it."""
    (ws / "sub").mkdir()
    (ws / "sub" / "a.txt").write_bytes(b"before\n")
    tree = cp.snapshot()
    subprocess.run(["bash", "-c", f"rm -r sub && ln -s {outside} sub"], cwd=ws, check=True, timeout=30)
    assert cp.changes_since("s1", 1, "c1", tree) == ["sub", "sub/a.txt"]
    restored = cp.restore("s1", 1, 2)
    assert sorted(restored) == ["sub", "sub/a.txt"], (restored.not_restorable, restored.conflicts)
    assert not os.path.islink(ws / "sub") and (ws / "sub" / "a.txt").read_bytes() == b"before\n"
    assert intact(outside)


def test_links_at_the_rewinds_old_temporary_names_are_ignored(cp: Checkpointer, ws: Path, outside: Path) -> None:
    (ws / "a.txt").write_bytes(b"before\n")
    cp.pre_images("s1", 1, "c1", [ws / "a.txt"])
    (ws / "a.txt").write_bytes(b"after\n")
    for name in (f".a.txt.cox-rewind-{os.getpid()}", ".a.txt.cox-rewind", ".a.txt.tmp"):
        (ws / name).symlink_to(outside / ".bashrc")
    assert cp.restore("s1", 1, 2) == ["a.txt"]
    assert (ws / "a.txt").read_bytes() == b"before\n"
    assert intact(outside)


def test_a_recorded_symlink_is_recreated_without_following_what_stands_there(cp: Checkpointer, ws: Path,
                                                                             outside: Path) -> None:
    (ws / "link").symlink_to("a.txt")
    tree = cp.snapshot()
    (ws / "link").unlink()
    (ws / "link").symlink_to(outside / ".bashrc")
    assert cp.changes_since("s1", 1, "c1", tree) == ["link"]
    assert cp.restore("s1", 1, 2) == ["link"]
    assert os.readlink(ws / "link") == "a.txt"
    assert intact(outside)
