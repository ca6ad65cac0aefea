"""MCP prompts as ``/mcp__server__prompt args`` commands, against a real MCP server process
(tests/commands/servers/promptserver.py) through ``cox run -p`` and ``cox ext list``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cox.commands.expand import CommandError
from cox.commands.mcp_prompts import map_arguments
from tests.hooks.rig import Rig

from .test_commands_headless import turn_text

SERVER = Path(__file__).parent / "servers" / "promptserver.py"


def configure(rig: Rig) -> Path:
    got = rig.out / "got.jsonl"
    (rig.cox_home / "config.toml").write_text(
        f'[mcp.servers.p]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
        f'env = {{ COX_TEST_GOT = "{got}" }}\n')
    return got


def test_a_prompt_is_the_user_turn_with_its_arguments_mapped(rig: Rig) -> None:
    got = configure(rig)
    run = rig.run([{"text": "ok"}], '/mcp__p__review src/app.py focus="error handling"', mode="default")
    assert run.proc.returncode == 0, run.proc.stderr
    assert json.loads(got.read_text()) == {"file": "src/app.py", "focus": "error handling"}
    assert "Please review src/app.py, looking at error handling." in turn_text(run)
    run = rig.run([{"text": "ok"}], "/mcp__p__chat rust traits", mode="default")
    assert "[user]\\nTell me about rust traits.\\n\\n[assistant]\\nGladly." in turn_text(run)


def test_a_missing_required_argument_is_said_and_nothing_is_sent(rig: Rig) -> None:
    configure(rig)
    run = rig.run([{"text": "ok"}], "/mcp__p__review", mode="default")
    assert run.result["is_error"] and "needs file" in run.result["result"]
    assert run.requests == []


def test_a_project_server_not_trusted_gives_no_prompt(rig: Rig) -> None:
    got = rig.out / "got.jsonl"
    (rig.ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {
        "command": sys.executable, "args": [str(SERVER)], "env": {"COX_TEST_GOT": str(got)}}}}))
    run = rig.run([{"text": "ok"}], "/mcp__proj__review a.py", mode="default")
    assert not got.exists()
    assert run.result["is_error"] and "not trusted" in run.result["result"]


def test_ext_list_shows_the_prompt_commands(rig: Rig) -> None:
    configure(rig)
    out = rig.cox("ext", "list").stdout
    assert "/mcp__p__review <file> [focus] — Review one file  — mcp server p" in out
    assert "/mcp__p__chat <topic>" in out


def test_argument_mapping() -> None:
    spec = (("file", True), ("focus", False))
    assert map_arguments("x", spec, "a.py the whole thing") == {"file": "a.py", "focus": "the whole thing"}
    assert map_arguments("x", spec, "focus=speed a.py") == {"file": "a.py", "focus": "speed"}
    assert map_arguments("x", (("topic", False),), "") == {}
    with pytest.raises(CommandError, match="needs file"):
        map_arguments("x", spec, "focus=speed")
    with pytest.raises(CommandError, match="takes no arguments"):
        map_arguments("x", (), "extra")
