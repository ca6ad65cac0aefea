"""Each layer, their precedence, and the source every effective value remembers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from cox.config import Config, env_vars, load_config
from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode

if TYPE_CHECKING:
    from tests.config.conftest import Env


def test_defaults_alone_load_with_no_files(cfg: Env) -> None:
    config = cfg.load()
    assert config.as_dict() == Config().as_dict()
    assert config.files == [] and config.warnings == []
    assert config.core.model == "claude-sonnet-4-5"
    assert config.core.provider == "auto" and config.core.mode == "editor" and config.core.max_turns == 50
    assert config.permissions.mode is PermissionMode.DEFAULT
    assert config.permissions.approval_policy is ApprovalPolicy.ON_REQUEST
    assert config.sandbox.mode is SandboxMode.WORKSPACE_WRITE and config.sandbox.network is False
    assert config.tools.bash_timeout_s == 120 and config.tools.visible_max_bytes == 16384
    assert config.context.compact_at == 0.75 and config.context.keep_turns == 2
    assert config.context.dedup_window_turns == 8 and config.context.microcompact_after_turns == 6
    assert config.budget.session_usd is None and config.mcp.timeout_s == 60.0
    assert config.logging.level == "info"
    assert set(config.sources().values()) == {"default"}


def test_user_file_overrides_defaults_with_its_line(cfg: Env) -> None:
    path = cfg.user('# my config\n\n[core]\nmodel = "gpt-5"\nmax_turns = 9\n')
    config = cfg.load()
    assert config.core.model == "gpt-5" and config.core.max_turns == 9
    assert config.source("core.model") == f"{path}:4"
    assert config.source("core.max_turns") == f"{path}:5"
    assert config.source("core.provider") == "default"
    assert config.files == [str(path)]


def test_project_overrides_user(cfg: Env) -> None:
    cfg.user('[core]\nmodel = "claude-sonnet-4-5"\n[context]\nkeep_turns = 4\n')
    project = cfg.project('[core]\nmodel = "claude-opus-4-1"\n')  # same provider: kept
    config = cfg.load()
    assert config.core.model == "claude-opus-4-1"
    assert config.source("core.model") == f"{project}:2"
    assert config.context.keep_turns == 4  # untouched by the project: deep merge, not replace
    assert config.files == [str(cfg.user_file), str(project)]


def test_env_overrides_files_and_flags_override_env(cfg: Env) -> None:
    cfg.user('[core]\nmodel = "a"\nmax_turns = 3\n')
    cfg.project('[core]\nmodel = "b"\n')
    config = cfg.load(env={"COX_CORE_MODEL": "c", "COX_CORE_MAX_TURNS": "12"})
    assert config.core.model == "c" and config.source("core.model") == "env:COX_CORE_MODEL"
    assert config.core.max_turns == 12 and config.source("core.max_turns") == "env:COX_CORE_MAX_TURNS"
    config = cfg.load(env={"COX_CORE_MODEL": "c"}, flags={"core.model": "d", "core.max_turns": 20})
    assert config.core.model == "d" and config.source("core.model") == "flag:--model"
    assert config.core.max_turns == 20 and config.source("core.max_turns") == "flag:--max-turns"


def test_flags_none_means_not_given_and_strings_are_parsed(cfg: Env) -> None:
    cfg.user('[core]\nmodel = "a"\n')
    config = cfg.load(flags={"core.model": None, "core.max_turns": "7", "tools.bash_timeout_s": 30,
                             "permissions.mode": PermissionMode.PLAN})
    assert config.core.model == "a"
    assert config.core.max_turns == 7
    assert config.tools.bash_timeout_s == 30 and config.source("tools.bash_timeout_s") == "flag:tools.bash_timeout_s"
    assert config.permissions.mode is PermissionMode.PLAN
    assert config.source("permissions.mode") == "flag:--permission-mode"


def test_flag_can_set_a_named_entry(cfg: Env) -> None:
    cfg.user('[mcp.servers.gh]\ncommand = "gh-mcp"\n')
    config = cfg.load(flags={"mcp.servers.gh.args": ["--verbose"]})
    assert config.mcp.servers["gh"].command == "gh-mcp"
    assert config.mcp.servers["gh"].args == ["--verbose"]
    assert config.source("mcp.servers.gh.args") == "flag:mcp.servers.gh.args"


def test_env_var_table() -> None:
    table = env_vars()
    assert table["COX_CORE_MODEL"] == "core.model"
    assert table["COX_TOOLS_BASH_TIMEOUT_S"] == "tools.bash_timeout_s"
    assert table["COX_PERMISSIONS_APPROVAL_POLICY"] == "permissions.approval_policy"
    assert table["COX_CONTEXT_COMPACT_AT"] == "context.compact_at"
    assert table["COX_BUDGET_MONTHLY_USD"] == "budget.monthly_usd"
    assert table["COX_MCP_STARTUP_TIMEOUT_S"] == "mcp.startup_timeout_s"
    assert "COX_HOME" not in table
    assert "COX_PERMISSIONS_ORIGINS" not in table  # filled by the loader, not settable
    assert not any(name.startswith(("COX_HOOKS", "COX_MODELS", "COX_MCP_SERVERS")) for name in table)


def test_the_table_of_variables_is_built_only_when_one_is_set(cfg: Env) -> None:
    env_vars.cache_clear()
    quiet = {"COX_HOME": "/elsewhere", "COX_ELSEWHERE_X": "1", "COX_core_model": "x"}  # no section, lower case
    config = cfg.load(env=quiet)
    assert config.core.model == Config().core.model and config.source("core.model") == "default"
    assert env_vars.cache_info().currsize == 0
    config = cfg.load(env={**quiet, "COX_MODELS_X": "1", "COX_HOOKS_X": "1"})  # sections without variables
    assert config.source("core.model") == "default"
    config = cfg.load(env={**quiet, "COX_CORE_MODEL": "m"})
    assert config.core.model == "m" and config.source("core.model") == "env:COX_CORE_MODEL"
    # every variable's section is one the cheap scan looks for
    assert {name.split("_")[1].lower() for name in env_vars()} <= set(Config.__dataclass_fields__)


def test_env_values_are_parsed_by_type(cfg: Env) -> None:
    config = cfg.load(env={
        "COX_HOME": "/elsewhere",  # not a config key: ignored
        "COX_SOMETHING_ELSE": "x",  # not a config section: ignored
        "COX_SANDBOX_NETWORK": "yes",
        "COX_CONTEXT_COMPACT_AT": "0.5",
        "COX_BUDGET_SESSION_USD": "2.5",
        "COX_PERMISSIONS_DENY": '["Bash(rm:*)", "Read(~/.ssh/**)"]',
        "COX_SANDBOX_WRITABLE_ROOTS": '["/tmp/a"]',
        "COX_PERMISSIONS_MODE": "plan",
    })
    assert config.sandbox.network is True
    assert config.context.compact_at == 0.5
    assert config.budget.session_usd == 2.5
    assert config.permissions.deny == ["Bash(rm:*)", "Read(~/.ssh/**)"]
    assert config.permissions.origins["Bash(rm:*)"] == "env:COX_PERMISSIONS_DENY"
    assert config.sandbox.writable_roots == ["/tmp/a"]
    assert config.permissions.mode is PermissionMode.PLAN


def test_env_can_unset_an_optional_cap(cfg: Env) -> None:
    cfg.user("[budget]\nsession_usd = 5\n")
    assert cfg.load().budget.session_usd == 5.0
    config = cfg.load(env={"COX_BUDGET_SESSION_USD": "none"})
    assert config.budget.session_usd is None
    assert config.source("budget.session_usd") == "env:COX_BUDGET_SESSION_USD"


def test_permission_lists_merge_across_layers_with_origins(cfg: Env) -> None:
    user = cfg.user(
        '[permissions]\n'
        'allow = ["Bash(cargo test:*)"]\n'
        'deny = [\n'
        '  "Read(~/.ssh/**)",\n'
        '  "Bash(rm:*)",\n'
        ']\n'
    )
    project = cfg.project('[permissions]\ndeny = ["Bash(curl:*)", "Bash(rm:*)"]\nask = ["Bash(git push:*)"]\n')
    config = cfg.load(env={"COX_PERMISSIONS_DENY": '["WebFetch"]'}, flags={"permissions.allow": ["Read"]})
    perms = config.permissions
    assert perms.allow == ["Bash(cargo test:*)", "Read"]
    assert perms.deny == ["Read(~/.ssh/**)", "Bash(rm:*)", "Bash(curl:*)", "WebFetch"]  # deduplicated
    assert perms.ask == ["Bash(git push:*)"]
    assert perms.origins == {
        "Bash(cargo test:*)": f"{user}:2",
        "Read(~/.ssh/**)": f"{user}:4",
        "Bash(rm:*)": f"{user}:5",  # first layer that gave it
        "Bash(curl:*)": f"{project}:2",
        "Bash(git push:*)": f"{project}:3",
        "WebFetch": "env:COX_PERMISSIONS_DENY",
        "Read": "flag:permissions.allow",
    }
    assert config.source("permissions.deny") == f"{user}:3, {project}:2, env:COX_PERMISSIONS_DENY"
    assert config.source("permissions.ask") == f"{project}:3"
    assert config.warnings == []


def test_sources_find_lines_of_dotted_keys_inline_tables_and_after_multiline_values(cfg: Env) -> None:
    path = cfg.user(
        'logging.level = "debug"\n'               # 1 dotted key at top level
        '[tools]\n'                               # 2
        'bash_timeout_s = 5  # [fake] = 1\n'      # 3
        '[mcp]\n'                                 # 4
        'servers.gh = { command = "gh", env = { A = "1" } }\n'  # 5
        '[hooks]\n'                               # 6
        'note = """\n'                            # 7
        'max_turns = 1\n'                         # 8 (inside a string)
        '[core]\n'                                # 9 (inside a string)
        '"""\n'                                   # 10
        'Pre = [\n'                               # 11
        '  { matcher = "Bash" },\n'               # 12
        ']\n'                                     # 13
        '[core]\n'                                # 14
        'max_turns = 4\n'                         # 15
    )
    config = cfg.load()
    assert config.source("logging.level") == f"{path}:1"
    assert config.source("tools.bash_timeout_s") == f"{path}:3"
    assert config.source("mcp.servers.gh") == f"{path}:5"
    assert config.source("mcp.servers.gh.command") == f"{path}:5"
    assert config.source("mcp.servers.gh.env") == f"{path}:5"
    assert config.source("hooks.note") == f"{path}:7"
    assert config.source("hooks.Pre") == f"{path}:11"
    assert config.source("core.max_turns") == f"{path}:15"
    assert config.hooks["Pre"] == [{"matcher": "Bash"}]


