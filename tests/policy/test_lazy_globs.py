"""A path rule's glob is compiled with the first path checked against it, not when the engine is
made at session start; what that glob would refuse is still refused when the rule is read, and
the answers are the ones an eagerly compiled rule gives."""

from __future__ import annotations

import re

import pytest

from cox.policy import globs, rules
from cox.policy.globs import GlobError, check_glob, compile_glob
from cox.policy.permission import Engine
from cox.policy.rules import RuleError, parse_rule
from cox.protocol.types import Risk

from .helpers import HOME, ROOT, call, engine, kind


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The globs compiled, in order."""
    made: list[str] = []
    real = rules.compile_glob

    def counted(pattern: str, home: str, roots: list[str]) -> re.Pattern[str]:
        made.append(pattern)
        return real(pattern, home, roots)
    monkeypatch.setattr(rules, "compile_glob", counted)
    return made


def test_the_engine_and_its_read_guard_compile_no_glob_until_a_path_is_checked(compiled: list[str]) -> None:
    e = engine(deny=["Read(./.env)", "Edit(/etc/**)"])
    guard = e.read_guard()  # the session makes it when it starts
    assert compiled == []
    assert kind(e, call("read", f"{HOME}/.ssh/id_rsa")) == "deny"
    assert "~/.ssh/**" in compiled and kind(e, call("read", f"{ROOT}/.env")) == "deny"
    assert kind(e, call("read", f"{ROOT}/src/a.py")) == "allow"
    assert kind(e, call("edit", "/etc/passwd", Risk.WRITE)) == "deny"
    assert guard.refuses(f"{HOME}/.aws/credentials") is not None and guard.refuses(f"{ROOT}/a.py") is None
    assert len(compiled) == len(set(compiled))  # each once


def test_a_bash_line_reading_nothing_denied_compiles_only_the_guard_s_one_regex(compiled: list[str]) -> None:
    e = engine()
    assert kind(e, "cat README.md && ls -R src") == "allow"
    assert compiled == []  # the read guard's union was built from the rules' text
    assert kind(e, "cat ~/.ssh/id_rsa") == "ask"
    assert compiled[-1] == "~/.ssh/**"  # which rule it was: compiled in order up to the one that matched


def test_a_lazily_compiled_rule_is_the_eager_one() -> None:
    for text in ("Read(~/.ssh/**)", "Read(./.env.*)", "Edit(/a//b/../c/[ab]?)", "Read(src/)", "Read(~)"):
        r = parse_rule(text, "t", home=HOME, roots=[ROOT, "/other"])
        spec = text[text.index("(") + 1:-1]
        assert r.source == compile_glob(spec, HOME, [ROOT, "/other"]).pattern, text  # before it is compiled
        assert r.regex == compile_glob(spec, HOME, [ROOT, "/other"]), text
        assert r.source == r.regex.pattern
    assert parse_rule("Read", "t").regex is None and parse_rule("Bash(ls:*)", "t").source is None


@pytest.mark.parametrize("pattern", ["", " ", "~bob/x", "x/y", "./x", "[z-a]", "~/a/[z-a]/../x", "/a/[[:digit:]", "/[!b-a]x",
                                     "/a[b-c]", "~/", "/x/../[a-b]", "~/[a-z]-[9-0]"])
def test_a_glob_is_refused_when_read_exactly_when_compiling_it_fails(pattern: str) -> None:
    roots: list[str] = [] if pattern in ("x/y", "./x") else [ROOT]
    try:
        compile_glob(pattern, HOME, roots)
    except GlobError as exc:
        with pytest.raises(GlobError) as err:
            check_glob(pattern, HOME, roots)
        assert str(err.value) == str(exc)
        with pytest.raises(RuleError, match=re.escape(str(exc)) if pattern.strip() else "parentheses are empty"):
            Engine.compile(deny=[f"Read({pattern})"], home=HOME, roots=roots)
    else:
        check_glob(pattern, HOME, roots)


def test_the_home_is_looked_up_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd

    globs.homes.cache_clear()
    asked: list[int] = []
    real = pwd.getpwuid
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: asked.append(uid) or real(uid))
    for _ in range(3):
        e = engine()
        assert kind(e, call("read", f"{HOME}/.ssh/id_rsa")) == "deny"
    assert len(asked) == 1
    globs.homes.cache_clear()
