"""Bash reads of what a Read deny rule protects (issue 11, class 4): each trick takes away the
read-only auto-allow (the line asks; cox run denies), on a real home and workspace so globs,
symlinks and ``cd`` resolve as bash would resolve them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cox.policy.bash import classify, split
from cox.policy.permission import Engine
from cox.policy.reads import ReadGuard, literal_base, searches_recursively
from cox.policy.rules import parse_rule
from cox.protocol.types import ApprovalPolicy, PermissionMode, ToolCall


@pytest.fixture
def box(tmp_path: Path) -> tuple[Path, Path]:
    home, root = tmp_path / "home", tmp_path / "home" / "repo"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("SECRET-KEY\n")
    (home / ".ssh" / "config").write_text("Host x\n")
    (home / "notes.txt").write_text("fine\n")
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print(1)\n")
    (root / ".env").write_text("TOKEN=SECRET-ENV\n")
    (root / "sub").mkdir()
    (root / "sub" / ".env").write_text("TOKEN=SECRET-ENV2\n")
    return home, root


def _engine(box: tuple[Path, Path], deny: tuple[str, ...] = ("Read(./.env)",)) -> Engine:
    home, root = box
    return Engine.compile([], [], deny, home=home, roots=[root])


def _decide(e: Engine, line: str, mode: PermissionMode = PermissionMode.DEFAULT,
            policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST) -> str:
    c = classify(line)
    call = ToolCall(id="c", name="bash", input={"command": line}, risk=c.risk, subject=line,
                    segments=list(c.segments), opaque=c.opaque)
    return e.decide(call, mode, policy).kind


TRICKS = [
    # globs
    "cat ~/.ss?/id_*", "cat ~/.ssh/*", "cat ~/.s*/i*", "cat ~/.[s]sh/id_rsa", "head ~/*/id_rsa",
    "cat .en?", "cat .e*", "cat */.env", "cat ./*/.e[n]v",
    # the current folder and the home under other names
    "cat /proc/self/cwd/.env", "cat /proc/thread-self/cwd/.env", "cat /proc/self/root{home}/.ssh/id_rsa",
    "cat /proc/1/root{home}/.ssh/id_rsa", "cat /proc/$$/cwd/.env", "cat /proc/1/cwd/.env", "cat $PWD/.env",
    'cat "$PWD/.env"', "cat ${{PWD}}/.env", "cat ~+/.env", "cat $HOME/.ssh/id_rsa", "cat ${{HOME}}/.ssh/id_rsa",
    'cat "${{HOME}}"/.ssh/id_rsa', "cat ~-/.env", "cat /dev/fd/3 3<.env", "cat {home}/repo/../.ssh/id_rsa",
    "cat ~root/../{rel_home}/.ssh/id_rsa",
    # recursive readers
    "grep -d recurse TOKEN .", "grep -drecurse TOKEN", "grep --directories=recurse TOKEN .",
    "grep --directories recurse TOKEN", "grep --dir=rec TOKEN .", "grep --recursive TOKEN", "grep --recur TOKEN",
    "grep -rn TOKEN", "grep -Rl TOKEN", "rg TOKEN", "rg TOKEN .", "rg -uuu TOKEN", "ag TOKEN",
    "grep -r TOKEN ~", "rg KEY ~", "diff -rN . /tmp", "diff -r src ~", "diff --recursive . src", "ls -R ~",
    "git grep TOKEN", "git show HEAD:.env", "git log -p", "git diff HEAD~1",
    # lists of files read from a file or from input
    "sort --files0-from=list", "wc --files0-from=-", "du --files0-from=list", "wc --files0=list", "wc --f=list",
    "find . -print0 | wc --files0-from=-", "echo .env | xargs cat",
    # variables, cd, redirects, attached option values
    "cat $F", 'cat "$X"', "cd $X && cat id_rsa", "cd - && cat .env", "cd ~/.ssh && cat id_rsa", "cd ~ && cat .ssh/id_rsa",
    "cd src && cat ../.env", "(cd /tmp); cat .env", "cd /tmp || cat .env", "pushd ~/.ssh && cat id_rsa", "pushd +1 && cat id_rsa",
    "pushd && cat id_rsa", "popd && cat id_rsa",
    "cat < ~/.ssh/id_rsa", "cat <~/.ssh/id_rsa", "cat 0< .env", "cat 0<.env", "cat <'.env'", 'cat <"$HOME/.ssh/id_rsa"',
    "grep -f~/.ssh/id_rsa x", "grep -f.env x", "grep --file=.env x", "sort -T. .env", "cat '.env'", 'cat ".env"',
    "cat .\\env", "cat ./.env", "cat src/../.env", "date -f .env", "head -c 99 .env | base64",
    "cat ~/.ssh/{{id_rsa,config}}", "cat {{src,~/.ssh}}/id_rsa", "cat .{{x,env}}", "cat x{{1..3}}",
    # brace expansion of the raw word: quoted items, quotes around the group, nesting, sequences
    "cat .{{x,'env'}}", "cat ''.{{x,env}}", 'cat ~/.ssh/id_{{"rsa",x}}', "cat .e{{n,{{x,y}}}}v", "cat {{'.env',x}}",
    "cat ~/.ssh/id_rs{{Z..a}}a]", "cat .en{{a..z}}", "cat {{x,.e\\nv}}",
    # a redirect on a group feeds every command inside it
    "{{ cat; }} < ~/.ssh/id_rsa", "(cat) < .env", "if true; then cat; fi < .env", "for i in 1; do head -1; done < .env",
    "while true; do {{ head -1; }} < .env; done",
]


@pytest.mark.parametrize("line", TRICKS)
def test_read_only_line_that_may_read_a_denied_path_asks(box: tuple[Path, Path], line: str) -> None:
    home, _ = box
    line = line.format(home=home, rel_home=os.path.relpath(home, "/root" if os.path.isdir("/root") else "/"))
    e = _engine(box, deny=("Read(./.env)", "Read(./sub/.env)"))
    assert _decide(e, line) in ("ask", "deny"), line
    assert _decide(e, line, policy=ApprovalPolicy.NEVER) == "deny", line
    assert _decide(e, line, mode=PermissionMode.PLAN) in ("ask", "deny"), line


SYMLINKS = ["cat notes", "cat link/id_rsa", "grep KEY notes", "cat ./notes", "head -1 envlink", "cat link/*",
            "grep -R KEY .", "rg -L KEY", "diff -r . /tmp", "ls -RL ."]


@pytest.mark.parametrize("line", SYMLINKS)
def test_symlinks_in_the_workspace_are_resolved(box: tuple[Path, Path], line: str) -> None:
    home, root = box
    (root / "notes").symlink_to(home / ".ssh" / "id_rsa")
    (root / "link").symlink_to(home / ".ssh")
    (root / "envlink").symlink_to(root / ".env")
    e = _engine(box, deny=())
    if line.startswith("head"):
        e = _engine(box)
    assert _decide(e, line, policy=ApprovalPolicy.NEVER) == "deny", line


@pytest.mark.parametrize("line", [
    "cat src/a.py", "cat src/*.py", "grep -rn print src", "rg print src", "grep -r TOKEN src", "ls", "ls -la",
    "cat ~/notes.txt", "cat ~/*.txt", "diff src/a.py src/a.py", "grep --include=*.py -rn x src", "wc -l src/a.py",
    "echo $HOME", "printf '%s\\n' \"$X\"", "test -f .env", "echo .env", "git status", "git log --oneline",
    "sort src/a.py", "cd src && cat a.py", "ls ~", "grep -e r src/a.py", "cat src/{a,b}.py", "cat {src,sub}/a.py",
])
def test_reads_elsewhere_still_run_unasked(box: tuple[Path, Path], line: str) -> None:
    assert _decide(_engine(box), line) == "allow", line


def test_a_relative_rule_is_checked_for_recursive_readers_only_where_it_can_match(box: tuple[Path, Path]) -> None:
    e = _engine(box, deny=("Read(./.env)",))
    assert _decide(e, "rg TOKEN") == "ask"
    assert _decide(e, "rg TOKEN src") == "allow"  # src/.env is not ./.env
    e = _engine(box, deny=("Read(**/.env)",))
    assert _decide(e, "rg TOKEN src") == "ask"  # it could be src/.env
    assert _decide(e, "cat sub/.env") == "ask"


def test_the_reason_says_what_may_be_read(box: tuple[Path, Path]) -> None:
    e = _engine(box)
    c = classify("cat ~/.ss?/id_*")
    out = e.decide(ToolCall(id="c", name="bash", input={}, risk=c.risk, subject="cat ~/.ss?/id_*"))
    assert "id_rsa" in out.reason and "Read(~/.ssh/**)" in out.reason
    c = classify("cat $F")
    out = e.decide(ToolCall(id="c", name="bash", input={}, risk=c.risk, subject="cat $F"))
    assert "$F" in out.reason and "only known when it runs" not in out.reason or "could be" in out.reason


def test_a_glob_with_too_much_to_look_at_counts_as_may_read(box: tuple[Path, Path]) -> None:
    _, root = box
    many = root / "many"
    many.mkdir()
    for i in range(5000):
        (many / f"f{i}").touch()
    assert _decide(_engine(box), "cat many/*/x") == "ask"


def test_literal_base_is_public_and_knows_relative_rules() -> None:
    home, root = "/home/a", "/repo"

    def base(rule: str, r: str | None = root) -> str | None:
        return literal_base(parse_rule(rule, home=home, roots=[root]), home, r)

    assert base("Read(~/.ssh/**)") == "/home/a/.ssh"
    assert base("Read(//etc/secret/*)") == "/etc/secret"
    assert base("Read(/etc/x)") == "/etc/x"
    assert base("Read(/*)") == "/"
    assert base("Read(./.env)") == "/repo/.env"
    assert base("Read(.env)") == "/repo/.env"
    assert base("Read(**/.env)") == "/repo"
    assert base("Read(secrets/)") == "/repo/secrets"
    assert base("Read(./.env)", None) is None
    assert base("Read(~/.aws/**)", None) == "/home/a/.aws"


@pytest.mark.parametrize(("text", "want"), [
    ("grep -r x", "plain"), ("grep -R x", "follow"), ("grep -d recurse x", "plain"), ("grep --directories=rec x", "plain"),
    ("grep -d skip x", None), ("grep x", None), ("rg x", "plain"), ("rg -L x", "follow"), ("rg --follow x", "follow"),
    ("diff -r a b", "follow"), ("diff --no-dereference -r a b", "plain"), ("diff a b", None), ("ls -R", "plain"),
    ("ls -la", None), ("grep --dereference-recursive x", "follow"),
])
def test_searches_recursively(text: str, want: str | None) -> None:
    assert searches_recursively(text) == want


def test_refuses_checks_the_path_as_written_and_resolved(box: tuple[Path, Path]) -> None:
    home, root = box
    (root / "notes").symlink_to(home / ".ssh" / "id_rsa")
    guard = _engine(box).read_guard()
    assert isinstance(guard, ReadGuard)
    assert guard.refuses(str(root / "notes")) is not None
    assert guard.refuses(str(root / ".env")) is not None
    assert guard.refuses(str(root / "src" / "a.py")) is None
    assert guard.refuses(str(root), below=True) is not None  # ./.env is in it
    assert guard.refuses(str(root / "src"), below=True) is None


def test_the_guard_is_compiled_once_per_engine(box: tuple[Path, Path]) -> None:
    e = _engine(box)
    assert e.read_guard() is e.read_guard()
    assert split("cat x").commands  # the parse the guard reads


@pytest.mark.parametrize("line", [
    "cat //home/alice/.ssh/id_rsa", 'cat ~/".ssh"/id_rsa', "cat ~/.ssh/id_rs\\a", "cat ~/.ssh/'id'_rsa",
    "cat $'/home/alice/.ssh/id_rsa'", "cat ~/./.ssh//id_rsa", "cat /home/alice/../alice/.ssh/id_rsa",
    "tail -f ~/.ssh/id_rsa", "cat ~/.ssh/id_rsa | head", "base64 < ~/.ssh/id_rsa", "jq . ~/.aws/config",
])
def test_spellings_of_one_denied_path(line: str) -> None:
    from tests.policy.helpers import engine, kind

    assert kind(engine(), line) == "ask", line


def test_the_account_home_is_protected_when_home_points_elsewhere() -> None:
    import pwd

    from tests.policy.helpers import engine, kind

    own = pwd.getpwuid(os.geteuid()).pw_dir
    if own in ("/", "/nonexistent") or own == "/home/alice":
        pytest.skip(f"this account's home ({own}) cannot be told from the test home")
    e = engine()
    assert kind(e, f"cat {own}/.ssh/id_rsa") == "ask"
    assert kind(e, f"rg key {own}") == "ask"
    assert e.denied_path(f"{own}/.ssh/id_rsa") is not None
    assert kind(e, "cat <<< ~/.ssh/id_rsa") == "allow"  # a here-string is text, not a file


@pytest.mark.parametrize(("line", "want"), [
    ("cat .e'n'\\v", "cat .env"), ("cat < .e'n'\\v", "cat < .e'n'\\v"), ("'r'\\m -rf x", "rm -rf x"),
    ('"r"\\m -rf x', "rm -rf x"), ("echo 'a'\\b c", "echo ab c"), ("echo a b", "echo a b"),
])
def test_a_quote_followed_by_an_escape_is_one_word(line: str, want: str) -> None:
    """tree-sitter-bash splits ``'a'\\b`` into two words; bash reads one (``ab``)."""
    assert split(line).commands[0].text == want


def test_split_words_do_not_dodge_rules(box: tuple[Path, Path]) -> None:
    from cox.protocol.types import PermissionMode as Mode
    from tests.policy.helpers import engine, kind

    assert kind(engine(allow=["Bash"], deny=["Bash(rm:*)"]), "'r'\\m -rf x", mode=Mode.BYPASS) == "deny"
    assert _decide(_engine(box), "cat < .e'n'\\v") == "ask"