def test_get_source_and_as_dict(cfg: Env) -> None:
    cfg.user('[permissions]\ndeny = ["Bash(rm:*)"]\n[mcp.servers.gh]\ncommand = "gh"\n')
    config = cfg.load()
    assert config.get("permissions.deny") == ["Bash(rm:*)"]
    assert config.get("mcp.servers.gh.command") == "gh"
    assert config.get("core").model == "claude-sonnet-4-5"
    assert config.source("mcp.servers.gh") == f"{cfg.user_file}:3"
    assert config.source("mcp.servers.gh.args") == "default"
    assert config.source("core") == "default"
    for bad in ("core.modle", "nope", "permissions.deny.x"):
        try:
            config.get(bad)
        except KeyError:
            pass
        else:
            raise AssertionError(bad)
    data = config.as_dict()
    json.dumps(data)  # plain data
    assert data["permissions"]["mode"] == "default"
    assert "origins" not in data["permissions"]
    assert data["mcp"]["servers"]["gh"]["command"] == "gh"


def test_cox_home_comes_from_the_environment(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text('[core]\nmodel = "from-home"\n')
    config = load_config(tmp_path, env={"COX_HOME": str(home)})
    assert config.core.model == "from-home"


def test_user_file_is_not_read_again_as_a_project_file(tmp_path: Path) -> None:
    # cox started in $HOME: $HOME/.cox/config.toml is the user's own file, not a project's.
    home = tmp_path / ".cox"
    home.mkdir()
    (home / "config.toml").write_text('[permissions]\nallow = ["Bash"]\nmode = "acceptEdits"\n')
    config = load_config(tmp_path, cox_home=home, env={})
    assert config.permissions.allow == ["Bash"]
    assert config.permissions.mode is PermissionMode.ACCEPT_EDITS
    assert config.warnings == [] and len(config.files) == 1


def test_models_lsp_and_hooks_from_the_user_file(cfg: Env) -> None:
    cfg.user(
        '[models.local]\nprovider = "openai-chat"\ncontext_window = 32000\ninput = 0\noutput = 0.5\n'
        '[lsp.servers.python]\ncommand = "pyright-langserver"\nargs = ["--stdio"]\n'
        '[hooks]\nPreToolUse = [{ matcher = "Bash", command = "check" }]\n'
    )
    config = cfg.load()
    assert config.models["local"].context_window == 32000 and config.models["local"].input == 0.0
    assert config.models["local"].cache_read is None
    assert config.lsp.servers["python"].args == ["--stdio"]
    assert config.hooks["PreToolUse"][0]["command"] == "check"


def test_docs_list_every_env_var_and_key() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "config.md").read_text()
    for name, key in env_vars().items():
        assert f"| `{name}` | `{key}` |" in docs
    for key, _ in Config().flat():
        assert f"`{key}`" in docs, key
