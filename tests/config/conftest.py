"""Fixtures for config tests: a temporary COX_HOME and workspace, never the real home."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from cox.config import Config, load_config


class Env:
    """A temporary COX_HOME (``home``) and workspace (``ws``) with helpers to write their files."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.ws = root / "ws"
        self.user_home = root / "user"  # the person's home: ~/.claude lives here
        self.home.mkdir()
        (self.user_home / ".claude").mkdir(parents=True)
        (self.ws / ".cox").mkdir(parents=True)

    @property
    def user_file(self) -> Path:
        return self.home / "config.toml"

    @property
    def project_file(self) -> Path:
        return self.ws / ".cox" / "config.toml"

    def user(self, text: str) -> Path:
        self.user_file.write_text(text)
        return self.user_file

    def project(self, text: str) -> Path:
        self.project_file.write_text(text)
        return self.project_file

    def claude_user(self, text: str) -> Path:
        """Write the person's ``~/.claude/settings.json``."""
        path = self.user_home / ".claude" / "settings.json"
        path.write_text(text)
        return path

    def claude_project(self, text: str, *, local: bool = False) -> Path:
        """Write the workspace's ``.claude/settings.json`` (``settings.local.json`` with ``local``)."""
        path = self.ws / ".claude" / ("settings.local.json" if local else "settings.json")
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        return path

    def load(self, env: Mapping[str, str] | None = None, flags: Mapping[str, Any] | None = None) -> Config:
        return load_config(self.ws, cox_home=self.home, env=env or {}, flags=flags, user_home=self.user_home)


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    # Belt and braces: even a call that falls back to os.environ sees only the temporary home.
    for name in list(os.environ):
        if name.startswith("COX_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "user" / ".claude"))  # what `cox config` reads
    return Env(tmp_path)


@pytest.fixture
def where() -> Callable[[Path, int], str]:
    """``file:line`` as sources name it."""
    return lambda path, line: f"{path}:{line}"
