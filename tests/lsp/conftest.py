"""Fixtures for the LSP tests: the servers the project's set-up installs (basedpyright,
python-lsp-server, in the virtualenv cox runs from) found on PATH, a pool outside any session,
and the fake server of ``fake_server.py`` for the servers that must misbehave."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cox.actors.lsp.pool import LspPool, LspSettings
from cox.actors.tools.base import ToolEnv, ToolServices
from cox.protocol.types import ToolCall
from cox.supervisors import CancelScope

FAKE = Path(__file__).with_name("fake_server.py")
VENV_BIN = str(Path(sys.executable).parent)
NODE_BIN = str(Path(__file__).resolve().parents[2] / "node_modules" / ".bin")  # npm ci (package.json)


@pytest.fixture(scope="session", autouse=True)
def servers_on_path() -> Iterator[None]:
    """The virtualenv's bin folder (basedpyright-langserver, pylsp) and the project's
    node_modules/.bin (typescript-language-server) on PATH, as a machine with them installed has."""
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([d for d in (VENV_BIN, NODE_BIN) if d not in old.split(os.pathsep)] + [old])
    yield
    os.environ["PATH"] = old


def need(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed (scripts/_env installs it into the virtualenv)")


def fake(mode: str, arg: str = "") -> dict[str, Any]:
    """A ``[lsp.servers.python]`` entry that runs the fake server in ``mode``."""
    return {"python": {"command": sys.executable, "args": [str(FAKE), mode, *([arg] if arg else [])]}}


def make_pool(root: Path, servers: dict[str, Any] | None = None, **settings: Any) -> LspPool:
    return LspPool(f"t{os.getpid()}-{root.name}", [root], LspSettings(servers=servers or {}, **settings))


def env_of(root: Path, pool: LspPool | None, **services: Any) -> ToolEnv:
    return ToolEnv(roots=[root], cwd=root, cancel=CancelScope(), home=root.parent,
                   services=ToolServices(lsp=pool, **services))


def call(tool: Any, env: ToolEnv, **input: Any) -> Any:
    from cox.actors.tools.execute import run

    return run(tool, ToolCall(id="c1", name=tool.name, input=input), env)
