"""write, edit and apply_patch never write git metadata, a project's .cox/ or COX_HOME.

They run outside the sandbox, which keeps those places read-only for commands; a link into them
is judged by where it lands.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cox.actors.tools.apply_patch import ApplyPatchTool
from cox.actors.tools.base import ToolEnv, ToolInputError
from cox.actors.tools.edit import EditTool
from cox.actors.tools.files import WriteTool
from cox.protocol.types import ToolCall, ToolResult
from cox.supervisors import CancelScope


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    p = (tmp_path / "ws").resolve()
    (p / ".git" / "hooks").mkdir(parents=True)
    (p / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (p / ".cox").mkdir()
    (p / ".cox" / "config.toml").write_text("")
    (p / "vendor" / "lib").mkdir(parents=True)
    (p / "vendor" / "lib" / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    return p


def env(ws: Path) -> ToolEnv:
    return ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope())


def write(ws: Path, path: str, content: str = "x") -> ToolResult:
    return WriteTool().call(ToolCall(id="t", name="write", input={"path": path, "content": content}), env(ws))


PROTECTED = [".git/config", ".git/hooks/pre-commit", ".git/info/attributes", ".cox/config.toml",
             ".cox/new/file.toml", "vendor/lib/.git"]


@pytest.mark.parametrize("rel", PROTECTED)
def test_write_refuses_git_metadata_and_cox_config(ws: Path, rel: str) -> None:
    before = (ws / rel).read_bytes() if (ws / rel).exists() else None
    with pytest.raises(ToolInputError, match=r"do not write inside \.(git|cox)/"):
        write(ws, rel, "[core]\n\tfsmonitor = touch /tmp/owned\n")
    assert ((ws / rel).read_bytes() if (ws / rel).exists() else None) == before


def test_edit_and_patch_refuse_them_too(ws: Path) -> None:
    with pytest.raises(ToolInputError, match="git metadata"):
        EditTool().call(ToolCall(id="t", name="edit", input={"path": ".git/config", "old_string": "bare = false",
                                                             "new_string": "fsmonitor = x"}), env(ws))
    text = "*** Begin Patch\n*** Add File: .git/hooks/post-checkout\n+#!/bin/sh\n*** End Patch\n"
    res = ApplyPatchTool().call(ToolCall(id="t", name="apply_patch", input={"patch": text}), env(ws))
    assert not res.ok and "git metadata" in res.visible
    assert not (ws / ".git" / "hooks" / "post-checkout").exists()
    assert (ws / ".git" / "config").read_text() == "[core]\n\tbare = false\n"


def test_a_link_into_git_metadata_is_judged_where_it_lands(ws: Path) -> None:
    (ws / "notes.txt").symlink_to(".git/config")
    with pytest.raises(ToolInputError, match="git metadata"):
        write(ws, "notes.txt", "[core]\n\tfsmonitor = touch /tmp/owned\n")
    assert (ws / ".git" / "config").read_text() == "[core]\n\tbare = false\n"


def test_cox_home_inside_the_workspace_is_refused(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COX_HOME", str(ws / "state"))
    with pytest.raises(ToolInputError, match="inside cox's home"):
        write(ws, "state/config.toml", "[core]\nprovider = 'evil'\n")
    assert not (ws / "state").exists()


def test_ordinary_files_and_look_alike_names_are_written(ws: Path) -> None:
    for rel in ("src/app.py", ".gitignore", ".github/workflows/ci.yml", "docs/.git-notes", ".coxrc", "git/config"):
        assert write(ws, rel).ok, rel
        assert (ws / rel).read_text() == "x"


def test_the_checkpoint_saves_nothing_for_a_refused_write(ws: Path) -> None:
    call = ToolCall(id="t", name="write", input={"path": ".git/config", "content": "x"})
    assert WriteTool().writes(call, env(ws)) == []
    call = ToolCall(id="t", name="write", input={"path": "ok.txt", "content": "x"})
    assert WriteTool().writes(call, env(ws)) == [ws / "ok.txt"]
