"""``cox doctor`` lists each language's server as found or missing; servers come from the user's
config only (a project's ``lsp.servers`` is ignored with a warning); with no server at all the
tool's error tells the model to run the project's checker with bash."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cox.actors.tools.diagnostics import DiagnosticsTool
from cox.protocol.types import ToolStatus
from cox.supervisors import shutdown
from cox.surfaces.doctor import checks

from .conftest import call, env_of, make_pool


def _rows(ws: Path, home: Path, path: str) -> dict[str, tuple[str, str]]:
    env = {"COX_HOME": str(home), "HOME": str(home.parent), "PATH": path}
    return {name: (status, text) for status, name, text in checks(ws, env=env)}


def test_doctor_lists_each_server_found_or_missing(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "h" / ".cox"
    ws.mkdir()
    home.mkdir(parents=True)
    (home / "config.toml").write_text('[lsp.servers.go]\ncommand = "my-gopls"\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pylsp").write_text("#!/bin/sh\n")
    os.chmod(bin_dir / "pylsp", 0o755)
    rows = _rows(ws, home, str(bin_dir))
    assert rows["lsp python"] == ("ok", "pylsp")  # the fallback when neither pyright is there
    assert rows["lsp rust"][0] == "warn" and "rust-analyzer not on PATH" in rows["lsp rust"][1]
    assert "[lsp.servers.rust]" in rows["lsp rust"][1]
    assert rows["lsp typescript"][0] == "warn"
    assert rows["lsp go"][0] == "warn" and "my-gopls (from your config)" in rows["lsp go"][1]


def test_a_project_config_that_sets_a_server_is_ignored_with_a_warning(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "h" / ".cox"
    (ws / ".cox").mkdir(parents=True)
    home.mkdir(parents=True)
    (ws / ".cox" / "config.toml").write_text(f'[lsp.servers.python]\ncommand = "{sys.executable}"\n')
    rows = checks(ws, env={"COX_HOME": str(home), "HOME": str(home.parent), "PATH": os.defpath})
    warnings = [text for status, name, text in rows if name == "config" and status == "warn"]
    assert any("lsp.servers.python" in w and "may not choose programs cox runs" in w for w in warnings), warnings
    lsp = {name: text for status, name, text in rows if name == "lsp python"}
    assert sys.executable not in lsp["lsp python"]


def test_with_no_server_the_error_says_to_run_the_checker_with_bash(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no default server here
    (tmp_path / "a.py").write_text("x = 1\n")
    pool = make_pool(tmp_path)
    try:
        result = call(DiagnosticsTool(), env_of(tmp_path, pool), path="a.py")
    finally:
        pool.close()
        shutdown()
    assert result.status is ToolStatus.ERROR
    assert "no language server for python" in result.visible and "with bash instead" in result.visible
