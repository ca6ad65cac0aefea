"""Every config error is one line naming the file (or variable, or flag), the line and the key."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from cox.config import ConfigError

if TYPE_CHECKING:
    from tests.config.conftest import Env


def _error(cfg: Env, **kwargs: object) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        cfg.load(**kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return info.value


def test_unknown_key_names_file_line_and_closest_key(cfg: Env) -> None:
    path = cfg.user('[core]\nmodel = "x"\nmodle = "y"\n')
    err = _error(cfg)
    assert str(err) == f"{path}:3: unknown key 'core.modle'; did you mean 'core.model'?"
    assert (err.file, err.line, err.key) == (str(path), 3, "core.modle")


def test_unknown_key_in_the_wrong_section_suggests_where_it_lives(cfg: Env) -> None:
    path = cfg.user('[core]\nallow = ["Bash"]\n')
    assert str(_error(cfg)) == f"{path}:2: unknown key 'core.allow'; did you mean 'permissions.allow'?"


def test_unknown_section_and_unknown_entry_field(cfg: Env) -> None:
    path = cfg.user('[coer]\nmodel = "x"\n')
    assert str(_error(cfg)) == f"{path}:1: unknown key 'coer'; did you mean 'core'?"
    path = cfg.user('[mcp.servers.gh]\ncomand = "gh"\n')
    assert str(_error(cfg)) == f"{path}:2: unknown key 'mcp.servers.gh.comand'; did you mean 'mcp.servers.gh.command'?"
    path = cfg.user('[sandbox]\nfoo_bar_baz = 1\n')
    assert str(_error(cfg)) == f"{path}:2: unknown key 'sandbox.foo_bar_baz'"


def test_unknown_key_in_the_project_file_is_an_error_too(cfg: Env) -> None:
    path = cfg.project("[context]\nkeep_turn = 3\n")
    assert str(_error(cfg)) == f"{path}:2: unknown key 'context.keep_turn'; did you mean 'context.keep_turns'?"


@pytest.mark.parametrize(("text", "line", "expected"), [
    ('[permissions]\nallow = "Bash"\n', 2, "permissions.allow: expected a list of strings, got str"),
    ('[permissions]\ndeny = [\n  "a",\n  1,\n]\n', 2, "permissions.deny: expected a list of strings, got int at item 2"),
    ('[core]\nmax_turns = "ten"\n', 2, "core.max_turns: expected an integer, got str"),
    ('[core]\nmax_turns = true\n', 2, "core.max_turns: expected an integer, got bool"),
    ('[core]\nmax_turns = 0\n', 2, "core.max_turns: expected an integer >= 1, got 0"),
    ('[sandbox]\nnetwork = "yes"\n', 2, "sandbox.network: expected true or false, got str"),
    ('[context]\n\ncompact_at = 1.5\n', 3, "context.compact_at: expected a number <= 1, got 1.5"),
    ('core = 5\n', 1, "core: expected a table, got int"),
    ('[permissions]\nmode = "bypass"\n', 2,
     "permissions.mode: expected one of 'default', 'acceptEdits', 'plan', 'bypassPermissions', 'dontAsk', "
     "got 'bypass' (did you mean 'bypassPermissions'?)"),
    ('[core]\nprovider = "antropic"\n', 2,
     "core.provider: expected one of 'auto', 'anthropic', 'openai', 'openai-chat', 'scripted', "
     "got 'antropic' (did you mean 'anthropic'?)"),
    ('[mcp.servers.gh]\nenv = { A = 1 }\n', 2, "mcp.servers.gh.env: expected a table of strings, got int at 'A'"),
    ('[mcp]\nservers = ["gh"]\n', 2, "mcp.servers: expected a table, got list"),
    ('[hooks]\nx = 1\n[models]\nm = 3\n', 4, "models.m: expected a table, got int"),
])
def test_wrong_types(cfg: Env, text: str, line: int, expected: str) -> None:
    path = cfg.user(text)
    assert str(_error(cfg)) == f"{path}:{line}: {expected}"


def test_a_float_key_takes_an_integer(cfg: Env) -> None:
    cfg.user("[mcp]\ntimeout_s = 10\n")
    config = cfg.load()
    assert config.mcp.timeout_s == 10.0 and isinstance(config.mcp.timeout_s, float)


def test_toml_syntax_error_names_file_line_and_column(cfg: Env) -> None:
    path = cfg.user('[core]\nmodel = "x"\nmax_turns 3\n')
    err = _error(cfg)
    assert str(err).startswith(f"{path}:3:11: TOML syntax error: ")
    assert err.line == 3 and err.file == str(path)


def test_toml_duplicate_key_is_a_syntax_error(cfg: Env) -> None:
    path = cfg.project('[core]\nmodel = "x"\nmodel = "y"\n')
    assert str(_error(cfg)).startswith(f"{path}:3:")


def test_invalid_utf8(cfg: Env) -> None:
    cfg.user_file.write_bytes(b'[core]\nmodel = "\xff"\n')
    assert str(_error(cfg)) == f"{cfg.user_file}:2: not valid UTF-8 (byte 16)"


def test_unreadable_config_path(cfg: Env) -> None:
    cfg.user_file.mkdir()
    assert str(_error(cfg)).startswith(f"{cfg.user_file}: cannot read:")


def test_mcp_server_needs_exactly_one_transport(cfg: Env) -> None:
    path = cfg.user('[mcp.servers.a]\nargs = ["x"]\n')
    assert str(_error(cfg)) == f"{path}:1: mcp.servers.a: needs a command (stdio) or a url (HTTP)"
    path = cfg.user('\n[mcp.servers.a]\ncommand = "a"\nurl = "http://x"\n')
    assert str(_error(cfg)) == f"{path}:2: mcp.servers.a: set either command (stdio) or url (HTTP), not both"


def test_lsp_server_needs_a_command(cfg: Env) -> None:
    path = cfg.user('[lsp.servers.python]\nargs = ["--stdio"]\n')
    assert str(_error(cfg)) == f"{path}:1: lsp.servers.python: needs a command"


def test_unknown_env_var_in_a_config_section(cfg: Env) -> None:
    err = _error(cfg, env={"COX_CORE_MODLE": "x"})
    assert str(err) == "env:COX_CORE_MODLE: unknown config variable; did you mean COX_CORE_MODEL?"
    err = _error(cfg, env={"COX_TOOLS_NOTHING_LIKE_IT": "x"})
    assert "unknown config variable" in str(err) and "docs/config.md" in str(err)


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("COX_CORE_MAX_TURNS", "ten", "core.max_turns: expected an integer, got 'ten'"),
    ("COX_SANDBOX_NETWORK", "maybe", "sandbox.network: expected true or false (or 1/0, yes/no, on/off), got 'maybe'"),
    ("COX_CONTEXT_COMPACT_AT", "2", "context.compact_at: expected a number <= 1, got 2.0"),
    ("COX_SANDBOX_MODE", "open", "sandbox.mode: expected one of 'read-only', 'workspace-write', 'danger-full-access', got 'open'"),
    ("COX_PERMISSIONS_DENY", "Bash(rm:*)", "permissions.deny: expected a list of strings written in TOML, like [\"a\", \"b\"], got 'Bash(rm:*)'"),
    ("COX_PERMISSIONS_DENY", "[1]", "permissions.deny: expected a list of strings, got int at item 1"),
])
def test_bad_env_values(cfg: Env, name: str, value: str, expected: str) -> None:
    assert str(_error(cfg, env={name: value})) == f"env:{name}: {expected}"


def test_bad_flags(cfg: Env) -> None:
    assert str(_error(cfg, flags={"core.max_turns": "x"})) == "flag:--max-turns: core.max_turns: expected an integer, got 'x'"
    assert str(_error(cfg, flags={"core.modle": "x"})) == "flag:core.modle: unknown key 'core.modle'; did you mean 'core.model'?"
    assert str(_error(cfg, flags={"core": "x"})) == "flag:core: core is a table; set one of its keys"
    assert str(_error(cfg, flags={"permissions.allow": "Bash"})).startswith("flag:permissions.allow: permissions.allow: expected")
