"""The file tools honour Read deny rules (issue 11, class 4): ``grep`` (both backends), ``glob``,
``ls`` and ``read`` never open, list or return what a rule denies — named explicitly (a clear
denial), found by a recursive search (skipped and counted), or reached through a symlink."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cox.actors.tools.base import ToolEnv
from cox.actors.tools.files import ReadTool
from cox.actors.tools.search import GlobTool, GrepTool, LsTool
from cox.policy.permission import Engine
from cox.protocol.types import ToolCall, ToolResult, ToolStatus
from cox.supervisors import CancelScope

MARK = "SECRET-MARK-42"
BACKENDS = ["python", pytest.param("rg", marks=pytest.mark.skipif(shutil.which("rg") is None, reason="no rg"))]


@pytest.fixture
def ws(tmp_path: Path) -> tuple[Path, Path]:
    home, root = tmp_path / "home", tmp_path / "ws"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"{MARK} ssh\n")
    root.mkdir()
    (root / ".env").write_text(f"TOKEN={MARK} env\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "prod.key").write_text(f"{MARK} key\n")
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("TOKEN = 'fine'\n")
    (root / "notes").symlink_to(home / ".ssh" / "id_rsa")
    (root / "keys").symlink_to(home / ".ssh")
    (root / "envlink").symlink_to(root / ".env")
    return home, root


def env_for(home: Path, root: Path, deny: tuple[str, ...] = ("Read(./.env)", "Read(./secrets/**)"),
            *, guard: bool = True) -> ToolEnv:
    e = Engine.compile([], [], deny, home=home, roots=[root])
    return ToolEnv(roots=[root], cwd=root, cancel=CancelScope(), home=home, reads=e.read_guard() if guard else None)


def run(tool: object, env: ToolEnv, **inp: object) -> ToolResult:
    assert hasattr(tool, "call")
    try:
        return tool.call(ToolCall(id="c", name="t", input=dict(inp)), env)  # type: ignore[attr-defined, no-any-return]
    except Exception as exc:  # a PathEscape is the call's error result in a session
        return ToolResult.error(str(exc))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("inp", [
    {"pattern": "SECRET"}, {"pattern": "MARK", "path": "."}, {"pattern": "TOKEN", "glob": "*"},
    {"pattern": ".", "files_with_matches": True}, {"pattern": "MARK", "path": "notes"},
    {"pattern": "MARK", "path": "keys"}, {"pattern": "MARK", "path": "keys/id_rsa"}, {"pattern": "MARK", "path": ".env"},
    {"pattern": "MARK", "path": "envlink"}, {"pattern": "MARK", "path": "secrets"},
    {"pattern": "MARK", "path": "secrets/prod.key"}, {"pattern": "MARK", "path": "./src/../.env"},
    {"pattern": "MARK", "context": 5}, {"pattern": "MARK", "case_insensitive": True, "glob": ".env"},
])
def test_grep_never_returns_a_denied_line(ws: tuple[Path, Path], backend: str, inp: dict[str, object]) -> None:
    home, root = ws
    res = run(GrepTool(backend), env_for(home, root), **inp)
    assert MARK not in res.visible, (inp, res.visible)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_recursive_search_says_how_many_it_skipped(ws: tuple[Path, Path], backend: str) -> None:
    home, root = ws
    res = run(GrepTool(backend), env_for(home, root), pattern="TOKEN")
    assert res.status is ToolStatus.OK
    assert "src/a.py" in res.visible and MARK not in res.visible
    assert "2 files skipped: a Read deny rule covers them" in res.visible
    assert res.meta["skipped_denied"] == 2


@pytest.mark.parametrize("path", [".env", "envlink", "secrets/prod.key", "secrets", "./src/../.env"])
def test_a_denied_path_named_explicitly_gets_a_clear_denial(ws: tuple[Path, Path], path: str) -> None:
    home, root = ws
    env = env_for(home, root)
    for tool, inp in ((GrepTool("python"), {"pattern": "x", "path": path}), (ReadTool(), {"path": path})):
        res = run(tool, env, **inp)
        assert res.status is ToolStatus.DENIED, (tool, path, res.visible)
        assert "Read(./" in res.visible and "denied" in res.visible and MARK not in res.visible


@pytest.mark.parametrize("path", ["notes", "keys/id_rsa", str(Path("~/.ssh/id_rsa"))])
def test_symlinks_out_of_the_workspace_do_not_leak(ws: tuple[Path, Path], path: str) -> None:
    home, root = ws
    env = env_for(home, root)
    for tool, inp in ((ReadTool(), {"path": path}), (GrepTool("python"), {"pattern": "MARK", "path": path}),
                      (LsTool(), {"path": path}), (GlobTool(), {"pattern": "*", "path": path})):
        res = run(tool, env, **inp)
        assert res.status is not ToolStatus.OK and MARK not in res.visible, (tool, path, res.visible)


def test_glob_and_ls_leave_denied_entries_out(ws: tuple[Path, Path]) -> None:
    home, root = ws
    env = env_for(home, root)
    res = run(GlobTool(), env, pattern="**/*")
    assert ".env" not in res.visible.split("\n") and "secrets/prod.key" not in res.visible
    assert "src/a.py" in res.visible and "skipped: a Read deny rule covers them" in res.visible
    res = run(GlobTool(), env, pattern="secrets/*")
    assert res.status is ToolStatus.DENIED
    res = run(LsTool(), env)
    listed = res.visible.splitlines()
    assert ".env" not in listed and "secrets/" not in listed and "envlink@" not in listed and "src/" in listed
    assert "notes@" not in listed  # its target is a denied path
    assert "entries left out: a Read deny rule covers them" in res.visible
    assert run(LsTool(), env, path="secrets").status is ToolStatus.DENIED


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_workspace_that_is_the_home_folder_keeps_the_built_in_rules(tmp_path: Path, backend: str) -> None:
    home = tmp_path / "me"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"{MARK}\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"{MARK}\n")
    (home / "todo.txt").write_text(f"not {MARK[:6]} but fine\n")
    for guard in (True, False):  # without the session's rules a tool still has cox's built-in ones
        env = env_for(home, home, deny=(), guard=guard)
        res = run(GrepTool(backend), env, pattern="SECRET")
        assert MARK not in res.visible and "todo.txt" in res.visible
        assert MARK not in run(ReadTool(), env, path=".ssh/id_rsa").visible
        assert ".ssh/id_rsa" not in run(GlobTool(), env, pattern="**/*").visible
        assert run(LsTool(), env, path=".ssh").status is ToolStatus.DENIED


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not on PATH")
def test_a_tracked_file_under_a_folder_swapped_for_a_symlink_is_not_searched(ws: tuple[Path, Path], backend: str) -> None:
    home, root = ws
    (root / "a").mkdir()
    (root / "a" / "id_rsa").write_text("harmless\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "a/id_rsa", "src/a.py"], cwd=root, check=True)
    shutil.rmtree(root / "a")
    (root / "a").symlink_to(home / ".ssh")  # the index still lists a/id_rsa
    for guard in (True, False):
        res = run(GrepTool(backend), env_for(home, root, deny=(), guard=guard), pattern="MARK")
        assert f"{MARK} ssh" not in res.visible and f"{MARK} env" in res.visible  # .env is not denied here
        assert "1 file skipped: it leads outside the workspace" in res.visible


def test_edit_and_apply_patch_do_not_show_a_denied_file(ws: tuple[Path, Path]) -> None:
    """Both read what they change (a miss lists the nearest lines, a hit shows a diff)."""
    from cox.actors.tools.apply_patch import ApplyPatchTool
    from cox.actors.tools.edit import EditTool

    home, root = ws
    env = env_for(home, root)
    res = run(EditTool(), env, path=".env", old_string="TOKEN=SECRET", new_string="x")
    assert res.status is ToolStatus.DENIED and MARK not in res.visible
    patch = "*** Begin Patch\n*** Update File: .env\n@@\n-TOKEN=nothing\n+TOKEN=x\n*** End Patch\n"
    res = run(ApplyPatchTool(), env, patch=patch)
    assert res.status is not ToolStatus.OK and MARK not in res.visible and "Read deny rule" in res.visible
    assert MARK in (root / ".env").read_text()  # nothing was changed either
    res = run(EditTool(), env, path="src/a.py", old_string="fine", new_string="good")
    assert res.status is ToolStatus.OK  # other files still edit


def test_cox_mcp_serve_tools_honour_the_users_read_rules(tmp_path: Path) -> None:
    """``cox mcp serve`` hands the same tools to another client: its engine's guard goes with them."""
    import os

    from tests.mcp.test_mcp_serve import run as serve_run
    from tests.mcp.test_mcp_serve import text

    cox_home = Path(os.environ["COX_HOME"])
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text('[permissions]\ndeny = ["Read(./.env)"]\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text(f"TOKEN={MARK}\n")
    (ws / "a.txt").write_text("TOKEN=fine\n")

    async def body(s: object) -> list[object]:
        return [await s.call_tool("grep", {"pattern": "TOKEN"}), await s.call_tool("glob", {"pattern": "*"}),  # type: ignore[attr-defined]
                await s.call_tool("ls", {})]  # type: ignore[attr-defined]

    said = [text(r) for r in serve_run(ws, body)]  # type: ignore[arg-type]
    assert all(MARK not in t for t in said), said
    assert "a.txt" in said[0] and "1 file skipped: a Read deny rule covers it" in said[0]
    assert ".env" not in said[2].splitlines()
