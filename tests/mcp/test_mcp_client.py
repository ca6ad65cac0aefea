"""The MCP client against real server processes: listing, calling, progress, a hung call, a
SIGKILL mid-call, a server that fails at start, and a seeded chaos run of SIGKILLs."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest

from cox.actors.mcp.config import Origin
from cox.actors.mcp.server import child_env
from cox.actors.mcp.supervisor import Backoff, start_mcp
from cox.actors.tools.base import ToolEnv
from cox.protocol.types import Risk, ToolCall, ToolStatus
from cox.supervisors import CancelScope, SupervisorHandle
from tests.mcp.conftest import last_pid, make_server, time_server

FAST = Backoff(initial_s=0.05, max_s=0.5, reset_after_s=1.0)


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # already dead (an earlier kill's process): nothing to do


def env_for(output: list[str] | None = None, cancel: CancelScope | None = None) -> ToolEnv:
    sink = output.append if output is not None else (lambda _chunk: None)
    return ToolEnv(roots=[Path.cwd()], cwd=Path.cwd(), cancel=cancel or CancelScope(), output=sink)


def call(tools: dict, name: str, env: ToolEnv | None = None, **inp: object):
    tool = tools[name]
    return tool.call(ToolCall(id="c", name=name, input=dict(inp)), env or env_for())


def test_list_call_and_risk(root: SupervisorHandle, pidfile: Path) -> None:
    mcp = start_mcp(root, {"t": make_server("t", pidfile)}, backoff=FAST)
    mcp.wait_settled(20)
    assert mcp.state() == [{"name": "t", "status": "ready"}]
    tools = mcp.tools()
    assert {"mcp__t__echo", "mcp__t__slow", "mcp__t__peek", "mcp__t__zap", "mcp__t__crash"} <= set(tools)
    echo = tools["mcp__t__echo"]
    assert echo.description == "Echo the text back."
    assert echo.subject({}, env_for()) == "mcp__t__echo"
    assert echo.risk({}) is Risk.WRITE
    assert tools["mcp__t__peek"].risk({}) is Risk.READ_ONLY
    assert tools["mcp__t__zap"].risk({}) is Risk.DESTRUCTIVE
    assert echo.writes(ToolCall(id="c", name="x"), env_for()) is None
    result = call(tools, "mcp__t__echo", text="hi")
    assert result.ok and result.visible.startswith("echo: hi")
    bad = call(tools, "mcp__t__oops")
    assert bad.status is ToolStatus.ERROR
    mcp.stop()


def test_time_server_from_pypi(root: SupervisorHandle) -> None:
    mcp = start_mcp(root, {"time": time_server()}, backoff=FAST)
    mcp.wait_settled(20)
    tools = mcp.tools()
    assert "mcp__time__get_current_time" in tools, mcp.state()
    result = call(tools, "mcp__time__get_current_time", timezone="UTC")
    assert result.ok, result.visible
    assert "UTC" in result.visible and "datetime" in result.visible


def test_progress_reaches_output(root: SupervisorHandle, pidfile: Path) -> None:
    mcp = start_mcp(root, {"t": make_server("t", pidfile)}, backoff=FAST)
    mcp.wait_settled(20)
    out: list[str] = []
    result = call(mcp.tools(), "mcp__t__slow", env_for(out), steps=3, delay=0.01)
    assert result.ok and "slept 3 steps" in result.visible
    assert out == ["[1/3] step 1\n", "[2/3] step 2\n", "[3/3] step 3\n"]


def test_cancel_aborts_the_call_and_keeps_the_connection(root: SupervisorHandle, pidfile: Path) -> None:
    mcp = start_mcp(root, {"t": make_server("t", pidfile)}, backoff=FAST)
    mcp.wait_settled(20)
    tools = mcp.tools()
    scope = CancelScope()
    threading.Timer(0.3, scope.cancel).start()
    started = time.monotonic()
    result = call(tools, "mcp__t__slow", env_for(cancel=scope), steps=2000, delay=0.05)
    assert result.status is ToolStatus.ABORTED
    assert time.monotonic() - started < 50  # the call itself would run 100 s: the cancel ended it
    pid = last_pid(pidfile)
    again = call(tools, "mcp__t__echo", text="after")
    assert again.ok and f"pid {pid}" in again.visible  # the same process: a cancel is not a crash


def test_hung_call_times_out_and_the_server_restarts(root: SupervisorHandle, pidfile: Path) -> None:
    mcp = start_mcp(root, {"t": make_server("t", pidfile)}, timeout_s=1.0, backoff=FAST)
    mcp.wait_settled(20)
    tools = mcp.tools()
    first = last_pid(pidfile)
    result = call(tools, "mcp__t__hang")
    assert result.status is ToolStatus.ERROR
    assert "did not answer hang within 1s" in result.visible and "'t'" in result.visible
    after = call(tools, "mcp__t__echo", text="back")  # a new process (how soon: bench/mcp.py)
    assert after.ok, after.visible
    assert last_pid(pidfile) != first and f"pid {last_pid(pidfile)}" in after.visible
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)  # the hung process was killed


def test_sigkill_mid_call_then_next_call_reaches_a_new_process(root: SupervisorHandle, pidfile: Path) -> None:
    mcp = start_mcp(root, {"t": make_server("t", pidfile)}, backoff=FAST)
    mcp.wait_settled(20)
    tools = mcp.tools()
    first = last_pid(pidfile)
    threading.Timer(0.3, kill, (first,)).start()
    result = call(tools, "mcp__t__slow", steps=100, delay=0.05)
    assert result.status is ToolStatus.ERROR
    assert result.visible == "mcp server 't' crashed during the call; it is being restarted"
    after = call(tools, "mcp__t__echo", text="new")  # a new process (how soon: bench/mcp.py)
    assert after.ok, after.visible
    assert last_pid(pidfile) != first and f"pid {last_pid(pidfile)}" in after.visible
    assert mcp.state() == [{"name": "t", "status": "ready"}]


def test_crash_tool_is_one_error_then_recovery(root: SupervisorHandle, pidfile: Path) -> None:
    mcp = start_mcp(root, {"t": make_server("t", pidfile)}, backoff=FAST)
    mcp.wait_settled(20)
    tools = mcp.tools()
    result = call(tools, "mcp__t__crash")
    assert result.status is ToolStatus.ERROR and "crashed during the call" in result.visible
    assert call(tools, "mcp__t__echo", text="x").ok


def test_server_failing_at_start_is_a_state_not_an_exception(root: SupervisorHandle, pidfile: Path) -> None:
    servers = {
        "good": make_server("good", pidfile),
        "missing": make_server("missing").__class__("missing", Origin.USER, command="/nonexistent/server"),
        "dies": make_server("dies", COX_TEST_FAIL_START="1"),
    }
    mcp = start_mcp(root, servers, startup_timeout_s=10, backoff=FAST)
    mcp.wait_settled(20)
    state = {row["name"]: row["status"] for row in mcp.state()}
    assert state["good"] == "ready"
    assert state["missing"].startswith("failed: ") and "/nonexistent/server" in state["missing"]
    assert state["dies"].startswith("failed: ")
    tools = mcp.tools()
    assert not any(name.startswith(("mcp__missing__", "mcp__dies__")) for name in tools)
    assert call(tools, "mcp__good__echo", text="fine").ok


@pytest.mark.slow
def test_chaos_sigkills_during_sequential_calls(root: SupervisorHandle, pidfile: Path) -> None:
    rng = random.Random(6)
    mcp = start_mcp(root, {"t": make_server("t", pidfile)}, timeout_s=5.0, backoff=FAST)
    mcp.wait_settled(20)
    tools = mcp.tools()
    outcomes = []
    kills = 0
    for _ in range(30):
        timer = None
        if rng.random() < 0.4:
            victim = last_pid(pidfile)
            timer = threading.Timer(rng.uniform(0.0, 0.15), kill, (victim,))
            timer.start()
            kills += 1
        results = [call(tools, "mcp__t__slow", steps=rng.randint(1, 4), delay=0.03)]
        if timer is not None:
            timer.join()
        outcomes.append(results)
    assert all(len(r) == 1 for r in outcomes)
    for (result,) in outcomes:
        assert result.ok or "'t'" in result.visible, result.visible
    assert kills > 5
    final = call(tools, "mcp__t__echo", text="end")
    assert final.ok, final.visible
    assert mcp.state() == [{"name": "t", "status": "ready"}]


def test_child_env_is_an_allowlist() -> None:
    environ = {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "ANTHROPIC_API_KEY": "secret", "TMPDIR": "/t"}
    env = child_env({"OWN": "1"}, environ)
    assert env == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "TMPDIR": "/t", "OWN": "1"}
