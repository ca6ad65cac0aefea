"""Bash splitting and the read-only classifier, one sentence of the issue at a time (item 3)."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from cox.policy.bash import canonical, classify, split
from cox.protocol.types import Risk


def segments(line: str) -> list[str]:
    return list(split(line).segments)


def forms(line: str) -> set[str]:
    s = split(line)
    return {f for c in s.commands for f in c.forms} | set(s.extra_forms)


# "split a line into its simple commands on ;, &&, ||, |, & and newlines"


@pytest.mark.parametrize("sep", [";", "&&", "||", "|", "&", "\n", "|&"])
def test_split_on_every_operator(sep: str) -> None:
    assert segments(f"git status {sep} npm test") == ["git status", "npm test"]


def test_trailing_background_and_comments() -> None:
    assert segments("npm start & # rm -rf x") == ["npm start"]


# "including commands nested in subshells, $(…), loop and if bodies"


@pytest.mark.parametrize(("line", "inner"), [
    ("(cd x && make)", {"cd x", "make"}),
    ("{ ls; make; }", {"ls", "make"}),
    ("echo $(whoami)", {"whoami"}),
    ("echo `whoami`", {"whoami"}),
    ("diff <(ls a) <(ls b)", {"ls a", "ls b"}),
    ("for f in a b; do rm $f; done", {"rm $f"}),
    ("while true; do make; done", {"true", "make"}),
    ("if [ -f x ]; then rm x; elif true; then make; else ls; fi", {"rm x", "make", "ls"}),
    ("case $x in a) rm y;; *) ls;; esac", {"rm y", "ls"}),
    ("f() { rm -rf x; }; f", {"rm -rf x", "f"}),
    ("! git diff --quiet", {"git diff --quiet"}),
    ("X=$(rm -rf y)", {"rm -rf y"}),
    ("cat <<EOF\n$(rm -rf z)\nEOF", {"rm -rf z"}),
])
def test_nested_commands_are_found(line: str, inner: set[str]) -> None:
    assert inner <= set(segments(line))


# "strip the wrappers Claude Code strips"


@pytest.mark.parametrize("line", [
    "nohup npm test", "timeout 5 npm test", "timeout -s KILL 10s npm test", "timeout --kill-after=2 5 npm test",
    "time npm test", "time -p npm test", "nice npm test", "nice -n 10 npm test", "nice -5 npm test",
    "stdbuf -oL npm test", "stdbuf -o L -e 0 npm test", "command npm test", "builtin npm test",
    "noglob npm test", "xargs npm test", "nohup timeout 5 nice -n 2 npm test",
])
def test_stripped_wrappers(line: str) -> None:
    s = split(line)
    assert s.segments == ("npm test",)
    assert not s.opaque
    assert line.split()[0] in " ".join(forms(line))  # the written form stays visible to deny rules


def test_command_v_is_a_lookup_not_a_wrapper() -> None:
    assert segments("command -v git") == ["command -v git"]
    assert classify("command -v git").risk is Risk.READ_ONLY


def test_wrapper_with_options_it_does_not_understand_is_opaque() -> None:
    s = split("timeout --weird 5 rm -rf x")
    assert s.opaque and "rm -rf x" in forms("timeout --weird 5 rm -rf x")


# "re-parse eval …, sh -c '…', bash -c "…" strings with the same walk"


@pytest.mark.parametrize("line", [
    "eval 'rm -rf x'", 'eval "rm  -rf x"', "sh -c 'rm -rf x'", 'bash -c "rm -rf x"', "bash -lc 'ls; rm -rf x'",
    "zsh -e -c 'rm -rf x'", "sh -c \"sh -c 'rm -rf x'\"", "eval eval rm -rf x", "trap 'rm -rf x' EXIT",
    "sudo sh -c 'rm -rf x'",
])
def test_strings_run_as_scripts_are_reparsed(line: str) -> None:
    assert "rm -rf x" in forms(line)
    assert split(line).opaque


# "Wrappers that run another command and are not on that list make their command opaque"


@pytest.mark.parametrize("line", [
    "env rm -rf x", "env FOO=1 rm -rf x", "sudo rm -rf x", "sudo -u root rm -rf x", "watch -n 1 rm -rf x",
    "setsid rm -rf x", "flock /tmp/l rm -rf x", "find . -exec rm -rf x \\;", "xargs -0 rm -rf x",
    "sudo /bin/rm -rf x", "ssh host rm -rf x",
])
def test_opaque_wrappers_show_the_wrapped_command_to_deny(line: str) -> None:
    s = split(line)
    assert s.opaque
    assert "rm -rf x" in forms(line)
    assert classify(line).risk in (Risk.EXEC, Risk.DESTRUCTIVE)


# "A line is opaque when it has $(…) or backticks, <(…), eval, sh -c/bash -c, an output redirect
#  to a path (2>&1 and /dev/null are fine) or a parse error"


@pytest.mark.parametrize("line", [
    "echo $(id)", "echo `id`", "diff <(ls) x", "tee >(cat)", "eval ls", "sh -c ls", "bash -c ls",
    "ls > out.txt", "ls >> log", "ls &> all", "ls 2> err", "ls >| f", "ls >& f", "echo 'unterminated",
    "ls )", "if true; then", "ls > $OUT", "[[ 1 -eq 'a[$(id)]' ]]", "$CMD --help", "${TOOL} x", "r* -rf x",
    "{rm,-rf,x}",
])
def test_opaque_lines(line: str) -> None:
    s = split(line)
    assert s.opaque, s
    assert classify(line).opaque
    assert classify(line).risk is not Risk.READ_ONLY


@pytest.mark.parametrize("line", [
    "ls 2>&1", "ls > /dev/null", "ls 2>/dev/null", "ls &>/dev/null", "ls >&2", "ls 1>&2 2>&1", "ls < in",
    "grep x <<< 'text'", "cat <<'EOF'\nplain\nEOF", "echo '$(not run)'", "ls >&-",
])
def test_harmless_redirects_and_literal_dollar_parens_are_not_opaque(line: str) -> None:
    assert not split(line).opaque, split(line)


def test_a_parse_error_never_raises_and_keeps_pieces_for_deny() -> None:
    s = split("ls ) rm -rf x")
    assert s.opaque and "rm -rf x" in forms("ls ) rm -rf x")


# "export/declare/unset and variable assignments are never ReadOnly, except a leading assignment
#  of LC_ALL, LANG, TZ or NO_COLOR"


@pytest.mark.parametrize("line", [
    "export A=1", "declare -x A=1", "unset A", "local a", "readonly A", "A=1", "A=1 B=2", "PATH=/tmp ls",
    "FOO=1 git status", "LC_ALL=C FOO=1 ls", "A=(1 2)",
])
def test_assignments_are_never_read_only_and_opaque(line: str) -> None:
    c = classify(line)
    assert c.risk is not Risk.READ_ONLY
    assert c.opaque


@pytest.mark.parametrize("var", ["LC_ALL", "LANG", "TZ", "NO_COLOR"])
def test_leading_locale_assignment_is_as_if_absent(var: str) -> None:
    c = classify(f"{var}=C git status")
    assert c.risk is Risk.READ_ONLY and not c.opaque
    assert c.segments == ("git status",)


def test_a_leading_assignment_does_not_hide_the_command_from_deny() -> None:
    assert "rm -rf x" in forms("FOO=1 rm -rf x")


# canonical form


@pytest.mark.parametrize(("a", "b"), [
    ('git "status"', "git status"), ("git   status", "git status"), ("npm  'run'  test", "npm run test"),
    ("r\\m -rf x", "rm -rf x"), ('echo "a b"', "echo 'a b'"), ("LC_ALL=C ls", "ls"),
])
def test_canonical_forms_agree(a: str, b: str) -> None:
    assert segments(a) == segments(b)


def test_quoted_and_unquoted_specials_differ() -> None:
    assert segments("rm -rf ~") != segments("rm -rf '~'")
    assert segments("ls *.py") != segments("ls '*.py'")


def test_a_quoted_word_that_looks_like_an_assignment_stays_a_command_name() -> None:
    c = classify('"FOO=1" git')
    assert c.segments == ("'FOO=1' git",) and not c.opaque


def test_canonical_of_rule_text() -> None:
    assert canonical("git  'commit'") == "git commit"
    assert canonical("nohup npm test") == "nohup npm test"
    assert canonical("nohup npm test", stripped=True) == "npm test"
    assert canonical("make && make install") == "make && make install"


# "A read-only classifier rates known read-only commands ReadOnly"


@pytest.mark.parametrize("line", [
    "ls -la", "cat README.md", "head -n 5 x", "tail x", "git status", "git diff HEAD~1", "git log --oneline",
    "grep -rn foo src", "rg foo", "find . -name '*.py'", "wc -l x | sort | uniq -c", "pwd", "echo hi",
    "git -C sub status", "git branch", "git --no-pager show HEAD", "cd src && ls", "ls | head > /dev/null",
])
def test_read_only_commands(line: str) -> None:
    assert classify(line).risk is Risk.READ_ONLY, line


@pytest.mark.parametrize("line", [
    "find . -exec cat {} \\;", "find . -delete", "sort -o out x", "rg --pre ./run x", "git diff --output=x",
    "git branch -D old", "git -c core.pager=evil log", "npm test", "sed -i s/a/b/ x", "ls > out", "tee x",
    "date -s 2020-01-01", "hostname evil", "uniq a b", "less x", "git push", "curl x",
])
def test_not_read_only(line: str) -> None:
    assert classify(line).risk is not Risk.READ_ONLY, line


@pytest.mark.parametrize("line", [
    "rm -rf x", "git reset --hard", "git push --force", "git clean -fdx", "dd if=/dev/zero of=x", "sudo rm x",
    "find . -delete",
])
def test_destructive(line: str) -> None:
    assert classify(line).risk is Risk.DESTRUCTIVE


# robustness


@pytest.mark.parametrize("line", [
    "", " ", "\0", "\ud800", "((((((((((((((((((((", "$(" * 500, "a" * 100_000, "'" * 999, "\\", "<<EOF",
    "sh -c " + "'sh -c " * 30, "eval " * 200 + "rm x", "`" * 301,
])
def test_never_raises(line: str) -> None:
    s = split(line)
    assert isinstance(s.commands, tuple)
    classify(line)


def test_deep_nesting_is_opaque_and_still_denied() -> None:
    from .helpers import engine, kind

    line = "eval " * 20 + "rm -rf x"
    assert split(line).opaque
    assert kind(engine(deny=["Bash(rm:*)"]), line) == "deny"
    line = "rm -rf x"
    for _ in range(8):
        line = f"sh -c {shlex.quote(line)}"
    assert split(line).opaque
    assert kind(engine(deny=["Bash(rm:*)"]), line) == "deny"


def test_importing_policy_does_not_import_tree_sitter() -> None:
    code = ("import sys, cox.policy, cox.policy.permission, cox.policy.bash, cox.policy.redact; "
            "from cox.policy import Engine; Engine.compile(['Bash(git:*)'], [], [], home='/h', roots=['/r']); "
            "print('tree_sitter' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_brace_then_astral_character_does_not_crash_the_process() -> None:
    # tree-sitter-bash 0.25.1 segfaults on "{" followed by a 4-byte UTF-8 character
    # (tree-sitter/tree-sitter-bash#337); split swaps such characters out before parsing.
    lines = ["{\U00031860", "\x1e\U0001823a{\U000b7472", "{" + chr(0x10FFFF), "echo {a,\U0001f600} && rm x"]
    code = ("import sys; from cox.policy.bash import split; "
            f"ss = [split(x) for x in {lines!r}]; print(ss[-1].segments)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "'rm x'" in out.stdout and "\U0001f600" in out.stdout
