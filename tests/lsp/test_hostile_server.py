"""Servers that misbehave: one that dies mid-call (started again once), one that never reports
(the deadline's note), and a hostile one whose WorkspaceEdit tries to write where it must not —
refused whole, with nothing on disk changed. The fake server is ``fake_server.py``; one process
serves every hostile edit of the module (it reads the edit from a file at each rename)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cox.actors.tools.diagnostics import DiagnosticsTool
from cox.actors.tools.rename_symbol import RenameSymbolTool
from cox.protocol.types import ToolStatus
from cox.supervisors import shutdown

from .conftest import call, env_of, fake, make_pool


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    base = tmp_path_factory.mktemp("hostile")
    ws = base / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("value = 1\nprint(value)\n")
    (ws / "b.py").write_text("from a import value\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (base / "outside.py").write_text("value = 2\n")
    edit_file = base / "edit.json"
    edit_file.write_text("{}")
    pool = make_pool(ws, fake("hostile", str(edit_file)), quiet_ms=0)
    env = env_of(ws, pool, approve_writes=lambda call_id, files, cancel: None)  # a session that allows all
    assert call(DiagnosticsTool(), env, path="a.py").status is ToolStatus.OK  # starts the server
    yield base, env
    pool.close()
    shutdown()


def _tree(base: Path) -> dict[str, str]:
    return {str(p.relative_to(base)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(base.rglob("*")) if p.is_file() and p.name != "edit.json"}


def _edit(uri: str, start: tuple[int, int], end: tuple[int, int], text: str = "renamed") -> dict[str, Any]:
    return {"uri": uri, "edits": [{"range": {"start": {"line": start[0], "character": start[1]},
                                             "end": {"line": end[0], "character": end[1]}}, "newText": text}]}


def _changes(*pairs: tuple[str, list[Any]]) -> dict[str, Any]:
    return {"changes": {uri: edits for uri, edits in pairs}}


def _one(line: int, a: int, b: int, text: str = "renamed") -> dict[str, Any]:
    return {"range": {"start": {"line": line, "character": a}, "end": {"line": line, "character": b}}, "newText": text}


ROOT = "$ROOT"
HOSTILE: dict[str, Any] = {
    "outside the roots": _changes((f"{ROOT}/a.py", [_one(0, 0, 5)]), (f"{ROOT}/../outside.py", [_one(0, 0, 5)])),
    "into .git": _changes((f"{ROOT}/a.py", [_one(0, 0, 5)]), (f"{ROOT}/.git/config", [_one(0, 0, 6, "[x]")])),
    "creates a file": {"documentChanges": [
        {"textDocument": {"uri": f"{ROOT}/a.py", "version": 1}, "edits": [_one(0, 0, 5)]},
        {"kind": "create", "uri": f"{ROOT}/new.py"}]},
    "deletes a file": {"documentChanges": [
        {"textDocument": {"uri": f"{ROOT}/a.py", "version": 1}, "edits": [_one(0, 0, 5)]},
        {"kind": "delete", "uri": f"{ROOT}/b.py"}]},
    "renames a file": {"documentChanges": [{"kind": "rename", "oldUri": f"{ROOT}/b.py", "newUri": f"{ROOT}/c.py"}]},
    "overlapping edits": _changes((f"{ROOT}/a.py", [_one(0, 0, 5), _one(0, 3, 8)])),
    "an edit past the end": _changes((f"{ROOT}/a.py", [_one(0, 0, 5)]), (f"{ROOT}/b.py", [_one(40, 0, 1)])),
    "a stale version": {"documentChanges": [
        {"textDocument": {"uri": f"{ROOT}/a.py", "version": 7}, "edits": [_one(0, 0, 5)]}]},
    "not a file URI": _changes((f"{ROOT}/a.py", [_one(0, 0, 5)]), ("https://example.invalid/x.py", [_one(0, 0, 1)])),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_workspace_edit_is_refused_whole(hostile: tuple[Path, Any], case: str) -> None:
    base, env = hostile
    (base / "edit.json").write_text(json.dumps(HOSTILE[case]))
    before = _tree(base)
    result = call(RenameSymbolTool(), env, path="a.py", line=1, col=1, new_name="renamed")
    assert result.status is ToolStatus.ERROR, result.visible
    assert "refused whole" in result.visible and "nothing was changed" in result.visible
    assert _tree(base) == before  # not one byte moved, in the workspace or beside it
    assert not (base / "ws" / "new.py").exists()


def test_a_well_formed_edit_from_the_same_server_is_applied(hostile: tuple[Path, Any]) -> None:
    """The control: the refusals above are the checks, not a rename that never works."""
    base, env = hostile
    (base / "edit.json").write_text(json.dumps(_changes((f"{ROOT}/a.py", [_one(0, 0, 5, "total"), _one(1, 6, 11, "total")]),
                                                        (f"{ROOT}/b.py", [_one(0, 14, 19, "total")]))))
    result = call(RenameSymbolTool(), env, path="a.py", line=1, col=1, new_name="total")
    assert result.status is ToolStatus.OK, result.visible
    assert (base / "ws" / "a.py").read_text() == "total = 1\nprint(total)\n"
    assert (base / "ws" / "b.py").read_text() == "from a import total\n"
    assert "2 files" in result.visible


def test_a_server_that_dies_mid_call_is_started_again_once(tmp_path: Path) -> None:
    marker = tmp_path / "died"
    (tmp_path / "a.py").write_text("x = 1\n")
    pool = make_pool(tmp_path, fake("die-once", str(marker)), quiet_ms=0)
    try:
        result = call(DiagnosticsTool(), env_of(tmp_path, pool), path="a.py")
        assert marker.exists()  # the first process died while the call waited on it
        assert result.status is ToolStatus.OK, result.visible
        assert "a.py:1:1: error: fake error here [fake E1]" in result.visible  # the escape is gone
        assert "1 error" in result.visible
    finally:
        pool.close()
        shutdown()


def test_a_server_with_diagnostic_provider_is_asked_instead(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    pool = make_pool(tmp_path, fake("pull"), quiet_ms=60_000)  # a push wait would not end in time
    try:
        result = call(DiagnosticsTool(), env_of(tmp_path, pool), path="a.py", wait_ms=20_000)
        assert result.visible.splitlines() == ["a.py:1:3: warning: asked, not pushed [pulled]", "a.py: 1 warning"]
    finally:
        pool.close()
        shutdown()


def test_a_server_that_keeps_dying_is_started_again_only_once_per_call(tmp_path: Path) -> None:
    counter = tmp_path / "starts"
    (tmp_path / "a.py").write_text("x = 1\n")
    pool = make_pool(tmp_path, fake("die-always", str(counter)), quiet_ms=0)
    try:
        result = call(DiagnosticsTool(), env_of(tmp_path, pool), path="a.py")
        assert result.status is ToolStatus.ERROR and "exited" in result.visible, result.visible
        assert counter.read_text().count("started") == 2  # the first start and one restart, no more
    finally:
        pool.close()
        shutdown()


def test_a_server_that_never_reports_ends_at_the_deadline_and_adds_nothing_to_an_edit(tmp_path: Path) -> None:
    from cox.actors.tools.edit import EditTool

    (tmp_path / "a.py").write_text("x = 1\n")
    pool = make_pool(tmp_path, fake("silent"), quiet_ms=0, after_edit=True, after_edit_ms=200)
    try:
        result = call(DiagnosticsTool(), env_of(tmp_path, pool), path="a.py", wait_ms=300)
        assert result.status is ToolStatus.OK, result.visible
        assert "had not finished within 300 ms" in result.visible
        edited = call(EditTool(), env_of(tmp_path, pool), path="a.py", old_string="x = 1", new_string="x = 2")
        assert edited.status is ToolStatus.OK and "new diagnostics" not in edited.visible  # a slow server adds nothing
        assert (tmp_path / "a.py").read_text() == "x = 2\n"
        # an interrupt ends a long wait at once, not at lsp.timeout_s
        import threading

        from cox.actors.lsp.server import uri_of

        pool.settings = replace(pool.settings, timeout_s=600.0)
        env = env_of(tmp_path, pool)
        (tmp_path / "a.py").write_text("x = 3\n")
        out: list[Any] = []
        worker = threading.Thread(target=lambda: out.append(call(DiagnosticsTool(), env, path="a.py")))
        worker.start()
        server = pool.running("python")
        deadline = time.monotonic() + 60
        while server.docs.get(uri_of(tmp_path / "a.py"), (0, ""))[1] != "x = 3\n" and time.monotonic() < deadline:
            time.sleep(0.01)  # until the call has synced the new text and waits
        env.cancel.cancel()
        worker.join(60)
        assert not worker.is_alive() and out and "had not finished" in out[0].visible
    finally:
        pool.close()
        shutdown()


def test_a_file_that_changes_while_the_approval_waits_refuses_the_rename(hostile: tuple[Path, Any]) -> None:
    base, env = hostile
    ws = base / "ws"
    (base / "edit.json").write_text(json.dumps(_changes((f"{ROOT}/a.py", [_one(0, 0, 1, "Z")]),
                                                        (f"{ROOT}/b.py", [_one(0, 0, 1, "Z")]))))

    def approve_while_someone_edits(call_id: str, files: list[Path], cancel: Any) -> None:
        (ws / "b.py").write_text("# changed by someone else\n")
        return None

    moving = replace(env, services=replace(env.services, approve_writes=approve_while_someone_edits))
    a_before = (ws / "a.py").read_text()
    result = call(RenameSymbolTool(), moving, path="a.py", line=1, col=1, new_name="Z")
    assert result.status is ToolStatus.ERROR and "changed on disk while the rename waited" in result.visible
    assert (ws / "a.py").read_text() == a_before and (ws / "b.py").read_text() == "# changed by someone else\n"


def test_rename_is_refused_where_no_session_can_judge_the_files(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    result = call(RenameSymbolTool(), env_of(tmp_path, None), path="a.py", line=1, col=1, new_name="y")
    assert result.status is ToolStatus.DENIED and "no session can judge" in result.visible
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


def test_definition_prints_a_location_outside_the_roots_and_never_opens_it(hostile: tuple[Path, Any]) -> None:
    from cox.actors.tools.navigate import DefinitionTool

    base, env = hostile
    (base / "outside.py").write_text("SECRET_TOKEN = 1\n")
    here = {"line": 1, "character": 0}
    (base / "edit.json").write_text(json.dumps([
        {"uri": f"{ROOT}/../outside.py", "range": {"start": {"line": 0, "character": 0}, "end": here}},
        {"uri": f"{ROOT}/a.py", "range": {"start": here, "end": here}},
        {"uri": f"{ROOT}/a.py", "range": {"start": here, "end": here}},  # a duplicate
        {"uri": "file:///etc/\u001b]0;pwned\u0007passwd", "range": {"start": here, "end": here}},
    ]))
    result = call(DefinitionTool(), env, path="a.py", line=2, col=7)
    assert result.status is ToolStatus.OK, result.visible
    rows = result.visible.splitlines()
    assert len(rows) == 3 and any(r.startswith("a.py:2:1: print(") for r in rows), rows  # sorted, deduplicated
    assert "SECRET_TOKEN" not in result.visible and "(outside the workspace or denied: not opened)" in result.visible
    assert "\x1b" not in result.visible and "\x07" not in result.visible  # sanitised
