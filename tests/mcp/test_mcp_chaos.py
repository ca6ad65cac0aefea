"""A server that hangs (SIGSTOP) during repeated calls, and the real ``mcp-server-git`` from PyPI."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cox.actors.mcp.config import McpServerSpec, Origin
from cox.actors.mcp.supervisor import Backoff, start_mcp
from cox.actors.tools.base import ToolEnv
from cox.protocol.types import ToolCall, ToolResult
from cox.supervisors import CancelScope, SupervisorHandle
from tests.mcp.conftest import last_pid, make_server

FAST = Backoff(initial_s=0.05, max_s=0.5, reset_after_s=1.0)


def env() -> ToolEnv:
    return ToolEnv(roots=[Path.cwd()], cwd=Path.cwd(), cancel=CancelScope(), output=lambda _c: None)


def call(tools: dict, name: str, **inp: object) -> ToolResult:
    result: ToolResult = tools[name].call(ToolCall(id="c", name=name, input=dict(inp)), env())
    return result


def stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        pass  # that process is already gone (killed after an earlier hang)


def gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.slow
def test_chaos_sigstop_during_repeated_calls(root: SupervisorHandle, pidfile: Path) -> None:
    rng = random.Random(7)
    timeout_s = 1.0
    mcp = start_mcp(root, {"t": make_server("t", pidfile)}, timeout_s=timeout_s, backoff=FAST)
    mcp.wait_settled(20)
    tools = mcp.tools()
    stopped: list[int] = []
    outcomes: list[list[ToolResult]] = []
    for _ in range(16):
        timer = None
        if rng.random() < 0.35:
            victim = last_pid(pidfile)
            timer = threading.Timer(rng.uniform(0.0, 0.1), stop, (victim,))
            timer.start()
            stopped.append(victim)
        started = time.monotonic()
        results = [call(tools, "mcp__t__slow", steps=rng.randint(1, 3), delay=0.03)]
        elapsed = time.monotonic() - started
        if timer is not None:
            timer.join()
        outcomes.append(results)
        # One result per call, within its timeout (plus a restart when the last call killed a hung server).
        assert len(results) == 1
        assert elapsed < timeout_s + 30.0, (elapsed, results[0].visible)  # only a hang reaches it
        result = results[0]
        assert result.ok or (
            "'t'" in result.visible and ("did not answer" in result.visible or "restart" in result.visible)
        ), result.visible
    hangs = [r for (r,) in outcomes if "did not answer slow within 1s" in r.visible]
    assert len(set(stopped)) >= 3 and hangs, (stopped, [r.visible for (r,) in outcomes])
    # A stop that landed after its call finished hangs the next call instead: either way the
    # stopped process is killed once a call times out against it. Flush the last one.
    final = call(tools, "mcp__t__echo", text="end")
    if not final.ok:
        assert "did not answer" in final.visible, final.visible
        final = call(tools, "mcp__t__echo", text="end")
    assert final.ok, final.visible
    assert f"pid {last_pid(pidfile)}" in final.visible
    for pid in set(stopped):
        assert gone(pid), f"stopped server {pid} was not killed"
    assert mcp.state() == [{"name": "t", "status": "ready"}]
    mcp.stop()


def test_git_server_from_pypi(root: SupervisorHandle, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    (repo / "untracked-file.txt").write_text("new\n")
    (repo / "a.txt").write_text("changed\n")
    spec = McpServerSpec("git", Origin.USER, command=sys.executable,
                         args=("-m", "mcp_server_git", "--repository", str(repo)))
    mcp = start_mcp(root, {"git": spec}, startup_timeout_s=20, backoff=FAST)
    mcp.wait_settled(30)
    tools = mcp.tools()
    assert {"mcp__git__git_status", "mcp__git__git_log", "mcp__git__git_diff_unstaged"} <= set(tools), mcp.state()
    result = call(tools, "mcp__git__git_status", repo_path=str(repo))
    assert result.ok, result.visible
    assert "untracked-file.txt" in result.visible and "a.txt" in result.visible
    log = call(tools, "mcp__git__git_log", repo_path=str(repo))
    assert log.ok and "first" in log.visible
    mcp.stop()
