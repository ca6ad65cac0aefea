"""The rule grammar, one sentence at a time (issue 3, item 1)."""

from __future__ import annotations

import pytest

from cox.policy.rules import Rule, RuleError, parse_rule
from cox.protocol.types import Risk

from .helpers import HOME, ROOT, call, engine, kind


def rule(text: str) -> Rule:
    return parse_rule(text, "test.toml:1", home=HOME, roots=[ROOT])


# "Tool matches every call of that tool"


def test_bare_tool_matches_every_call_of_that_tool() -> None:
    e = engine(deny=["WebFetch"])
    assert kind(e, call("web_fetch", "https://a.example/x", Risk.EXEC)) == "deny"
    assert kind(e, call("web_fetch", "http://b.test", Risk.EXEC)) == "deny"
    assert kind(e, "ls") == "allow"  # other tools untouched


def test_bare_bash_matches_every_line_even_opaque() -> None:
    e = engine(allow=["Bash"])
    assert kind(e, "echo $(id) > out; sudo reboot") == "allow"


def test_tool_star_is_the_bare_tool() -> None:
    assert rule("Bash(*)").kind == "any"


# "Tool(text) the exact subject"


def test_exact_rule_matches_only_the_exact_subject() -> None:
    e = engine(allow=["WebSearch(rust borrow checker)"])
    assert kind(e, call("web_search", "rust borrow checker", Risk.EXEC)) == "allow"
    assert kind(e, call("web_search", "rust borrow checker tips", Risk.EXEC)) == "ask"


def test_exact_bash_rule_matches_the_whole_line_as_written() -> None:
    e = engine(allow=["Bash(make && make install)"])
    assert kind(e, "make && make install") == "allow"
    assert kind(e, "make && make install && rm -rf /") == "ask"


def test_exact_bash_rule_covers_one_command_in_canonical_form() -> None:
    e = engine(allow=["Bash(npm test)"])
    assert kind(e, "npm   'test'") == "allow"
    assert kind(e, "npm test --watch") == "ask"


# "Tool(prefix:*) a subject that is the prefix alone or the prefix followed by whitespace"


@pytest.mark.parametrize(("line", "expected"), [
    ("git status", "allow"), ("git", "ask"), ("git status --short", "allow"), ("git statusx", "ask"),
    ("gitk", "ask"),
])
def test_prefix_is_the_prefix_alone_or_followed_by_whitespace(line: str, expected: str) -> None:
    e = engine(allow=["Bash(git status:*)"])
    assert kind(e, line) == expected


def test_prefix_alone_matches() -> None:
    e = engine(allow=["Bash(make:*)"])
    assert kind(e, "make") == "allow"


def test_generic_prefix_rule() -> None:
    e = engine(deny=["WebSearch(secret:*)"])
    assert kind(e, call("web_search", "secret plans", Risk.READ_ONLY)) == "deny"
    assert kind(e, call("web_search", "secretary", Risk.READ_ONLY)) == "allow"


# "WebFetch(domain:host) that host and its subdomains"


@pytest.mark.parametrize(("url", "expected"), [
    ("https://docs.rs/tokio", "allow"), ("https://api.docs.rs/x", "allow"), ("http://DOCS.RS:8080/", "allow"),
    ("https://notdocs.rs/", "ask"), ("https://docs.rs.evil.com/", "ask"), ("docs.rs/x", "allow"),
    ("https://user@docs.rs/", "allow"), ("not a url", "ask"),
])
def test_domain_rule_matches_host_and_subdomains(url: str, expected: str) -> None:
    e = engine(allow=["WebFetch(domain:docs.rs)"])
    assert kind(e, call("web_fetch", url, Risk.EXEC)) == expected


# "a path glob for file tools; ~ and relative paths resolved against home and the workspace root"


@pytest.mark.parametrize(("path", "expected"), [
    ("/home/alice/.ssh/id_ed25519", "deny"), ("/home/alice/.ssh/keys/old", "deny"), ("/home/alice/.ssh", "deny"),
    ("/home/alice/.sshrc", "allow"), ("/repo/.ssh/x", "allow"),
])
def test_home_glob(path: str, expected: str) -> None:
    e = engine(deny=["Read(~/.ssh/**)"], default_deny=False)
    assert kind(e, call("read", path)) == expected


def test_relative_glob_is_against_the_workspace_root() -> None:
    e = engine(deny=["Edit(secrets/**)"])
    assert kind(e, call("edit", "/repo/secrets/prod.key", Risk.WRITE)) == "deny"
    assert kind(e, call("edit", "/repo/src/secrets/x", Risk.WRITE)) == "ask"
    assert kind(e, call("edit", "secrets/a", Risk.WRITE)) == "deny"  # relative subject: against the root


