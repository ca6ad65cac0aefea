"""The LSP tools in a real session with a real server (basedpyright, as the project's set-up
installs it): the first diagnostics call asks (it starts a server), later ones do not;
after_edit reports the error an edit introduced and nothing for the edit that fixed it;
definition and references across files; a rename across three files with one approval; a
rename refused because one file is denied; and no server process outlives its session."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from cox.actors.lsp.pool import LspSettings
from cox.actors.tools.navigate import DefinitionTool, ReferencesTool
from cox.actors.tools.registry import builtin_tools
from cox.actors.tools.rename_symbol import RenameSymbolTool
from cox.protocol import messages as m
from cox.protocol.types import Decision
from cox.supervisors.registry import registry
from cox.surfaces.runtime import App
from tests.harness import run_session

from .conftest import need

pytestmark = pytest.mark.usefixtures("servers_on_path")

A = "def area(w: int, h: int) -> int:\n    return w * h\n\n\ndef helper() -> int:\n    return 1\n"
B = "from a import area\n\nsize = area(2, 3)\n"
C = "from a import area\nfrom b import size\n\nboth = area(size, 1)\n"
D = "from a import helper\n\nONE = helper()\n"


def _project(ws: Path) -> None:
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "a.py").write_text(A)
    (ws / "b.py").write_text(B)
    (ws / "c.py").write_text(C)
    (ws / "d.py").write_text(D)


def _tools() -> dict[str, Any]:
    tools = builtin_tools()
    for t in (DefinitionTool(), ReferencesTool(), RenameSymbolTool()):
        tools[t.name] = t
    return tools


def _reply(i: int, name: str, **input: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": f"t{i}", "name": name, "input": input}]}


def _tree(pid: int) -> set[int]:
    """``pid`` and every process below it, now."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, todo = {pid}, [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p and c not in found]
        found.update(kids)
        todo.extend(kids)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _approve_all(approvals: list[Any], servers: list[set[int]] | None = None) -> Any:
    def react(event: Any, handle: Any, run: Any) -> None:
        if servers is not None and event.type == "tool_call_done" and event.call_id == "t1":
            ref = registry.whereis(f"root/lsp/{handle.session_id}:python")
            assert ref is not None
            server, _ = ref.ask("get", timeout=5)
            servers.append(_tree(server.pid))
        if event.type == "approval_required":
            approvals.append(event)
            handle.submit(m.Approve(call_id=event.call.id, decision=Decision.ALLOW))
    return react


def _results(run: Any) -> dict[str, Any]:
    return {e.call_id: e.result for e in run.of("tool_call_done")}


def test_diagnostics_after_edit_navigation_and_a_three_file_rename(tmp_path: Path) -> None:
    need("basedpyright-langserver")
    ws, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir()
    _project(ws)
    replies = [
        _reply(1, "diagnostics", path="a.py"),
        _reply(2, "edit", path="b.py", old_string="area(2, 3)", new_string='area("2", 3)'),
        _reply(3, "edit", path="b.py", old_string='area("2", 3)', new_string="area(2, 3)"),
        _reply(4, "diagnostics", path="b.py"),
        _reply(5, "definition", path="c.py", line=4, col=8),
        _reply(6, "references", path="a.py", line=1, col=5),
        _reply(7, "rename_symbol", path="a.py", line=1, col=5, new_name="surface"),
        _reply(8, "rename_symbol", path="a.py", line=5, col=5, new_name="assist"),  # d.py is denied
        {"text": "done"},
    ]
    approvals: list[Any] = []
    servers: list[set[int]] = []
    settings = LspSettings(quiet_ms=300, after_edit=True, after_edit_ms=20000)
    app = App(home / ".cox")
    try:
        run = run_session(ws, home, replies, "go", react=_approve_all(approvals, servers), tools=_tools(),
                          deny=["Edit(d.py)"], lsp=settings, app=app)
        assert run.handle is not None
        run.handle.shutdown()  # the session ends; the application tree (and its lsp supervisor) lives on
        # invariant 8: the server (bwrap, the launcher, node) ended with the session
        assert len(servers) == 1 and len(servers[0]) >= 2, servers
        assert [p for p in servers[0] if _alive(p)] == []
        assert app.root.whereis("lsp") is not None
    finally:
        app.close()
    results = _results(run)
    for i in range(1, 8):
        assert results[f"t{i}"].status.value == "ok", (i, results[f"t{i}"].visible)
    asked = [(a.call.id, a.call.name) for a in approvals]
    # diagnostics asked once (it started the server), each edit once, the rename once for its set
    assert asked == [("t1", "diagnostics"), ("t2", "edit"), ("t3", "edit"), ("t7/files", "rename_symbol")], asked
    assert sorted(Path(f).name for f in approvals[-1].call.input["files"]) == ["a.py", "b.py", "c.py"]
    assert results["t1"].visible.endswith("a.py: no diagnostics")
    introduced = results["t2"].visible
    assert "new diagnostics from this change:" in introduced
    assert "b.py:3:13: error:" in introduced and "reportArgumentType" in introduced
    assert "new diagnostics" not in results["t3"].visible  # the fix introduced nothing
    assert "b.py: no diagnostics" in results["t4"].visible
    assert results["t5"].visible.splitlines() == ["a.py:1:5: def area(w: int, h: int) -> int:"]
    refs = results["t6"].visible.splitlines()
    assert {r.split(":")[0] for r in refs} == {"a.py", "b.py", "c.py"} and len(refs) == len(set(refs)) >= 5
    assert "(no server" not in results["t6"].visible
    assert "renamed to surface in 3 files" in results["t7"].visible
    assert (ws / "a.py").read_text() == A.replace("area", "surface")
    assert (ws / "b.py").read_text() == B.replace("area", "surface")
    assert (ws / "c.py").read_text() == C.replace("area", "surface")
    # the second rename would touch a.py and d.py, which a deny rule covers: refused whole, nobody asked
    refused = results["t8"]
    assert refused.status.value == "denied", refused.visible
    assert "d.py" in refused.visible and "Edit(d.py)" in refused.visible and "nothing was changed" in refused.visible
    assert "helper" in (ws / "a.py").read_text() and (ws / "d.py").read_text() == D


def test_no_server_means_a_grep_fallback_with_a_note(tmp_path: Path) -> None:
    from .conftest import call, env_of, make_pool

    _project(tmp_path)
    pool = make_pool(tmp_path)  # nothing started: definition never starts a server
    result = call(DefinitionTool(), env_of(tmp_path, pool), path="c.py", line=4, col=8)
    lines = result.visible.splitlines()
    assert lines[0] == "a.py:1:5: def area(w: int, h: int) -> int:" and len(lines) == 2
    assert "(no server" in lines[1] and "name matches of 'area'" in lines[1]
    assert pool.running("python") is None
    assert shutil.which("true")
