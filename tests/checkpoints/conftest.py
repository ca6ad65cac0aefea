"""Helpers for the checkpoint tests: real git, real files, every subprocess bounded."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cox.actors.store.checkpoints import Checkpointer
from cox.actors.store.layout import Layout, cox_home


def git(repo: Path, *args: str, home: Path | None = None) -> str:
    """Run git as the user would in their repository, isolated from the real home's config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", HOME=str(home or repo.parent / "user-home"),
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    proc = subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=repo, env=env,
                          capture_output=True, timeout=60, check=True)
    return proc.stdout.decode()


def snapshot_files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root (outside .git): its bytes (a link's target) and mode bits."""
    out: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            st = os.lstat(p)
            data = os.fsencode(os.readlink(p)) if os.path.islink(p) else p.read_bytes()
            out[rel] = (data, st.st_mode)
    return out


def tree_digest(folder: Path) -> dict[str, bytes]:
    """Every file under a folder with its bytes: to prove a .git was not touched."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def layout() -> Layout:
    return Layout(cox_home()).ensure()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def repo(ws: Path) -> Path:
    """A user repository with one commit."""
    git(ws, "init", "-q")
    (ws / "README.md").write_text("# project\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("print('hi')\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "init")
    return ws


@pytest.fixture
def cp(layout: Layout, ws: Path) -> Iterator[Checkpointer]:
    c = Checkpointer(layout, ws, git_timeout=30)
    yield c
    c.close()
