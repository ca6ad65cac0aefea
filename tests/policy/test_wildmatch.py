"""The one glob translator (cox.policy.wildmatch) against the real thing: git for the
gitignore dialect, bash (globstar) for the shell dialect, on the cases where cox's translators
used to disagree with them (braces in .gitignore, literal braces, POSIX classes, ``**`` inside a
segment), plus the rule dialect's own promises."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cox.actors.tools.search import Ignorer, _walk_all, glob_matcher
from cox.policy.wildmatch import translate

FILES = [
    "a.txt", "b.txt", "{a,b}.txt", "{a}.txt", "ab", "a{b", "c.py", "x1.log", "x9.log", "xa.log",
    "[ab].md", "a.md", "foo-bar", "fooXbar", "src/a.txt", "src/c.py", "src/deep/x.py", "d/e/f.c",
    "d/f.c", "d/g.h", "n/x1.log", "n/keep.log",
]

GITIGNORE_CASES = [
    "{a,b}.txt",
    "*.{py,txt}",
    "{a}.txt",
    "x[[:digit:]].log",
    "x[!0-9].log",
    "x[^[:alpha:]].log",
    "[ab].md",
    "\\[ab\\].md",
    "**/f.c",
    "d/**",
    "d/**/f.c",
    "a**.txt",
    "foo**bar",
    "src/*.txt",
    "/a.txt",
    "*.log\n!x1.log",
    "n/*\n!n/keep.log",
    "?.py",
    "x[z-a].log",
]

SHELL_CASES = [
    "{a,b}.txt",
    "*.{py,txt}",
    "{a}.txt",
    "a{b",
    "x{1..3}.log",
    "x[[:digit:]].log",
    "x[!0-9].log",
    "[ab].md",
    "\\[ab\\].md",
    "**/*.py",
    "**/f.c",
    "d/**",
    "a**.txt",
    "src/{a,c}.*",
    "{src,d}/**/*.{py,c}",
    "foo[-X]bar",
]


def _tree(root: Path) -> Path:
    for rel in FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    return root


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not on PATH")
@pytest.mark.parametrize("gitignore", GITIGNORE_CASES)
def test_the_gitignore_fallback_hides_what_git_hides(tmp_path: Path, gitignore: str) -> None:
    root = _tree(tmp_path / "ws")
    _git(root, "init", "-q")
    (root / ".gitignore").write_text(gitignore + "\n")
    git_sees = {p for p in _git(root, "ls-files", "--others", "--exclude-standard", "-z").split("\0") if p}
    ours: list[str] = []
    _walk_all(root, "", Ignorer.for_root(root, root), None, ours)
    assert set(ours) == git_sees


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not on PATH")
@pytest.mark.parametrize("pattern", SHELL_CASES)
def test_the_shell_dialect_matches_what_bash_globs(tmp_path: Path, pattern: str) -> None:
    root = _tree(tmp_path / "ws")
    script = f"shopt -s globstar dotglob nullglob; for f in {pattern}; do printf '%s\\0' \"$f\"; done"
    out = subprocess.run(["bash", "-c", script], cwd=root, check=True, capture_output=True, text=True).stdout
    bash_sees = {p for p in out.split("\0") if p and (root / p).is_file()}
    matches = glob_matcher(pattern, basename_if_no_slash=False)
    assert {f for f in FILES if matches(f)} == bash_sees


def test_braces_are_literal_in_gitignore_and_rules_and_alternatives_in_the_shell() -> None:
    def full(pattern: str, dialect: str, path: str) -> bool:
        return re.fullmatch(translate(pattern, dialect), path, re.DOTALL) is not None  # type: ignore[arg-type]

    assert full("{a,b}.txt", "shell", "a.txt") and not full("{a,b}.txt", "shell", "{a,b}.txt")
    for dialect in ("gitignore", "rule"):
        assert full("{a,b}.txt", dialect, "{a,b}.txt") and not full("{a,b}.txt", dialect, "a.txt")


@pytest.mark.parametrize("dialect", ["rule", "shell", "gitignore"])
def test_no_wildcard_or_class_crosses_a_slash(dialect: str) -> None:
    for pattern in ("a*b", "a?b", "a[!x]b", "a[^x]b", "a[[:punct:]]b"):
        assert re.fullmatch(translate(pattern, dialect), "a/b") is None, pattern  # type: ignore[arg-type]


def test_rule_double_star_spans_folders_anywhere_and_a_tree_includes_its_root() -> None:
    rx = re.compile(translate("/h/.ssh/**", "rule") + r"\Z")
    assert rx.match("/h/.ssh") and rx.match("/h/.ssh/a/id_rsa") and not rx.match("/h/.sshx")
    assert re.match(translate("/h/.ssh**", "rule") + r"\Z", "/h/.ssh-old/key")
    assert not re.match(translate("a**b", "shell") + r"\Z", "a/x/b")  # the shell's ** stays in a segment


def test_the_glob_tool_outside_git_lists_what_git_would(tmp_path: Path) -> None:
    """End to end through the ``glob`` tool in a folder git does not manage: the .gitignore is
    read as git reads it (braces literal, POSIX classes), and the pattern as bash reads it."""
    from cox.actors.tools.base import ToolEnv
    from cox.actors.tools.search import GlobTool
    from cox.protocol.types import ToolCall
    from cox.supervisors import CancelScope

    root = _tree(tmp_path / "ws")
    (root / ".gitignore").write_text("{a,b}.txt\nx[[:digit:]].log\n")
    env = ToolEnv(roots=[root], cwd=root, cancel=CancelScope())
    res = GlobTool().call(ToolCall(id="t", name="glob", input={"pattern": "*.txt"}), env)
    assert res.visible.splitlines() == ["a.txt", "b.txt", "{a}.txt"]  # the file named {a,b}.txt is the ignored one
    res = GlobTool().call(ToolCall(id="t", name="glob", input={"pattern": "**/x?.log"}), env)
    assert res.visible.splitlines() == ["xa.log"]


def test_a_reversed_range_is_a_rule_error_and_matches_nothing_elsewhere() -> None:
    from cox.policy.globs import GlobError, compile_glob, segment_regex
    from cox.policy.rules import RuleError, parse_rule

    with pytest.raises(GlobError, match="reversed"):
        compile_glob("/x/[z-a]", "/home/u", ["/w"])
    with pytest.raises(RuleError, match="reversed"):
        parse_rule("Read(/x/[z-a]*)", "user", home="/home/u", roots=["/w"])
    assert segment_regex("[z-a]").match("[z-a]")  # bash passes the word on as it is
    assert re.fullmatch(translate("x[z-a]", "gitignore"), "xb") is None
