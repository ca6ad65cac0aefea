"""``cox config show`` through a throwaway argparse parser, as the ``cox`` entry point wires it."""

from __future__ import annotations

import argparse
import io
import json
from typing import TYPE_CHECKING

from cox.surfaces import config_cli

if TYPE_CHECKING:
    from tests.config.conftest import Env


def _run(cfg: Env, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="cox")
    parser.add_argument("--cwd")
    parser.add_argument("--model")
    parser.add_argument("--max-turns", type=int)
    subparsers = parser.add_subparsers(dest="command")
    config_cli.add_parser(subparsers)
    args = parser.parse_args(["--cwd", str(cfg.ws), *argv])
    out, err = io.StringIO(), io.StringIO()
    code = config_cli.run(args, stdout=out, stderr=err)
    assert args.func is config_cli.run
    return code, out.getvalue(), err.getvalue()


def test_show_prints_every_key(cfg: Env) -> None:
    cfg.user('[core]\nmodel = "gpt-5"\n[mcp.servers.gh]\ncommand = "gh"\nenv = { TOKEN = "t" }\n')
    code, out, err = _run(cfg, "config", "show")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert 'core.model = "gpt-5"' in lines
    assert "core.max_turns = 50" in lines
    assert "sandbox.network = false" in lines
    assert 'permissions.mode = "default"' in lines
    assert "permissions.allow = []" in lines
    assert "budget.session_usd = (unset)" in lines
    assert 'mcp.servers.gh.env = { TOKEN = "t" }' in lines
    assert "lsp.servers = {}" in lines and "hooks = {}" in lines
    assert "#" not in out


def test_config_alone_means_show(cfg: Env) -> None:
    code, out, _ = _run(cfg, "config")
    assert code == 0 and 'core.model = "claude-sonnet-4-5"' in out


def test_show_sources(cfg: Env) -> None:
    user = cfg.user('[core]\nmodel = "gpt-5"\n[permissions]\ndeny = [\n  "Bash(rm:*)",\n]\n')
    project = cfg.project('[permissions]\ndeny = ["Read(.env)"]\n')
    code, out, _ = _run(cfg, "--model", "opus", "--max-turns", "3", "config", "show", "--sources")
    assert code == 0
    lines = out.splitlines()
    assert 'core.model = "opus"  # from flag:--model' in lines
    assert "core.max_turns = 3  # from flag:--max-turns" in lines
    assert 'core.provider = "auto"  # from default' in lines
    start = lines.index(f"permissions.deny = [  # from {user}:4, {project}:2")
    assert lines[start + 1 : start + 4] == [
        f'  "Bash(rm:*)",  # from {user}:5',
        f'  "Read(.env)",  # from {project}:2',
        "]",
    ]


def test_show_json(cfg: Env) -> None:
    cfg.user('[core]\nmodel = "gpt-5"\n[permissions]\ndeny = ["Bash(rm:*)"]\n')
    code, out, _ = _run(cfg, "config", "show", "--json")
    data = json.loads(out)
    assert code == 0 and set(data) == {"config"}
    assert data["config"]["core"]["model"] == "gpt-5"
    code, out, _ = _run(cfg, "config", "show", "--json", "--sources")
    data = json.loads(out)
    assert data["sources"]["core.model"] == f"{cfg.user_file}:2"
    assert data["origins"] == {"Bash(rm:*)": f"{cfg.user_file}:4"}


def test_warnings_go_to_stderr(cfg: Env) -> None:
    project = cfg.project('[permissions]\nallow = ["Bash"]\n')
    code, out, err = _run(cfg, "config", "show")
    assert code == 0 and "permissions.allow = []" in out
    assert err.startswith(f"cox: warning: {project}:2: ignored permissions.allow:")


def test_config_error_exits_2_with_one_line(cfg: Env) -> None:
    path = cfg.user("[core]\nmodle = 1\n")
    code, out, err = _run(cfg, "config", "show")
    assert code == 2 and out == ""
    assert err == f"cox: config error: {path}:2: unknown key 'core.modle'; did you mean 'core.model'?\n"


def test_control_characters_from_a_file_are_escaped(cfg: Env) -> None:
    cfg.user('[core]\nmodel = "a\\u001b[31mb\\u202ec"\n')
    _, out, _ = _run(cfg, "config", "show")
    assert "\x1b" not in out and "\u202e" not in out
    assert 'core.model = "a\\u001b[31mb\\u202ec"' in out.splitlines()


def test_show_sources_names_claude_files_and_lists_what_was_ignored(cfg: Env) -> None:
    user = cfg.claude_user('{\n  "permissions": {\n    "deny": ["Read(./secret.txt)"]\n  }\n}\n')
    shared = cfg.claude_project('{"permissions": {\n  "allow": ["Bash(touch:*)"],\n  "ask": ["Bash(git push:*)"]}}')
    project = cfg.project('[core]\nscript = "evil.json"\n')
    code, out, err = _run(cfg, "config", "show", "--sources")
    assert code == 0
    lines = out.splitlines()
    assert f'  "Read(./secret.txt)",  # from {user}:3' in lines
    assert f'  "Bash(git push:*)",  # from {shared}:3' in lines
    assert 'core.script = ""  # from default' in lines
    assert f"# files read: {user}, {project}, {shared}" in lines
    ignored = [line for line in lines if line.startswith("# ignored: ")]
    assert [line.split(": ignored ")[0] for line in ignored] == [f"# ignored: {project}:2", f"# ignored: {shared}:2"]
    assert err.count("cox: warning: ") == 2
    code, out, _ = _run(cfg, "config", "show", "--json", "--sources")
    data = json.loads(out)
    assert data["origins"]["Read(./secret.txt)"] == f"{user}:3" and len(data["warnings"]) == 2
    assert data["files"] == [str(user), str(project), str(shared)]
