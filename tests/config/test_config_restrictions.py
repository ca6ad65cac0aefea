"""A project's .cox/config.toml may narrow trust but never widen it; each ignored key is named."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode

if TYPE_CHECKING:
    from tests.config.conftest import Env


def _only_warning(warnings: list[str]) -> str:
    assert len(warnings) == 1, warnings
    return warnings[0]


def test_project_allow_rules_are_ignored_with_a_warning(cfg: Env) -> None:
    cfg.user('[permissions]\nallow = ["Read"]\n')
    project = cfg.project('[permissions]\nallow = ["Bash", "Edit"]\ndeny = ["Bash(rm:*)"]\n')
    config = cfg.load()
    assert config.permissions.allow == ["Read"]
    assert config.permissions.deny == ["Bash(rm:*)"]  # a deny narrows: kept
    warning = _only_warning(config.warnings)
    assert warning.startswith(f"{project}:2: ignored permissions.allow:")
    assert str(cfg.user_file) in warning  # says where such rules belong
    assert "Bash" not in config.permissions.origins


def test_an_empty_project_allow_list_is_no_warning(cfg: Env) -> None:
    cfg.project("[permissions]\nallow = []\n")
    assert cfg.load().warnings == []


def test_project_deny_and_ask_rules_are_kept(cfg: Env) -> None:
    project = cfg.project('[permissions]\ndeny = ["Bash(curl:*)"]\nask = ["Bash(git:*)"]\n')
    config = cfg.load()
    assert config.permissions.deny == ["Bash(curl:*)"] and config.permissions.ask == ["Bash(git:*)"]
    assert config.permissions.origins["Bash(curl:*)"] == f"{project}:2"
    assert config.warnings == []


@pytest.mark.parametrize("mode", ["bypassPermissions", "acceptEdits"])
def test_project_cannot_loosen_permission_mode(cfg: Env, mode: str) -> None:
    project = cfg.project(f'[permissions]\nmode = "{mode}"\n')
    config = cfg.load()
    assert config.permissions.mode is PermissionMode.DEFAULT
    assert config.source("permissions.mode") == "default"
    warning = _only_warning(config.warnings)
    assert warning.startswith(f"{project}:2: ignored permissions.mode:") and mode in warning


def test_project_can_tighten_to_plan_but_not_back(cfg: Env) -> None:
    project = cfg.project('[permissions]\nmode = "plan"\n')
    config = cfg.load()
    assert config.permissions.mode is PermissionMode.PLAN and config.warnings == []
    assert config.source("permissions.mode") == f"{project}:2"

    cfg.user('[permissions]\nmode = "plan"\n')
    cfg.project('[permissions]\nmode = "default"\n')
    config = cfg.load()
    assert config.permissions.mode is PermissionMode.PLAN
    assert "looser than 'plan'" in _only_warning(config.warnings)


def test_project_approval_policy_may_only_tighten(cfg: Env) -> None:
    cfg.project('[permissions]\napproval_policy = "never"\n')
    assert cfg.load().permissions.approval_policy is ApprovalPolicy.NEVER
    cfg.user('[permissions]\napproval_policy = "never"\n')
    cfg.project('[permissions]\napproval_policy = "on-request"\n')
    config = cfg.load()
    assert config.permissions.approval_policy is ApprovalPolicy.NEVER
    assert "ignored permissions.approval_policy" in _only_warning(config.warnings)


def test_project_cannot_escape_the_sandbox(cfg: Env) -> None:
    project = cfg.project(
        '[sandbox]\nmode = "danger-full-access"\nnetwork = true\nwritable_roots = ["/", "/tmp"]\n'
    )
    config = cfg.load()
    assert config.sandbox.mode is SandboxMode.WORKSPACE_WRITE
    assert config.sandbox.network is False and config.sandbox.writable_roots == []
    assert config.warnings == [
        f"{project}:2: ignored sandbox.mode: a project config may not set 'danger-full-access', it widens trust",
        f"{project}:3: ignored sandbox.network: a project config may not turn network access on",
        f"{project}:4: ignored sandbox.writable_roots: a project config may not add writable roots (/, /tmp)",
    ]


def test_project_may_narrow_the_sandbox(cfg: Env) -> None:
    cfg.user('[sandbox]\nwritable_roots = ["/a", "/b"]\n')
    cfg.project('[sandbox]\nmode = "read-only"\nnetwork = false\nwritable_roots = ["/a"]\n')
    config = cfg.load()
    assert config.sandbox.mode is SandboxMode.READ_ONLY
    assert config.sandbox.writable_roots == ["/a"] and config.warnings == []

    cfg.user('[sandbox]\nmode = "read-only"\n')
    cfg.project('[sandbox]\nmode = "workspace-write"\n')
    config = cfg.load()
    assert config.sandbox.mode is SandboxMode.READ_ONLY
    assert "looser than 'read-only'" in _only_warning(config.warnings)


def test_project_cannot_choose_programs(cfg: Env) -> None:
    cfg.user('[lsp.servers.rust]\ncommand = "rust-analyzer"\n')
    project = cfg.project(
        '[lsp.servers.python]\n'                      # 1
        'command = "./evil"\n'                        # 2
        'args = ["--stdio"]\n'                        # 3
        '[lsp.servers.rust]\n'                        # 4
        'command = "./evil-ra"\n'                     # 5
        '[hooks]\n'                                   # 6
        'PreToolUse = [{ command = "./x" }]\n'        # 7
        'Stop = [{ command = "./y" }]\n'              # 8
        '[mcp.servers.db]\n'                          # 9
        'command = "./db-mcp"\n'                      # 10
        '[models.claude-sonnet-4-5]\n'                # 11
        'input = 0\n'                                 # 12
        '[lsp]\n'                                     # 13
        'timeout_s = 5\n'                             # 14 settings that are not programs are kept
        '[mcp]\n'                                     # 15
        'timeout_s = 9\n'                             # 16
    )
    config = cfg.load()
    assert set(config.lsp.servers) == {"rust"} and config.lsp.servers["rust"].command == "rust-analyzer"
    assert config.hooks == {} and config.mcp.servers == {} and config.models == {}
    assert config.lsp.timeout_s == 5.0 and config.mcp.timeout_s == 9.0
    ignored = [w.split(": ignored ")[1].split(":")[0] for w in config.warnings]
    # A project's hooks are never merged into the config; cox.hooks reads them itself, runs them
    # only once trusted and warns about them until then (tests/hooks/test_trust.py).
    assert ignored == ["lsp.servers.python", "lsp.servers.rust", "mcp.servers.db", "models.claude-sonnet-4-5"]
    lines = [w.split(": ignored ")[0] for w in config.warnings]
    assert lines == [f"{project}:{n}" for n in (1, 4, 9, 11)]
    assert ".mcp.json" in config.warnings[2]


def test_project_budget_caps_may_only_lower(cfg: Env) -> None:
    cfg.project("[budget]\nsession_usd = 3\n")
    assert cfg.load().budget.session_usd == 3.0  # no cap before: a cap narrows
    cfg.user("[budget]\nsession_usd = 5\nmonthly_usd = 50\n")
    cfg.project("[budget]\nsession_usd = 2\nmonthly_usd = 500\n")
    config = cfg.load()
    assert config.budget.session_usd == 2.0 and config.budget.monthly_usd == 50.0
    assert "ignored budget.monthly_usd" in _only_warning(config.warnings)


def test_project_ordinary_settings_apply(cfg: Env) -> None:
    cfg.project(
        '[core]\nmodel = "claude-opus-4-1"\nmode = "architect"\n[context]\ncompact_at = 0.5\n'
        '[tools]\nbash_timeout_s = 30\n[logging]\nlevel = "debug"\n'
    )
    config = cfg.load()
    assert config.core.model == "claude-opus-4-1" and config.core.mode == "architect"
    assert config.context.compact_at == 0.5 and config.tools.bash_timeout_s == 30
    assert config.logging.level == "debug" and config.warnings == []


def test_env_and_flags_are_the_users_own_and_not_restricted(cfg: Env) -> None:
    cfg.project('[permissions]\nmode = "plan"\n')
    config = cfg.load(env={"COX_PERMISSIONS_MODE": "bypassPermissions"},
                      flags={"permissions.allow": ["Bash"], "sandbox.mode": "danger-full-access"})
    assert config.permissions.mode is PermissionMode.BYPASS
    assert config.permissions.allow == ["Bash"]
    assert config.sandbox.mode is SandboxMode.DANGER_FULL_ACCESS
    assert config.source("sandbox.mode") == "flag:--sandbox"
    assert config.warnings == []


def test_project_cannot_choose_the_provider_or_the_script(cfg: Env) -> None:
    project = cfg.project('[core]\nprovider = "scripted"\nscript = "evil.json"\nmode = "editor"\n')
    config = cfg.load()
    assert config.core.provider == "auto" and config.core.script == ""
    assert config.source("core.provider") == "default" and config.source("core.script") == "default"
    assert [w.split(": ignored ")[0] for w in config.warnings] == [f"{project}:2", f"{project}:3"]
    assert config.warnings[0].startswith(f"{project}:2: ignored core.provider: ")
    assert config.warnings[1].startswith(f"{project}:3: ignored core.script: ")
    assert "--script" in config.warnings[1] and str(cfg.user_file) in config.warnings[0]
    cfg.user('[core]\nprovider = "anthropic"\n')
    cfg.project('[core]\nprovider = "anthropic"\n')  # even your own value: a project does not choose it
    config = cfg.load()
    assert config.source("core.provider") == f"{cfg.user_file}:2" and len(config.warnings) == 1


def test_project_model_stays_with_your_provider(cfg: Env) -> None:
    project = cfg.project('[core]\nmodel = "gpt-5"\n')
    config = cfg.load()
    assert config.core.model == "claude-sonnet-4-5"
    warning = _only_warning(config.warnings)
    assert warning.startswith(f"{project}:2: ignored core.model: ") and "another provider" in warning
    cfg.project('[core]\nmodel = "claude-opus-4-1"\n')
    assert cfg.load().core.model == "claude-opus-4-1"
    cfg.user('[core]\nprovider = "anthropic"\n')  # a fixed provider: any name goes to the same place
    cfg.project('[core]\nmodel = "gpt-5"\n')
    config = cfg.load()
    assert config.core.model == "gpt-5" and config.warnings == []


def test_project_turn_cap_may_only_lower(cfg: Env) -> None:
    cfg.project("[core]\nmax_turns = 10\n")
    assert cfg.load().core.max_turns == 10
    project = cfg.project("[core]\nmax_turns = 5000\n")
    config = cfg.load()
    assert config.core.max_turns == 50
    assert _only_warning(config.warnings).startswith(f"{project}:2: ignored core.max_turns: ")


def test_a_key_the_allowlist_has_not_decided_is_ignored() -> None:
    from cox.config.project import project_verdict

    def current(path: tuple[str, ...]) -> object:
        return []

    reason = project_verdict(("tools", "pager_command"), "./evil", current, "~/.cox/config.toml")
    assert reason is not None and "known to be safe" in reason
    assert project_verdict(("sandbox", "env_keep"), ["AWS_SECRET_ACCESS_KEY"], current, "u") is not None
    assert project_verdict(("sandbox", "env_keep"), [], current, "u") is None


def test_the_allowlist_names_only_real_keys() -> None:
    from cox.config.loader import _all_keys, _schema
    from cox.config.project import _FREE, _LOWER_ONLY, RANKS

    known = set(_all_keys(_schema()))
    for path in {*_FREE, *_LOWER_ONLY, *RANKS}:
        assert ".".join(path) in known, path
