"""Issue 11, class 2: "read-only" only for (program, option) forms known to be read-only, with
GNU and git long-option abbreviations resolved; bash builtins that evaluate subscripts or prompt
strings, or assign variables, are never read-only; the reasons say what really happens."""

from __future__ import annotations

import pytest

from cox.policy.bash import classify, split
from cox.policy.options import GIT, PROGRAMS, Spec, operands
from cox.protocol.types import Risk

# each one writes a file, runs a program or changes the system when it runs
WRITES_OR_RUNS = [
    "sort --out=F x", "sort --outp=F x", "sort -o F x", "sort -oF x", "sort -ro F x", "sort --compress-prog=sh x",
    "sort --compress-program=sh x", "sort -T /tmp x", "sort --temp=/tmp x", "sort --files0-from=list",
    "git grep --open=vi x", "git grep --open-files-in-pager=vi x", "git grep -Ovi x", "git grep -O vi x",
    "git ls-remote --upload-pack=touch origin", "git ls-remote --upl=touch origin", "git ls-remote --exec=x o",
    "git log --output=x", "git log --out=x", "git log -p --output x", "git show --output=x", "git diff --output=x",
    "git diff --outp=x", "git whatchanged --output=x", "git rev-list --output=x HEAD", "git stash list --output=x",
    "git stash show --output=x", "git reflog show --output=x", "git shortlog --output=x",
    "git diff --ext-diff", "git log --ext-diff -p", "git diff --textconv", "git cat-file --textconv HEAD:a",
    "git cat-file --filters HEAD:a", "git grep --textconv x", "git log --show-signature",
    "file -C", "file --compile", "file --comp", "file -m magic x", "file -z x", "file -p x", "file -f names",
    "date --set=2020-01-01", "date --se=2020-01-01", "date -s 2020-01-01", "date 0101", "date -us x",
    "tree -o out", "tree -R -H x", "tree --fromfile x",
    "rg --pre ./run x", "rg --pre=./run x", "rg -z x", "rg --search-zip x", "rg --pre-glob '*' x",
    "fd -x rm", "fd --exec rm", "fd -X rm", "fd -l", "fd --list-details",
    "find . -exec cat {} \\;", "find . -execdir cat {} +", "find . -ok rm {} \\;", "find . -fprint out",
    "find . -fls out", "find . -fprintf out %p", "find -files0-from list",
    "du --files0-from=list", "du --files0=list", "wc --files0-from=list", "du -X pats", "diff -l a b",
    "diff --paginate a b", "diff --to-file=x a", "diff --from-file=x a", "hostname evil", "hostname -F f",
    "hostname -b x", "uniq a b", "git branch new", "git tag v1", "git config user.name x", "git config -e",
    "git config --edit", "git remote add o url", "git stash", "git stash push", "git worktree add x",
    "git reflog expire --all", "git reflog delete HEAD@{1}", "git -c core.pager=x log", "git --exec-path=x log",
    "git --config-env=a=B log", "printf -v PATH x", "printf -vPATH x",
]


@pytest.mark.parametrize("line", WRITES_OR_RUNS)
def test_options_that_write_or_run_are_never_read_only(line: str) -> None:
    assert classify(line).risk is not Risk.READ_ONLY, split(line)


@pytest.mark.parametrize("line", [
    "ls --frobnicate", "cat --pretend", "sort --bogus x", "git log --not-an-option", "grep --xyz a b", "ls -j",
    "git status --frob", "rg --nope x", "find . -nosuch", "jq --nope .", "head --x", "git frobnicate",
])
def test_unknown_options_of_an_allowlisted_program_are_exec(line: str) -> None:
    assert classify(line).risk is Risk.EXEC


@pytest.mark.parametrize("line", [
    "sort -rn x", "sort -k2,2 -t, x", "sort --key=2 --field-sep=, x", "sort --numeric x", "sort -u x", "uniq -c x", "git log --oneline -5", "git log --onel", "git log -p --stat", "git log --format=%H",
    "git log --pretty=oneline", "git log --author alice", "git diff --stat HEAD~1", "git diff --cached",
    "git diff --no-ext-diff", "git show HEAD:README.md", "git status -sb", "git status --porc", "git grep -n foo",
    "git grep --line-number foo", "git ls-remote --heads origin", "git branch -a", "git branch --list 'f*'",
    "git tag -l 'v*'", "git tag", "git remote -v", "git remote get-url origin", "git stash list",
    "git stash show -p", "git config --get user.name", "git config -l", "git reflog", "git reflog show -3",
    "git worktree list", "git rev-parse --show-toplevel", "git -C sub status", "git --no-pager log",
    "git rev-list --count HEAD", "git cat-file -p HEAD", "git blame -L 1,5 a.py", "git ls-files -z",
    "date +%s", "date -u +%F", "date --iso-8601=seconds", "date -d @0", "file -b x", "file --mime-type x",
    "tree -L 2 -a", "rg -n foo src", "rg --type py -i foo", "rg -uu foo", "fd -e py", "find . -name '*.py'",
    "find . -type f -newer a -print0", "find . -maxdepth 2 -name x -o -name y", "find . -newermt 2020-01-01",
    "du -sh .", "du --max-depth=1", "wc -l x", "diff -u a b", "diff -ru a b", "cut -d: -f1 x", "head -5 x",
    "tail -n +3 x", "tail -f log", "grep -rn foo .", "grep -C3 -e foo x", "jq -r '.a' f.json",
    "jq --arg k v '.[$k]' f", "stat -c %s x", "column -t x", "ls -la --color=auto", "nproc", "uname -a",
    "test -f x", "[ -d x ]", "test -v name", "printf '%s\\n' a", "echo $((6*7))", "echo $(( 0x1f + 2#101 ))",
    "(( 6 * 7 ))", "[[ 1 -lt 2 ]]", "echo ${a[0]} ${a[@]} ${s:1:2} ${x:-d} ${#x} ${!pre*}",
])
def test_known_read_only_forms_stay_read_only(line: str) -> None:
    c = classify(line)
    assert c.risk is Risk.READ_ONLY and not c.opaque, split(line)


