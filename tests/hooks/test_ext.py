"""`cox ext list`: every hook, instruction file, MCP server and command in effect, with its source."""

from __future__ import annotations

import json

from cox.surfaces.ext_cli import COMMANDS

from .rig import Rig, one


def test_ext_list_shows_each_extension_and_its_source(rig: Rig) -> None:
    rig.hooks({"PreToolUse": one("./guard.sh", "Bash")})
    (rig.ws / "AGENTS.md").write_text("use tabs\n")
    (rig.ws / ".claude").mkdir()
    (rig.ws / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo \x1b[2J"}]}]}}))
    (rig.ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "./db-mcp"}}}))
    p = rig.cox("ext", "list")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert f"PreToolUse Bash: ./guard.sh  — {rig.cox_home / 'config.toml'} [hooks]" in out
    assert f"not trusted, not run: {rig.ws / '.claude' / 'settings.json'}" in out
    assert f"AGENTS.md: {rig.ws / 'AGENTS.md'}" in out
    assert f"db (project): ./db-mcp  — {rig.ws / '.mcp.json'}" in out
    assert "/compact" in out and "\x1b" not in out


def test_the_command_list_is_the_tuis() -> None:
    """One list (``cox.commands.files.BUILTIN``): what ext list shows, what the TUI completes,
    what its /help names, and what no command file may take."""
    from cox.commands.files import RESERVED
    from cox.surfaces.tui.app import COMMANDS as TUI
    from cox.surfaces.tui.app import HELP

    assert COMMANDS == TUI
    assert all(f"/{name}" in HELP for name in TUI) and set(TUI) <= set(RESERVED)
