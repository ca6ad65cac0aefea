"""The apply_patch tool through ``call()`` with a real ToolEnv, and what it tells the permission
engine and checkpoints (risk, subject, writes) before it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cox.actors.tools.apply_patch import VISIBLE_DIFF_LINES, ApplyPatchTool
from cox.actors.tools.base import ToolEnv, ToolInputError
from cox.protocol.types import Risk, ToolCall, ToolStatus
from cox.supervisors import CancelScope


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


def env_for(ws: Path, cwd: Path | None = None) -> ToolEnv:
    return ToolEnv(roots=[ws], cwd=cwd or ws, cancel=CancelScope("test"), home=ws.parent)


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def tool_call(**input: Any) -> ToolCall:
    return ToolCall(id="p1", name="apply_patch", input=input)


def test_success_shows_summary_and_diff(ws: Path) -> None:
    (ws / "a.py").write_text("x = 1\ny = 2\n")
    result = ApplyPatchTool().call(tool_call(patch=patch("*** Update File: a.py", "@@", " x = 1", "-y = 2",
                                                         "+y = 3", "*** Add File: b.py", "+b")), env_for(ws))
    assert result.status is ToolStatus.OK
    assert result.visible.startswith("Success. Updated the following files:\nA b.py\nM a.py\n\n")
    assert "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3" in result.visible
    assert "--- /dev/null\n+++ b/b.py" in result.visible
    assert result.meta["added"] == ["b.py"] and result.meta["modified"] == ["a.py"]
    assert result.meta["diff"].count("+++") == 2
    assert (ws / "a.py").read_text() == "x = 1\ny = 3\n"


def test_input_alias_as_codex_models_send_it(ws: Path) -> None:
    result = ApplyPatchTool().call(tool_call(input=patch("*** Add File: n.txt", "+n")), env_for(ws))
    assert result.ok and (ws / "n.txt").read_text() == "n\n"


def test_visible_diff_is_kept_small(ws: Path) -> None:
    body = [f"+line {i}" for i in range(500)]
    result = ApplyPatchTool().call(tool_call(patch=patch("*** Add File: big.txt", *body)), env_for(ws))
    assert result.ok
    assert len(result.visible.splitlines()) < VISIBLE_DIFF_LINES + 10
    assert "more diff lines not shown" in result.visible
    assert "+line 499" in result.meta["diff"]


def test_bad_hunk_is_an_error_result_and_nothing_is_written(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    result = ApplyPatchTool().call(tool_call(patch=patch("*** Update File: a.txt", "@@", "-a", "+A",
                                                         "*** Update File: b.txt", "@@", "-nope", "+x")),
                                   env_for(ws))
    assert result.status is ToolStatus.ERROR and result.meta["stage"] == "apply"
    assert "Failed to find expected lines in b.txt" in result.visible
    assert "No file was changed" in result.visible
    assert (ws / "a.txt").read_text() == "a\n"


def test_parse_error_result(ws: Path) -> None:
    result = ApplyPatchTool().call(tool_call(patch="*** Begin Patch\n*** Nope\n*** End Patch"), env_for(ws))
    assert result.status is ToolStatus.ERROR and result.meta["stage"] == "parse"
    assert "is not a valid hunk header" in result.visible


def test_path_escape_is_an_error_result(ws: Path) -> None:
    result = ApplyPatchTool().call(tool_call(patch=patch("*** Add File: ../../evil.txt", "+x")), env_for(ws))
    assert result.status is ToolStatus.ERROR and "outside the workspace" in result.visible
    assert not (ws.parent / "evil.txt").exists()


def test_missing_patch_is_refused_by_check() -> None:
    with pytest.raises(ToolInputError, match="'patch' must be the patch text"):
        ApplyPatchTool().check({})
    ApplyPatchTool().check({"input": "*** Begin Patch\n*** End Patch"})


def test_cancelled_call_writes_nothing(ws: Path) -> None:
    env = env_for(ws)
    scope = env.cancel
    assert isinstance(scope, CancelScope)
    scope.cancel("interrupted")
    result = ApplyPatchTool().call(tool_call(patch=patch("*** Add File: n.txt", "+n")), env)
    assert result.status is ToolStatus.ABORTED and not (ws / "n.txt").exists()


def test_risk_subject_and_writes(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    (ws / "old.txt").write_text("o\n")
    text = patch("*** Update File: a.txt", "@@", "-a", "+b", "*** Update File: old.txt", "*** Move to: d/new.txt",
                 "*** Add File: c.txt", "+c")
    tool, env = ApplyPatchTool(), env_for(ws)
    assert tool.parallel is False
    assert tool.risk({"patch": text}) is Risk.WRITE
    assert tool.risk({"patch": patch("*** Delete File: a.txt")}) is Risk.DESTRUCTIVE
    assert tool.risk({"patch": "garbage"}) is Risk.WRITE
    expected = [ws / "a.txt", ws / "old.txt", ws / "d/new.txt", ws / "c.txt"]
    assert tool.subject({"patch": text}, env) == " ".join(str(p) for p in expected)
    assert tool.writes(tool_call(patch=text), env) == expected
    assert tool.writes(tool_call(patch="garbage"), env) == []
    described = tool.describe(tool_call(patch=text), env)
    assert described.risk is Risk.WRITE and described.subject.startswith(str(ws / "a.txt"))


def test_subject_keeps_an_unconfinable_path_as_written(ws: Path) -> None:
    tool = ApplyPatchTool()
    assert tool.subject({"patch": patch("*** Add File: ../x", "+x")}, env_for(ws)) == "../x"
    assert tool.writes(tool_call(patch=patch("*** Add File: ../x", "+x")), env_for(ws)) == []


def test_relative_paths_follow_cwd_and_workdir(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("a\n")
    text = patch("*** Update File: f.txt", "@@", "-a", "+b")
    assert ApplyPatchTool().call(tool_call(patch=text), env_for(ws, cwd=ws / "sub")).ok
    assert (ws / "sub/f.txt").read_text() == "b\n"
    rerouted = tool_call(patch=patch("*** Update File: f.txt", "@@", "-b", "+c"), workdir="sub")
    assert ApplyPatchTool().writes(rerouted, env_for(ws)) == [ws / "sub/f.txt"]
    assert ApplyPatchTool().call(rerouted, env_for(ws)).ok
    assert (ws / "sub/f.txt").read_text() == "c\n"
    escaped = ApplyPatchTool().call(tool_call(patch=text, workdir="/"), env_for(ws))
    assert escaped.status is ToolStatus.ERROR and "outside the workspace" in escaped.visible


def test_fuzzy_match_is_noted(ws: Path) -> None:
    (ws / "f.txt").write_text("value   \n")
    result = ApplyPatchTool().call(tool_call(patch=patch("*** Update File: f.txt", "@@", "-value", "+v")),
                                   env_for(ws))
    assert result.ok and "Note: f.txt patch line 3: lines found ignoring trailing whitespace." in result.visible
    assert result.meta["fuzz"]
