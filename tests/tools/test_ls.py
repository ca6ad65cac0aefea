"""ls: one folder, sorted, folders marked, .gitignored entries left out and counted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cox.actors.tools.base import ToolEnv
from cox.actors.tools.search import LsTool
from cox.policy.paths import PathEscape
from cox.protocol.types import Risk, ToolCall, ToolResult
from cox.supervisors import CancelScope
from tests.tools.test_grep import hide_git, make_tree


def ls(ws: Path, **inp: object) -> ToolResult:
    env = ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope())
    return LsTool().call(ToolCall(id="t", name="ls", input=inp), env)


EXPECTED_TOP = [".gitignore", ".hidden/", "bom.txt", "crlf.txt", "ctx.txt", "docs/", "img.bin", "keep.log",
                "late.txt", "late_nul.txt", "latin1.txt", "link.py@", "long.txt", "many.txt", "noeol.txt", "src/",
                "sub/", "unicode.txt", "(3 entries hidden by .gitignore)"]


@pytest.mark.parametrize("mode", ["git-repo", "plain-folder", "git-repo-without-git"])
def test_top_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    if mode != "plain-folder" and shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    ws = make_tree(tmp_path / "ws", git=mode != "plain-folder")
    if mode == "git-repo-without-git":
        hide_git(monkeypatch)
    res = ls(ws)
    assert res.ok
    assert res.visible.splitlines() == EXPECTED_TOP  # build/, debug.log, top_only.txt hidden; .git never shown
    assert res.meta == {"entries": 18, "hidden": 3}


@pytest.mark.parametrize("git", [True, False], ids=["git-repo", "plain-folder"])
def test_subfolders_use_their_own_and_parent_rules(tmp_path: Path, git: bool) -> None:
    if git and shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    ws = make_tree(tmp_path / "ws", git=git)
    assert ls(ws, path="sub").visible.splitlines() == [".gitignore", "top_only.txt", "y.py",
                                                       "(1 entry hidden by .gitignore)"]
    assert ls(ws, path="docs").visible.splitlines() == ["deep/", "(1 entry hidden by .gitignore)"]
    assert ls(ws, path="build").visible == "out.py"  # named explicitly: shown whole


def test_empty_folder_and_failures(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    (ws / "empty").mkdir()
    assert ls(ws, path="empty").visible == "(empty folder)"
    assert "does not exist" in ls(ws, path="nope").visible
    assert "is a file" in ls(ws, path="src/app.py").visible
    with pytest.raises(PathEscape):
        ls(ws, path="..")


def test_contract(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    env = ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope())
    call = LsTool().describe(ToolCall(id="t", name="ls", input={}), env)
    assert call.risk is Risk.READ_ONLY and call.subject == str(ws)
    assert LsTool.parallel is True
