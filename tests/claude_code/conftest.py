"""The real ``claude-agent-sdk`` driving cox: ``cli_path`` is a launcher that execs cox with the
test's scripted model (docs/scripted-provider.md) and temporary COX_HOME and HOME; no translator
between them. Every test runs under pytest-timeout (pyproject's ``timeout``), and each SDK
conversation under ``anyio.fail_after(BOUND_S)``."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
try:  # a missing SDK fails these tests, never skips them: they are the proof the dialect works
    import claude_agent_sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover
    raise ImportError("tests/claude_code need the real claude-agent-sdk (the `test` extras of pyproject.toml): "
                      "pip install -e '.[test]'") from exc

BOUND_S = 60.0


@dataclass
class Cox:
    """One test's launcher and workspace; ``options(**kw)`` are the SDK's options for it."""

    launcher: Path
    ws: Path
    home: Path
    script: Path

    def replies(self, replies: list[dict[str, Any]], **extra: Any) -> None:
        self.script.write_text(json.dumps({"model": "scripted", "replies": replies, **extra}))

    def options(self, **kw: Any) -> Any:
        from claude_agent_sdk import ClaudeAgentOptions

        env = {"COX_HOME": str(self.home / "cox"), "HOME": str(self.home), "PYTHONPATH": str(ROOT),
               "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": ""}
        kw.setdefault("stderr", lambda line: sys.stderr.write(f"[cox] {line}\n"))
        return ClaudeAgentOptions(cli_path=str(self.launcher), cwd=str(self.ws), env=env, **kw)


@pytest.fixture
def cox_sdk(tmp_path: Path) -> Cox:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    home = tmp_path / "home"
    home.mkdir()
    script = tmp_path / "script.json"
    launcher = tmp_path / "cox-launcher"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m cox.surfaces.cli \"$@\" --script {script}\n")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return Cox(launcher, ws, home, script)


def run(main: Callable[[], Any]) -> Any:
    import anyio

    async def bounded() -> Any:
        with anyio.fail_after(BOUND_S):
            return await main()

    return anyio.run(bounded)


async def collect(prompt: Any, options: Any) -> list[Any]:
    from claude_agent_sdk import query

    return [message async for message in query(prompt=prompt, options=options)]


def kinds(messages: list[Any]) -> list[str]:
    return [type(m).__name__ for m in messages]


__all__ = ["Cox", "collect", "kinds", "os", "run"]
