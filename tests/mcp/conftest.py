"""Fixtures for the MCP tests: a root supervisor torn down after each test, and specs for the
test server (tests/mcp/servers/testserver.py) and mcp-server-time, run as real processes."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cox.actors.mcp.config import McpServerSpec, Origin
from cox.supervisors import SupervisorHandle, shutdown, start_supervisor

SERVER = Path(__file__).parent / "servers" / "testserver.py"


@pytest.fixture
def root(pidfile: Path) -> Iterator[SupervisorHandle]:
    # Depends on pidfile so that the tree is shut down before pidfile checks for survivors.
    handle = start_supervisor("root")
    try:
        yield handle
    finally:
        shutdown(10)


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pids"
    yield path
    if path.exists():  # nothing the test started may outlive it
        for line in path.read_text().split():
            try:
                os.kill(int(line), 0)
            except ProcessLookupError:
                continue
            os.kill(int(line), signal.SIGKILL)
            pytest.fail(f"mcp server process {line} outlived the test")


def make_server(name: str = "t", pidfile: Path | None = None, origin: Origin = Origin.USER,
                **env: str) -> McpServerSpec:
    if pidfile is not None:
        env["COX_TEST_PIDFILE"] = str(pidfile)
    return McpServerSpec(name, origin, command=sys.executable, args=(str(SERVER),), env=env)


def time_server() -> McpServerSpec:
    exe = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    assert exe, "mcp-server-time is a test dependency (pyproject [test])"
    return McpServerSpec("time", Origin.USER, command=exe, args=("--local-timezone", "UTC"))


def last_pid(pidfile: Path) -> int:
    return int(pidfile.read_text().split()[-1])
