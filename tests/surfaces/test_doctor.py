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


def test_a_permission_rule_that_does_not_parse_fails_with_the_fix(tmp_path: Path):
    """Every session refuses to start over it (``config error: bad permission rule …``), so the
    doctor may not say ``ok``: the row names the rule, its file and line, and the fix."""
    (tmp_path / ".cox").mkdir()
    (tmp_path / ".cox" / "config.toml").write_text('[permissions]\ndeny = ["Bash(rm -rf"]\n')
    rows = checks(tmp_path, env={"COX_HOME": str(tmp_path / "h"), "HOME": str(tmp_path)})
    status, text = next((s, t) for s, n, t in rows if n == "permissions")
    assert status == "fail"
    assert "'Bash(rm -rf'" in text and f"{tmp_path / '.cox' / 'config.toml'}:2" in text
    assert "fixed or removed" in text and "Bash(npm test:*)" in text


def test_good_rules_are_ok(tmp_path: Path):
    (tmp_path / ".cox").mkdir()
    (tmp_path / ".cox" / "config.toml").write_text('[permissions]\ndeny = ["Bash(rm -rf:*)"]\n')
    rows = checks(tmp_path, env={"COX_HOME": str(tmp_path / "h"), "HOME": str(tmp_path)})
    status, text = next((s, t) for s, n, t in rows if n == "permissions")
    assert status == "ok" and "1 deny" in text


def test_a_server_whose_tools_all_wait_for_trust_is_a_warning_with_the_fix(tmp_path: Path, cox_home: Path):
    import json
    import sys

    from cox.actors.mcp.config import load_servers
    from cox.actors.mcp.trust import TRUST_FILE, TrustStore
    from cox.config.loader import load_config

    server = Path(__file__).parents[1] / "mcp" / "servers" / "testserver.py"
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"p": {"command": sys.executable,
                                                                          "args": [str(server)]}}}))
    spec = load_servers(load_config(tmp_path, cox_home=cox_home).mcp, tmp_path)["p"]
    TrustStore(cox_home / TRUST_FILE).accept_launch(spec, tmp_path)  # its launch, not its tools
    rows = checks(tmp_path, env={"COX_HOME": str(cox_home), "HOME": str(tmp_path)})
    status, text = next((s, t) for s, n, t in rows if n == "mcp p")
    assert status == "warn", text
    assert "none of its 7 tools reaches the model: all are pending trust" in text and "run: cox mcp trust p" in text
