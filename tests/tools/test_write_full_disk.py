"""A write that fails on a full disk leaves nothing behind (issue 12, item 9): no temporary file,
the old content whole, and an error that says what happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.store.conftest import fill, small_tmpfs  # noqa: F401  (the fixture)
from tests.tools.test_write_links import edit, leftovers, write


@pytest.mark.parametrize("tool", ["write", "edit"])
def test_a_write_that_fills_the_disk_leaves_no_temporary_file(small_tmpfs: Path, tool: str) -> None:  # noqa: F811
    ws = (small_tmpfs / "ws")
    ws.mkdir()
    target = ws / "notes.txt"
    target.write_text("old notes\n")
    filler = fill(small_tmpfs, 64 * 1024)
    big = "x" * (512 * 1024)
    r = write(ws, "notes.txt", big) if tool == "write" else edit(ws, "notes.txt", "old notes", big)
    assert not r.ok, r.visible
    assert "No space left" in r.visible or "ENOSPC" in r.visible, r.visible
    assert target.read_text() == "old notes\n"
    assert leftovers(ws) == []
    assert sorted(p.name for p in ws.iterdir()) == ["notes.txt"]
    filler.unlink()
    r = write(ws, "notes.txt", "new notes\n")
    assert r.ok and target.read_text() == "new notes\n"
