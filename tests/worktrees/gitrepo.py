"""Real git repositories in a tmp folder for the worktree tests: a checkout with one commit,
optionally cloned from a bare ``origin`` made next to it (no network anywhere)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY}
    proc = subprocess.run(["git", "-C", str(cwd), *args], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout.strip()


def make_repo(where: Path, name: str = "repo", *, origin: bool = False) -> Path:
    """``where/name`` with a commit on ``main``; with ``origin``, a clone of ``where/origin.git``
    whose ``main`` has one commit more than the clone has seen (so a fresh fetch is visible)."""
    where.mkdir(parents=True, exist_ok=True)
    repo = where / name
    if not origin:
        git(where, "init", "-q", "-b", "main", name)
        (repo / "README.md").write_text("hello\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "first")
        return repo
    seed = where / "seed"
    git(where, "init", "-q", "-b", "main", "seed")
    (seed / "README.md").write_text("hello\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "first")
    git(where, "clone", "-q", "--bare", str(seed), "origin.git")
    git(where, "clone", "-q", str(where / "origin.git"), name)
    (seed / "NEW.md").write_text("upstream\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "upstream change")
    git(seed, "push", "-q", str(where / "origin.git"), "main")
    return repo
