"""Path confinement (issue 3, item 4): ``..``, symlinks and ``~`` resolved; escapes refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cox.policy.paths import PathEscape, confine


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("s")
    return root


def test_inside_paths_resolve(ws: Path) -> None:
    real = Path(os.path.realpath(ws))
    assert confine("src/a.py", [ws]) == real / "src" / "a.py"
    assert confine(str(ws / "src" / "a.py"), [ws]) == real / "src" / "a.py"
    assert confine("src/../src/./a.py", [ws]) == real / "src" / "a.py"
    assert confine(".", [ws]) == real
    assert confine("new/file.txt", [ws]) == real / "new" / "file.txt"  # need not exist yet


def test_relative_to_cwd(ws: Path) -> None:
    assert confine("a.py", [ws], cwd=ws / "src") == Path(os.path.realpath(ws)) / "src" / "a.py"


@pytest.mark.parametrize("path", ["../outside/secret", "src/../../outside/secret", "/etc/passwd", "/", ".."])
def test_escapes_are_refused_with_a_clear_error(ws: Path, path: str) -> None:
    with pytest.raises(PathEscape) as err:
        confine(path, [ws])
    assert "outside the workspace" in str(err.value) and path in str(err.value)


def test_symlink_out_of_the_workspace_is_refused(ws: Path) -> None:
    (ws / "link").symlink_to(ws.parent / "outside")
    with pytest.raises(PathEscape) as err:
        confine("link/secret", [ws])
    assert "through a symlink" in str(err.value)


def test_symlink_inside_the_workspace_is_fine(ws: Path) -> None:
    (ws / "alias").symlink_to(ws / "src")
    assert confine("alias/a.py", [ws]) == Path(os.path.realpath(ws)) / "src" / "a.py"


def test_symlinked_root_still_confines(tmp_path: Path, ws: Path) -> None:
    link = tmp_path / "repo-link"
    link.symlink_to(ws)
    assert confine(str(link / "src" / "a.py"), [link]) == Path(os.path.realpath(ws)) / "src" / "a.py"


def test_dotdot_after_a_symlink_follows_the_real_parent(tmp_path: Path, ws: Path) -> None:
    deep = tmp_path / "outside" / "deep"
    deep.mkdir()
    (ws / "jump").symlink_to(deep)
    with pytest.raises(PathEscape):
        confine("jump/../secret", [ws])


def test_tilde_is_the_given_home(ws: Path) -> None:
    assert confine("~/src/a.py", [ws], home=ws) == Path(os.path.realpath(ws)) / "src" / "a.py"
    with pytest.raises(PathEscape):
        confine("~/.ssh/id_rsa", [ws], home=ws.parent)


def test_several_roots(tmp_path: Path, ws: Path) -> None:
    other = tmp_path / "outside"
    assert confine(str(other / "secret"), [ws, other]) == Path(os.path.realpath(other)) / "secret"


@pytest.mark.parametrize("path", ["", "a\0b"])
def test_not_a_path(ws: Path, path: str) -> None:
    with pytest.raises(PathEscape):
        confine(path, [ws])


def test_no_roots_means_nothing_is_inside(ws: Path) -> None:
    with pytest.raises(PathEscape):
        confine(str(ws), [])


def test_path_escape_is_a_value_error() -> None:
    assert issubclass(PathEscape, ValueError)
