"""Issue 11, class 3: deny and ask rules see the program whatever hides it: a path, a wrapper or
shell (path-qualified too), ``env -S``, ``trap --``, ``su -c``, ``runuser -c``, ``script -c``, a
shell's option flags, a grouped command, git's global options, brace expansion. Under
bypassPermissions a deny rule is the only guard, so each case is decided in that mode."""

from __future__ import annotations

import pytest

from cox.policy.bash import split
from cox.protocol.types import PermissionMode, Risk

from .helpers import decide, engine, kind

DENY = engine(deny=["Bash(rm:*)", "Bash(touch:*)", "Bash(git push:*)"])
ASK = engine(ask=["Bash(rm:*)", "Bash(git push:*)"])

RM = [
    "/bin/rm -rf x", "/usr/bin/rm x", "./rm x", "'/bin/rm' x", "/usr/bin/env rm x", "/usr/bin/env -i rm x",
    "/bin/sh -c 'rm x'", "/usr/bin/bash -c 'rm x'", "/usr/bin/xargs rm", "/usr/bin/xargs -0 rm", "/usr/bin/nohup rm x",
    "/usr/bin/timeout 5 rm x", "/usr/bin/sudo rm x", "env -S 'rm x'", "env -S'rm x'", "env --split-string='rm x'",
    "env --split-s='rm x'", "env -iS 'rm x'", "env -S'rm\\_x'", "env -u HOME -S 'rm -rf x'", "trap -- 'rm x' EXIT",
    "trap -p -- 'rm x' EXIT", "su -c 'rm x'", "su root -c 'rm x'", "su --command='rm x'", "su -c'rm x'",
    "runuser -u nobody -c 'rm x'", "runuser -c 'rm x' nobody", "script -c 'rm x' /dev/null", "script -qc 'rm x'",
    "script --command='rm x'", "bash --rcfile x -c 'rm x'", "bash --init-file x -c 'rm x'", "bash -o posix -c 'rm x'",
    "sh -ec 'rm x'", "bash -xec 'rm x'", "bash -c -- 'rm x'", "bash --norc --posix -c 'rm x'", "fish -c 'rm x'",
    "fish --command='rm x'", "time { rm x; }", "time -p { rm x; }", "! { rm x; }", "{ rm x; }", "( rm x )",
    "time ( rm x )", "{ { rm x; }; }", "if true; then { rm x; }; fi", "{rm,-rf,x}", "{r,}m -rf x",
    "echo hi; {rm,x}", "sudo {rm,x}", "xargs {rm,x}", "echo 'rm x' | sh", "printf 'rm x' | bash",
    "sh <<< 'rm x'", "bash <<EOF\nrm x\nEOF", "rm${IFS}-rf${IFS}x", "r${x}m -rf x", "flock /tmp/l -c 'rm x'",
    "watch 'rm x'", "ssh host 'rm -rf x'", "nice -n 5 /bin/rm x", "busybox rm x", "find . -exec /bin/rm {} +",
    "git -c alias.x='!rm y' x", "command /bin/rm x", "exec rm x", "'r'm x", "r\"\"m x", "\\rm x", "$'\\x72m' x",
    "git -c core.pager='rm x' log", "GIT_PAGER='rm x' git log", "GIT_SSH_COMMAND='rm x' git fetch",
    "source /dev/stdin <<< 'rm x'", ". <(echo 'rm x')", "bash /dev/stdin <<< 'rm x'", "bash <(echo 'rm x')",
    "cat <<EOF | sh\nrm x\nEOF", "cat <<< 'rm x' | bash", "echo 'rm x' | bash -", "$SHELL -c 'rm x'",
    "env sh <<< 'rm x'", "'r'\\m x", "\"r\"\\m x", "time if true; then rm x; fi", "! { if true; then rm x; fi; }", "time { { rm x; }; }",
]


@pytest.mark.parametrize("line", RM)
def test_deny_sees_rm_however_it_is_hidden(line: str) -> None:
    out = decide(DENY, line, PermissionMode.BYPASS)
    assert out.kind == "deny", (line, split(line))
    assert kind(ASK, line) == "ask"


GIT_PUSH = [
    "git -C . push", "git -C sub push origin main", "git --git-dir=.git push", "git --git-dir .git push",
    "git --work-tree=. push", "git -c a=b push", "git --git-dir=x -c a=b push", "git --no-pager push",
    "git -P -C . --bare push", "git --namespace=x push", "/usr/bin/git -C . push", "env git -C . push",
    "sudo git -C . push", "git -c alias.p=push p", "git -c alias.p=push -C . p origin", "time git -C . push",
    "git --exec-path=/x push", "bash -c 'git -C . push'", "git {push,origin}",
]


@pytest.mark.parametrize("line", GIT_PUSH)
def test_a_git_rule_sees_the_sub_command_past_the_global_options(line: str) -> None:
    assert decide(DENY, line, PermissionMode.BYPASS).kind == "deny", (line, split(line))


def test_the_reason_names_the_form_the_rule_matched() -> None:
    out = decide(DENY, "git -C . push origin", PermissionMode.BYPASS)
    assert "git push origin" in out.reason
    out = decide(DENY, "/usr/bin/env rm -rf src", PermissionMode.BYPASS)
    assert "`rm -rf src`" in out.reason


@pytest.mark.parametrize("line", [
    "git status", "git log --grep push", "git commit -m 'git push later'", "echo rm", "grep -rn 'rm -rf' .",
    "git -C . status", "ls {a,b}", "echo {rm,x}", "git show push", "git -C push status",
])
def test_a_deny_rule_does_not_fire_on_lines_that_do_not_run_the_program(line: str) -> None:
    assert decide(DENY, line, PermissionMode.BYPASS).kind == "allow", split(line)


@pytest.mark.parametrize("line", [
    "/usr/bin/env rm x", "/bin/sh -c 'ls'", "/usr/bin/nohup git status", "./nohup git status", "{ls,-la}",
    "env -S 'ls'", "su -c ls", "time { rm x; }", "git -c core.pager=sh log", "sh <<< ls", "echo ls | sh",
])
def test_a_wrapper_or_brace_that_hides_the_program_makes_the_line_opaque(line: str) -> None:
    s = split(line)
    assert s.opaque or s.risk is not Risk.READ_ONLY, s
    allow = engine(allow=["Bash(git status:*)", "Bash(ls:*)", "Bash(git log:*)"])
    assert kind(allow, line) == "ask", s


def test_a_path_qualified_wrapper_is_not_stripped_for_allow_rules() -> None:
    # ``./nohup`` is whatever the repository put there, not the wrapper Claude Code strips
    allow = engine(allow=["Bash(git status:*)"])
    assert kind(allow, "nohup git status") == "allow"
    assert kind(allow, "./nohup git status") == "ask"
    assert kind(allow, "/usr/bin/nohup git status") == "ask"


def test_grouped_commands_are_judged_as_their_commands() -> None:
    assert split("time { ls; git status; }").segments == ("ls", "git status")
    assert split("! { git diff --quiet; }").segments == ("git diff --quiet",)
    assert split("time { ls; }").risk is Risk.READ_ONLY
