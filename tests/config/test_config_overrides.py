"""The command line's own config layers: ``cox exec -c KEY=VALUE`` (``overrides``), Claude Code's
``--settings`` (``settings``) and ``--setting-sources`` (``claude_sources``) — where each sits
among the layers, and that the person's command line is trusted like their user file."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from cox.config import ConfigError, load_config
from cox.protocol.types import PermissionMode, SandboxMode

if TYPE_CHECKING:
    from tests.config.conftest import Env


def _load(cfg: Env, **kw):  # type: ignore[no-untyped-def]
    env = kw.pop("env", {})
    return load_config(cfg.ws, cox_home=cfg.home, env=env, user_home=cfg.user_home, **kw)


def test_c_sits_above_the_files_and_the_environment_and_below_the_named_flags(cfg: Env) -> None:
    cfg.user("[core]\nmax_turns = 9\n")
    cfg.project("[core]\nmax_turns = 5\n")
    config = _load(cfg, env={"COX_CORE_MAX_TURNS": "7"}, overrides=[("core.max_turns", "11")])
    assert config.core.max_turns == 11 and config.source("core.max_turns") == "flag:-c"
    config = _load(cfg, overrides=[("core.max_turns", "11")], flags={"core.max_turns": 3})
    assert config.core.max_turns == 3  # --max-turns is the more specific flag
    config = _load(cfg, overrides=[("core.max_turns", "11"), ("core.max_turns", "12")])
    assert config.core.max_turns == 12  # the later pair wins


def test_c_is_trusted_like_the_user_file_not_restricted_like_a_project(cfg: Env) -> None:
    # what a project file may not set, the person's own -c may
    cfg.project('[core]\nprovider = "openai"\n[permissions]\nmode = "bypassPermissions"\n')
    config = _load(cfg, overrides=[("core.provider", "openai"), ("permissions.mode", "bypassPermissions"),
                                   ("sandbox.mode", "danger-full-access"), ("sandbox.network", "true"),
                                   ("mcp.servers.db", '{ command = "db-mcp", args = ["--ro"] }')])
    assert config.core.provider == "openai" and config.permissions.mode is PermissionMode.BYPASS
    assert config.sandbox.mode is SandboxMode.DANGER_FULL_ACCESS and config.sandbox.network is True
    assert config.mcp.servers["db"].command == "db-mcp" and config.mcp.servers["db"].args == ["--ro"]
    assert any("ignored core.provider" in w for w in config.warnings)  # the project's own attempt still is


def test_c_rules_join_the_rule_lists_with_their_origin(cfg: Env) -> None:
    cfg.user('[permissions]\ndeny = ["Bash(rm:*)"]\n')
    config = _load(cfg, overrides=[("permissions.deny", '["Bash(curl:*)"]')])
    assert config.permissions.deny == ["Bash(rm:*)", "Bash(curl:*)"]
    assert config.permissions.origins["Bash(curl:*)"] == "flag:-c"


@pytest.mark.parametrize(("pair", "said"), [
    (("core.modle", "x"), "flag:-c: unknown key 'core.modle'; did you mean 'core.model'?"),
    (("core.max_turns", "0"), "core.max_turns"),
    (("tools.bash_timeout_s", "'slow'"), "tools.bash_timeout_s: expected"),
    (("core", "1"), "flag:-c: core: expected a table, got int"),
    ((".model", "x"), "is not a dotted config key"),
    (("mcp.servers.db", "{ comand = 'x' }"), "unknown key 'mcp.servers.db.comand'"),
])
def test_a_bad_c_is_one_line_naming_it(cfg: Env, pair: tuple[str, str], said: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(cfg, overrides=[pair])
    assert said in str(err.value) and "\n" not in str(err.value)


def test_settings_layer_above_the_claude_user_file_with_its_limits(cfg: Env) -> None:
    cfg.claude_user(json.dumps({"permissions": {"deny": ["Read(u.txt)"]}}))
    text = json.dumps({"permissions": {"allow": ["Bash(npm run *)"], "deny": ["Read(s.txt)"],
                                       "defaultMode": "acceptEdits"}})
    config = _load(cfg, settings=[("--settings (JSON)", text)])
    assert config.permissions.allow == ["Bash(npm run:*)"]
    assert config.permissions.deny == ["Read(**/u.txt)", "Read(**/s.txt)"]
    assert config.permissions.origins["Read(**/s.txt)"].startswith("--settings (JSON)")
    assert config.permissions.mode is PermissionMode.DEFAULT  # looser than yours: --permission-mode's job
    assert any("--settings (JSON)" in w and "defaultMode" in w for w in config.warnings)


@pytest.mark.parametrize(("sources", "read"), [
    (None, {"u", "p", "l"}), (["user"], {"u"}), (["project"], {"p"}), (["local"], {"l"}), ([], set()),
])
def test_setting_sources_choose_the_claude_files(cfg: Env, sources: list[str] | None, read: set[str]) -> None:
    cfg.claude_user(json.dumps({"permissions": {"deny": ["Read(u)"]}}))
    cfg.claude_project(json.dumps({"permissions": {"deny": ["Read(p)"]}}))
    cfg.claude_project(json.dumps({"permissions": {"deny": ["Read(l)"]}}), local=True)
    config = _load(cfg, claude_sources=sources)
    assert {rule[len("Read(**/"):-1] for rule in config.permissions.deny} == read
