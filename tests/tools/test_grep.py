"""grep: both backends (ripgrep and the Python fallback) give the same answers on real trees,
.gitignore is respected with and without git, and the failure paths answer clearly."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cox.actors.tools import search
from cox.actors.tools.base import ToolEnv, ToolInputError
from cox.actors.tools.search import GrepTool, list_files
from cox.policy.paths import PathEscape
from cox.protocol.types import Risk, ToolCall, ToolResult, ToolStatus
from cox.supervisors import CancelScope

HAVE_RG = shutil.which("rg") is not None
needs_rg = pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not on PATH, so there is no rg backend to compare")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not on PATH")

TREE: dict[str, str | bytes] = {
    ".gitignore": "*.log\nbuild/\n/top_only.txt\n!keep.log\ndocs/*.tmp\n",
    "src/app.py": "import os\n\ndef main():\n    print('hello world')\n    return 0\n\n\nclass Hello:\n    pass\n",
    "src/util.py": "def helper():\n    # say hello\n    return 'Hello'\n",
    "src/deep/more/mod.py": "HELLO = 1\nhello_again = 2\n",
    "src/notes.md": "# Notes\nhello from markdown\n",
    "top_only.txt": "hello top\n",
    "sub/top_only.txt": "hello sub\n",
    "debug.log": "hello log\n",
    "keep.log": "hello keep\n",
    "build/out.py": "hello build\n",
    "docs/a.tmp": "hello tmp\n",
    "docs/deep/b.tmp": "hello deep tmp\n",
    ".hidden/cfg.py": "hello = 'hidden'\n",
    "crlf.txt": b"hello crlf\r\nsecond line\r\n",
    "bom.txt": b"\xef\xbb\xbfhello bom\n",
    "noeol.txt": "first\nlast hello",
    "long.txt": "x" * 3000 + "hello\n",
    "img.bin": b"hello\0binary",
    "late.txt": b"hello early\n" + b"y" * 9000 + b"\n",
    "late_nul.txt": b"hello first\n" + b"z" * 9000 + b"\0\nhello after the NUL\n",
    "latin1.txt": b"hello caf\xe9 \xff\xfe bytes\n",
    "sub/.gitignore": "*.gen\n",
    "sub/x.gen": "hello gen\n",
    "sub/y.py": "def hello():\n    pass\n",
    "many.txt": "".join(f"hello {i}\n" for i in range(50)),
    "ctx.txt": "a\nb\nhello 1\nc\nd\ne\nf\ng\nhello 2\nhello 3\nh\n",
    "unicode.txt": "naïve héllo wörld\nΣίσυφος hello\n",
}


def make_tree(root: Path, *, git: bool, tracked: tuple[str, ...] = ("src/app.py", "src/util.py")) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in TREE.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    (root / "link.py").symlink_to(root / "src" / "app.py")
    if git:
        subprocess.run(["git", "init", "-q", "."], cwd=root, check=True)
        subprocess.run(["git", "add", "--", *tracked], cwd=root, check=True)
    return root.resolve()


def env_for(ws: Path, cancel: CancelScope | None = None) -> ToolEnv:
    return ToolEnv(roots=[ws], cwd=ws, cancel=cancel or CancelScope())


def grep(ws: Path, backend: str = "auto", **inp: object) -> ToolResult:
    return GrepTool(backend).call(ToolCall(id="t", name="grep", input=inp), env_for(ws))


def hide_git(monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which
    monkeypatch.setattr(search.shutil, "which", lambda name, *a, **k: None if name == "git" else real(name, *a, **k))


QUERIES: list[dict[str, object]] = [
    {"pattern": "hello"},
    {"pattern": "HELLO", "case_insensitive": True},
    {"pattern": "hello", "context": 2},
    {"pattern": "hello", "context": 1, "max_results": 5},
    {"pattern": "hello", "files_with_matches": True},
    {"pattern": "hello", "files_with_matches": True, "max_results": 3},
    {"pattern": "hello", "glob": "*.py"},
    {"pattern": "hello", "glob": "src/**/*.{py,md}"},
    {"pattern": "hello", "glob": "!**/*.txt", "context": 1},
    {"pattern": r"^\s+print\("},
    {"pattern": r"hello \d+$", "max_results": 7},
    {"pattern": r"crlf$"},
    {"pattern": r"line$"},
    {"pattern": r"\bclass\b", "path": "src"},
    {"pattern": "hello", "path": "src/app.py"},
    {"pattern": "hello", "path": "build"},
    {"pattern": "h[eé]llo w", "case_insensitive": True},
    {"pattern": "^$"},
    {"pattern": "nomatchanywhere"},
    {"pattern": ""},
    {"pattern": "hello", "count": True},
    {"pattern": "hello", "count": True, "max_results": 2},
    {"pattern": "HELLO", "count": True, "case_insensitive": True, "glob": "*.py"},
    {"pattern": r"def \w+\(\):\n\s+print", "multiline": True},
    {"pattern": r"class Hello:.\s+pass", "multiline": True, "context": 1},
    {"pattern": r"hello 1\nc", "multiline": True, "files_with_matches": True},
    {"pattern": r"hello \d+\nhello", "multiline": True, "count": True},
    {"pattern": r"main.*return", "multiline": True},
]


@needs_rg
@needs_git
@pytest.mark.parametrize("git", [True, False], ids=["git-repo", "plain-folder"])
def test_rg_and_python_give_the_same_answers(tmp_path: Path, git: bool) -> None:
    ws = make_tree(tmp_path / "ws", git=git)
    for q in QUERIES:
        a, b = grep(ws, "rg", **q), grep(ws, "python", **q)
        assert a.status == b.status, q
        assert a.visible == b.visible, f"{q}\n--- rg ---\n{a.visible}\n--- python ---\n{b.visible}"
        a.meta.pop("backend", None)
        b.meta.pop("backend", None)
        assert a.meta == b.meta, q


@needs_rg
def test_rg_and_python_agree_when_git_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    hide_git(monkeypatch)
    for q in QUERIES[:8]:
        assert grep(ws, "rg", **q).visible == grep(ws, "python", **q).visible, q


@needs_git
def test_our_gitignore_matcher_lists_what_git_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_tree(tmp_path / "ws", git=True)
    with_git = list_files(ws, ws)
    hide_git(monkeypatch)
    assert list_files(ws, ws) == with_git
    assert list_files(ws / "src", ws) == [p[len("src/"):] for p in with_git if p.startswith("src/")]


@pytest.mark.parametrize("git", [True, False], ids=["git-repo", "plain-folder"])
def test_listing_respects_gitignore_hidden_files_and_symlinks(tmp_path: Path, git: bool) -> None:
    if git and shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    ws = make_tree(tmp_path / "ws", git=git)
    files = list_files(ws, ws)
    assert files == sorted(files)
    for gone in ("top_only.txt", "debug.log", "build/out.py", "docs/a.tmp", "sub/x.gen", "link.py"):
        assert gone not in files, gone
    for kept in ("keep.log", "sub/top_only.txt", "docs/deep/b.tmp", ".hidden/cfg.py", ".gitignore", "img.bin"):
        assert kept in files, kept
    assert not any(f.startswith(".git/") for f in files)


def test_matches_are_sorted_by_path_then_line_with_the_grep_layout(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = grep(ws, pattern="hello")
    assert res.ok
    lines = res.visible.splitlines()
    keys = [(x.split(":")[0], int(x.split(":")[1])) for x in lines if not x.startswith("[")]
    assert keys == sorted(keys)
    assert "src/app.py:4:    print('hello world')" in lines
    assert "crlf.txt:1:hello crlf" in lines  # the \r is not shown
    assert "bom.txt:1:hello bom" in lines  # nor the BOM
    assert "noeol.txt:2:last hello" in lines
    assert ".hidden/cfg.py:1:hello = 'hidden'" in lines
    assert not any(x.startswith(("img.bin", "debug.log", "build/", "link.py", "top_only.txt")) for x in lines)
    long = next(x for x in lines if x.startswith("long.txt:"))
    assert long.endswith("…[+2505 chars]") and len(long) < 600


def test_context_lines_and_separators(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = grep(ws, pattern="hello", path="ctx.txt", context=1)
    assert res.visible.splitlines() == [
        "ctx.txt-2-b", "ctx.txt:3:hello 1", "ctx.txt-4-c", "--",
        "ctx.txt-8-g", "ctx.txt:9:hello 2", "ctx.txt:10:hello 3", "ctx.txt-11-h",
    ]


def test_max_results_bounds_and_says_how_many_more(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = grep(ws, pattern=r"hello \d+", path="many.txt", max_results=5)
    lines = res.visible.splitlines()
    assert lines[:5] == [f"many.txt:{i + 1}:hello {i}" for i in range(5)]
    assert lines[5] == "[showing 5 of 50 matches in 1 files; narrow the search or raise max_results]"
    files = grep(ws, pattern="hello", files_with_matches=True, max_results=2)
    assert files.visible.splitlines()[:2] == [".hidden/cfg.py", "bom.txt"]
    assert "[showing 2 of" in files.visible


def test_glob_filter_and_case_insensitive(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = grep(ws, pattern="HELLO", glob="*.py", case_insensitive=True, files_with_matches=True)
    assert res.visible.splitlines() == [".hidden/cfg.py", "src/app.py", "src/deep/more/mod.py", "src/util.py", "sub/y.py"]
    assert grep(ws, pattern="HELLO", glob="*.py", files_with_matches=True).visible == "src/deep/more/mod.py"
    without = grep(ws, pattern="hello", glob="!*.txt", files_with_matches=True).visible.splitlines()
    assert "src/app.py" in without and not any(f.endswith(".txt") for f in without)


def test_a_folder_named_explicitly_is_searched_even_if_ignored(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=shutil.which("git") is not None)
    assert grep(ws, pattern="hello", path="build").visible == "build/out.py:1:hello build"
    assert grep(ws, pattern="hello", path="debug.log").visible == "debug.log:1:hello log"


def test_paths_are_shown_from_the_working_folder(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = grep(ws, pattern="HELLO", path="src/deep")
    assert res.visible == "src/deep/more/mod.py:1:HELLO = 1"


def test_no_matches_is_a_plain_answer(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = grep(ws, pattern="zzz_not_there")
    assert res.ok and res.visible.startswith("no matches for /zzz_not_there/ in .")
    assert res.meta["matches"] == 0


@pytest.mark.parametrize("backend", ["python", pytest.param("rg", marks=needs_rg)])
def test_invalid_regex_is_an_error_result(tmp_path: Path, backend: str) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = grep(ws, backend, pattern="a(")
    assert res.status is ToolStatus.ERROR and res.visible.startswith("grep: ")


def test_failure_paths(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    assert "does not exist" in grep(ws, pattern="x", path="nope").visible
    with pytest.raises(ToolInputError, match="one line at a time"):
        grep(ws, pattern="a\\nb")
    assert grep(ws, pattern=r"back\\n").ok  # an escaped backslash before n is no newline
    with pytest.raises(ToolInputError):
        grep(ws, pattern="x", context=-1)
    with pytest.raises(ToolInputError):
        grep(ws, pattern="x", max_results="many")
    outside = tmp_path / "outside"
    outside.mkdir()
    with pytest.raises(PathEscape):
        grep(ws, pattern="x", path=str(outside))


def test_rg_backend_without_rg_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    monkeypatch.setattr(search.shutil, "which", lambda name, *a, **k: None)
    res = grep(ws, "rg", pattern="hello")
    assert not res.ok and "not on PATH" in res.visible
    assert grep(ws, "auto", pattern="HELLO = 1").visible == "src/deep/more/mod.py:1:HELLO = 1"


@pytest.mark.parametrize("backend", ["python", pytest.param("rg", marks=needs_rg)])
def test_a_cancelled_turn_aborts(tmp_path: Path, backend: str) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    scope = CancelScope()
    scope.cancel("interrupt")
    res = GrepTool(backend).call(ToolCall(id="t", name="grep", input={"pattern": "hello"}), env_for(ws, scope))
    assert res.status is ToolStatus.ABORTED


def test_contract(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    env = env_for(ws)
    tool = GrepTool()
    call = tool.describe(ToolCall(id="t", name="grep", input={"pattern": "x", "path": "src"}), env)
    assert call.risk is Risk.READ_ONLY and call.subject == str(ws / "src")
    assert tool.describe(ToolCall(id="t", name="grep", input={"pattern": "x"}), env).subject == str(ws)
    assert tool.parallel is True
    assert tool.writes(call, env) == []


def test_count_lists_each_file_with_its_matching_lines(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = grep(ws, pattern="hello", count=True, glob="*.txt")
    lines = res.visible.splitlines()
    assert "many.txt:50" in lines and "ctx.txt:3" in lines and "crlf.txt:1" in lines
    assert lines[-1].startswith("[") and "matching lines in" in lines[-1]
    assert res.meta["matches"] == sum(int(x.rsplit(":", 1)[1]) for x in lines[:-1])


def test_multiline_spans_lines_and_a_newline_needs_it(tmp_path: Path) -> None:
    ws = make_tree(tmp_path / "ws", git=False)
    res = grep(ws, pattern=r"def main\(\):\n\s+print", multiline=True)
    assert res.visible.splitlines() == ["src/app.py:3:def main():", "src/app.py:4:    print('hello world')"]
    with pytest.raises(ToolInputError, match="set multiline: true"):
        grep(ws, pattern=r"main\n")
    with pytest.raises(ToolInputError, match="count or files_with_matches"):
        grep(ws, pattern="x", count=True, files_with_matches=True)
    with pytest.raises(ToolInputError, match="'multiline' must be true or false"):
        grep(ws, pattern="x", multiline="yes")