def test_relative_glob_against_every_root() -> None:
    from cox.policy.permission import Engine

    e = Engine.compile([], [], ["Read(*.pem)"], home=HOME, roots=["/repo", "/other"])
    assert e.decide(call("read", "/other/a.pem")).kind == "deny"
    assert e.decide(call("read", "/other/sub/a.pem")).kind == "allow"  # * stays in one segment


@pytest.mark.parametrize(("pattern", "path", "hit"), [
    ("**/.env", "/repo/.env", True), ("**/.env", "/repo/a/b/.env", True), ("./src/*.py", "/repo/src/a.py", True),
    ("src/?.py", "/repo/src/ab.py", False), ("src/[ab].py", "/repo/src/b.py", True),
    ("src/[!ab].py", "/repo/src/b.py", False), ("//etc/passwd", "/etc/passwd", True),
    ("/etc/**", "/etc/ssl/private/k", True), ("build/", "/repo/build/out.o", True),
    ("src/\\*.py", "/repo/src/*.py", True), ("src/\\*.py", "/repo/src/a.py", False),
    ("../shared/**", "/shared/x", True),
])
def test_glob_syntax(pattern: str, path: str, hit: bool) -> None:
    r = rule(f"Read({pattern})")
    assert r.matches(path) is hit


def test_edit_rules_cover_every_editing_tool_and_read_rules_every_reading_tool() -> None:
    e = engine(deny=["Edit(/repo/locked/**)", "Read(/repo/hidden/**)"])
    for tool in ("edit", "write", "apply_patch"):
        assert kind(e, call(tool, "/repo/locked/a", Risk.WRITE)) == "deny"
    for tool in ("read", "grep", "glob"):
        assert kind(e, call(tool, "/repo/hidden/a")) == "deny"
    assert kind(e, call("read", "/repo/locked/a")) == "allow"


def test_write_rule_covers_only_write() -> None:
    e = engine(deny=["Write(/repo/x)"])
    assert kind(e, call("write", "/repo/x", Risk.WRITE)) == "deny"
    assert kind(e, call("edit", "/repo/x", Risk.WRITE)) == "ask"


# "mcp__<server>__<tool> names"


def test_mcp_rules() -> None:
    e = engine(allow=["mcp__github"], deny=["mcp__db__drop_table"], ask=["mcp__fs__*"])
    assert kind(e, call("mcp__github__create_issue", "mcp__github__create_issue", Risk.EXEC)) == "allow"
    assert kind(e, call("mcp__db__drop_table", "mcp__db__drop_table", Risk.EXEC)) == "deny"
    assert kind(e, call("mcp__db__query", "mcp__db__query", Risk.EXEC)) == "ask"
    assert kind(e, call("mcp__fs__read", "mcp__fs__read", Risk.READ_ONLY)) == "ask"
    assert kind(e, call("mcp__githubx__a", "mcp__githubx__a", Risk.EXEC)) == "ask"  # not a prefix of the server


# "A malformed rule is a config error that names the rule and the file it came from."


@pytest.mark.parametrize(("text", "problem"), [
    ("", "empty"), ("Bash(rm", "missing ')'"), ("bash(rm:*)", "did you mean Bash"), ("Bsh(rm:*)", "unknown tool"),
    ("Bash()", "parentheses are empty"), ("Bash(:*)", "prefix before ':*' is empty"),
    ("Bash(git:* status)", "only end"), ("Bash(npm run *)", "Bash(npm run:*)"),
    ("Read(src:*)", "path glob"), ("WebFetch(domain:)", "host name"), ("WebFetch(domain:a/b)", "host name"),
    ("mcp__", "mcp__<server>"), ("mcp__s(x)", "no parentheses"), ("CloudAgent(justone)", "owner/repo"),
    ("Read(~bob/x)", "~user"), ("Bash rm", "expected Tool"),
])
def test_malformed_rule_names_rule_and_origin(text: str, problem: str) -> None:
    with pytest.raises(RuleError) as err:
        rule(text)
    assert problem in str(err.value)
    assert err.value.rule == text and err.value.origin == "test.toml:1"
    assert "test.toml:1" in str(err.value) and repr(text) in str(err.value)


def test_compile_uses_origins_for_the_error() -> None:
    with pytest.raises(RuleError) as err:
        engine(deny=["Bash(rm"], origins={"Bash(rm": "/p/.cox/config.toml:7"})
    assert "/p/.cox/config.toml:7" in str(err.value)


def test_rule_error_is_a_value_error() -> None:
    assert issubclass(RuleError, ValueError)


def test_claude_code_s_ls_and_todo_write_names_are_rules_too() -> None:
    """``--allowedTools "Read,LS,TodoWrite"`` is a line Claude Code scripts carry."""
    from cox.policy.rules import parse_rule

    assert parse_rule("LS").applies_to("ls") and not parse_rule("LS").applies_to("read")
    assert parse_rule("TodoWrite").applies_to("todo_write")
