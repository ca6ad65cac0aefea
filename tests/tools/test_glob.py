"""glob: shell-style patterns over the files grep would search (.gitignore respected), sorted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cox.actors.tools.base import ToolEnv, ToolInputError
from cox.actors.tools.search import GlobTool, glob_matcher
from cox.policy.paths import PathEscape
from cox.protocol.types import Risk, ToolCall, ToolResult, ToolStatus
from cox.supervisors import CancelScope
from tests.tools.test_grep import make_tree


def glob(ws: Path, cwd: Path | None = None, **inp: object) -> ToolResult:
    env = ToolEnv(roots=[ws], cwd=cwd or ws, cancel=CancelScope())
    return GlobTool().call(ToolCall(id="t", name="glob", input=inp), env)


@pytest.mark.parametrize("git", [True, False], ids=["git-repo", "plain-folder"])
def test_recursive_pattern_sorted_and_gitignore_respected(tmp_path: Path, git: bool) -> None:
    if git and shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    ws = make_tree(tmp_path / "ws", git=git)
    res = glob(ws, pattern="**/*.py")
    assert res.ok
    assert res.visible.splitlines() == [".hidden/cfg.py", "src/app.py", "src/deep/more/mod.py", "src/util.py", "sub/y.py"]
    assert res.meta == {"files": 5}  # not build/out.py (ignored) nor link.py (a symlink)


def test_pattern_without_slash_matches_the_top_folder_only(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    assert glob(ws, pattern="*.log").visible == "keep.log"
    assert glob(ws, pattern="*.py", path="src").visible == "src/app.py\nsrc/util.py"


def test_static_prefix_braces_classes_and_absolute_patterns(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    assert glob(ws, pattern="src/**/*.{py,md}").visible.splitlines() == [
        "src/app.py", "src/deep/more/mod.py", "src/notes.md", "src/util.py"]
    assert glob(ws, pattern="src/[au]*.py").visible.splitlines() == ["src/app.py", "src/util.py"]
    assert glob(ws, pattern=str(ws / "src" / "deep" / "**" / "*.py")).visible == "src/deep/more/mod.py"
    assert glob(ws, pattern="./sub/?.py").visible == "sub/y.py"


def test_paths_are_shown_from_the_working_folder(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = glob(ws, cwd=ws / "src", pattern="**/*.py", path=str(ws / "sub"))
    assert res.visible == str(ws / "sub" / "y.py")  # outside cwd: absolute
    assert glob(ws, cwd=ws / "src", pattern="deep/**").visible == "deep/more/mod.py"


def test_no_match_and_failure_paths(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = glob(ws, pattern="**/*.rs")
    assert res.ok and res.visible == "no files match **/*.rs in ." and res.meta == {"files": 0}
    assert glob(ws, pattern="nowhere/**/*.py").status is ToolStatus.ERROR
    assert "not a folder" in glob(ws, pattern="*.py", path="src/app.py").visible
    with pytest.raises(ToolInputError):
        glob(ws, pattern="  ")
    with pytest.raises(PathEscape):
        glob(ws, pattern="../**/*.py")
    with pytest.raises(PathEscape):
        glob(ws, pattern="/etc/*.conf")


def test_glob_matcher_conventions() -> None:
    shell = glob_matcher("**/*.py", basename_if_no_slash=False)
    assert shell("a.py") and shell("x/y/a.py") and not shell("a.pyc")
    top = glob_matcher("*.py", basename_if_no_slash=False)
    assert top("a.py") and not top("x/a.py")
    rg_style = glob_matcher("*.py", basename_if_no_slash=True)
    assert rg_style("a.py") and rg_style("x/y/a.py")
    assert glob_matcher("src/**", basename_if_no_slash=False)("src/a/b.c")
    assert glob_matcher("a/**/b", basename_if_no_slash=False)("a/b")
    assert glob_matcher("[!a]*", basename_if_no_slash=False)("b") and not glob_matcher("[!a]*", basename_if_no_slash=False)("a")


def test_contract(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    env = ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope())
    call = GlobTool().describe(ToolCall(id="t", name="glob", input={"pattern": "*", "path": "src"}), env)
    assert call.risk is Risk.READ_ONLY and call.subject == str(ws / "src")
    assert GlobTool.parallel is True