def test_literal_arithmetic_is_plain_arithmetic_not_command_substitution() -> None:
    s = split("echo $((6*7))")
    assert not s.opaque and not any("substitution" in r for r in s.reasons)


@pytest.mark.parametrize(("line", "why"), [
    ("echo $((x))", "arithmetic names a variable"),
    ("echo $((x+1))", "arithmetic names a variable"),
    ("(( n > 2 ))", "arithmetic names a variable"),
    ("echo $(( 'a[1]' ))", "arithmetic names a variable"),
    ("for ((i=0; i<3; i++)); do echo; done", "arithmetic names a variable"),
    ("echo $(( $(id) ))", "command substitution"),
    ("[[ $x -eq 1 ]]", "evaluates operands as arithmetic"),
    ("[[ x -lt 2 ]]", "evaluates operands as arithmetic"),
    ("[[ -v 'a[$(id)]' ]]", "command substitution"),
    ("[[ -v a[$i] ]]", "subscript"),
    ("test -v 'a[$(id)]'", "subscript"),
    ("[ -v 'a[$(id)]' ]", "subscript"),
    ("test -v \"$name\"", "subscript"),
    ("printf -v 'a[$(id)]' x", "assigns a variable"),
    ("printf -v PATH /tmp", "assigns a variable"),
    ("read -r PATH", "assigns variables"),
    ("mapfile -t a < f", "assigns variables"),
    ("let x=1", "assigns variables"),
    ("echo ${x@P}", "prompt string"),
    ("echo ${!x}", "indirectly"),
    ("echo ${a[i]}", "array subscript"),
    ("echo ${s:n}", "substring offset"),
    ("echo ${s:0:$n}", "substring offset"),
    ("alias ls='rm -rf x'", "changes what later commands run"),
    ("hash -p /tmp/evil ls", "changes what later commands run"),
])
def test_what_bash_evaluates_makes_a_line_opaque_with_an_honest_reason(line: str, why: str) -> None:
    s = split(line)
    assert s.opaque, s
    assert s.risk is not Risk.READ_ONLY
    assert any(why in r for r in s.reasons), s.reasons


@pytest.mark.parametrize("line", [
    "sort $f", "sort *", "sort *.txt", "git log $x", "git diff *", "find . $x", "find . -name x *", "date $d",
    "file *", "tree $x", "rg $x foo", "uniq $a", "diff * b",
])
def test_a_word_only_known_at_run_time_can_hide_an_option_of_a_program_that_has_dangerous_ones(line: str) -> None:
    # a file named --output=x turns ``sort *`` into ``sort --output=x …``
    assert classify(line).risk is not Risk.READ_ONLY


@pytest.mark.parametrize("line", ["cat *", "cat \"$f\"", "ls $d", "grep -n foo *", "head -n 3 *.py", "tail $f",
                                  "wc -l src/*.py", "du -sh *"])
def test_a_program_with_no_option_that_writes_or_runs_takes_words_known_at_run_time(line: str) -> None:
    assert classify(line).risk is Risk.READ_ONLY


@pytest.mark.parametrize("line", ["/bin/ls", "./ls -la", "/usr/bin/git status", "bin/cat x"])
def test_a_path_qualified_program_is_never_read_only(line: str) -> None:
    # ``./ls`` is whatever the repository put there
    assert classify(line).risk is not Risk.READ_ONLY


def test_every_prefix_resolves_like_getopt_long() -> None:
    spec = Spec("o:", "output= outline quiet")
    assert spec.resolve("output") == "arg"
    assert spec.resolve("outp") == "arg"
    assert spec.resolve("out") is None  # ambiguous: output, outline
    assert spec.resolve("q") == "flag"
    assert spec.resolve("nothing") is None
    assert operands(spec, ["--outp", "F", "a"]) == ["a"]
    assert operands(spec, ["-oF", "a"]) == ["a"]
    assert operands(spec, ["-o", "F", "--", "--quiet"]) == ["--quiet"]
    assert operands(spec, ["-x"]) is None
    assert operands(spec, ["--quiet=1"]) is None  # a flag given a value is an error, not a guess


def test_the_allowlist_names_real_options_of_the_installed_programs() -> None:
    """Resolving abbreviations against the listed names is only safe if every listed long name is
    real: check each against the program's own --help on this machine (programs that do not
    abbreviate, builtins and programs absent here are skipped)."""
    import re
    import shutil
    import subprocess

    checked = 0
    for name, spec in PROGRAMS.items():
        if not spec.abbrev or not spec.longs or shutil.which(name) is None or name in ("sleep", "rev", "groups"):
            continue
        out = subprocess.run([name, "--help"], capture_output=True, text=True, check=False)
        text = out.stdout + out.stderr
        for long in spec.longs:
            if long in ("help", "version"):
                continue
            generic = re.sub(r"^(old|new|unchanged|changed)-(group|line)-format$", r"TYPE-\2-format", long)
            assert f"--{long}" in text or f"{generic}" in text, f"{name} --{long} is not in {name} --help"
            checked += 1
    assert checked > 200
    assert GIT["log"].resolve("output") is None and GIT["grep"].resolve("open-files-in-pager") is None
