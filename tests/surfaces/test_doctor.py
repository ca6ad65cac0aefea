"""cox doctor reports each check with its fix, and fails only when a session cannot run."""

from __future__ import annotations

from pathlib import Path

from cox.surfaces.doctor import checks


def test_rows_name_what_is_missing(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    rows = {name: (status, text) for status, name, text in checks(tmp_path)}
    assert rows["model keys"] == ("ok", "OPENAI_API_KEY set")
    assert rows["config"][0] == "ok"
    assert rows["sandbox"][0] in ("ok", "warn") and rows["checkpoints"][0] in ("ok", "warn")


def test_missing_tools_are_warnings_with_fixes(tmp_path: Path, monkeypatch):
    from cox.actors.tools import shell_env

    shell_env.reset_for_tests()
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, git or rg here
    try:
        rows = {name: (status, text) for status, name, text in checks(tmp_path, env={"COX_HOME": str(tmp_path / "h")})}
    finally:
        shell_env.reset_for_tests()
    assert rows["sandbox"][0] == "warn" and "bubblewrap" in rows["sandbox"][1]
    assert rows["checkpoints"][0] == "warn" and "git" in rows["checkpoints"][1]
    assert rows["ripgrep"][0] == "warn"
    assert rows["model keys"][0] == "warn"


def test_bad_config_fails(tmp_path: Path):
    (tmp_path / ".cox").mkdir()
    (tmp_path / ".cox" / "config.toml").write_text("[core\n")
    rows = checks(tmp_path, env={"COX_HOME": str(tmp_path / "h")})
    assert ("fail", "config") == next((s, n) for s, n, _ in rows if n == "config")
