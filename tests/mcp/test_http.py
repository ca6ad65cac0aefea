"""Streamable-HTTP MCP servers, for real: a Python server built on the mcp SDK's server side
(``servers/httpserver.py``) and the reference ``@modelcontextprotocol/server-everything`` in its
``streamableHttp`` mode, each a real process on 127.0.0.1 that the test starts, kills and starts
again on the same port. cox reaches them through its own supervisor and actors, as a session does.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cox.actors.mcp.config import McpServerSpec, Origin
from cox.actors.mcp.server import McpServerCrashed
from cox.actors.mcp.supervisor import Backoff, McpManager, start_mcp
from cox.actors.mcp.trust import TrustStore
from cox.supervisors import SupervisorHandle
from tests.mcp.servers.authserver import no_os_keyring
from tests.mcp.servers.httpproc import HttpMcp, free_port

FAST = Backoff(initial_s=0.05, max_s=0.5, reset_after_s=1.0)


@pytest.fixture(autouse=True)
def no_keyring(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with no_os_keyring(monkeypatch):  # an HTTP server's connection looks for a stored token
        yield


def _manager(root: SupervisorHandle, url: str, tmp_path: Path, *, timeout_s: float = 10.0,
             name: str = "h") -> McpManager:
    spec = McpServerSpec(name, Origin.USER, url=url)
    manager = start_mcp(root, {name: spec}, timeout_s=timeout_s, startup_timeout_s=10.0, backoff=FAST,
                        trust=TrustStore(tmp_path / "trust.json"))
    manager.wait_settled(15)
    return manager


def _text(result: object) -> str:
    return " ".join(getattr(c, "text", "") for c in getattr(result, "content", []))


@pytest.fixture
def server(pidfile: Path) -> Iterator[HttpMcp]:
    with HttpMcp(env={"COX_TEST_PIDFILE": str(pidfile)}) as s:
        yield s


def test_lists_and_calls_tools_over_http(root: SupervisorHandle, server: HttpMcp, tmp_path: Path):
    manager = _manager(root, server.url, tmp_path)
    assert manager.state() == [{"name": "h", "status": "ready"}]
    assert {"mcp__h__echo", "mcp__h__slow", "mcp__h__crash", "mcp__h__hang"} <= set(manager.tools())
    conn = manager.connection("h")
    assert "echo: over http" in _text(conn.call_tool("echo", {"text": "over http"}))
    seen: list[float] = []
    result = conn.call_tool("slow", {"steps": 3, "delay": 0.01}, progress=lambda p, _t, _m: seen.append(p))
    assert "slept 3 steps" in _text(result) and seen == [1, 2, 3]


def test_server_killed_mid_call_then_restarted(root: SupervisorHandle, server: HttpMcp, tmp_path: Path):
    manager = _manager(root, server.url, tmp_path)
    conn = manager.connection("h")
    assert server.proc is not None
    killer = threading.Timer(0.3, lambda: os.killpg(server.proc.pid, signal.SIGKILL))  # type: ignore[union-attr]
    killer.start()
    started = time.monotonic()
    with pytest.raises(McpServerCrashed, match="mcp server 'h' crashed during the call; it is being restarted"):
        conn.call_tool("slow", {"steps": 2000, "delay": 0.05}, timeout=90)
    killer.join()
    assert time.monotonic() - started < 45, "the call fails when the server dies, not at its timeout"
    server.proc.wait(10)
    # While it is down, a call says so within its budget instead of hanging.
    with pytest.raises(McpServerCrashed, match="mcp server 'h' is not available"):
        manager.connection("h", timeout=0.5)
    server.start()  # the same URL comes back: the supervisor's next attempt gets through
    conn = manager.connection("h", timeout=15)
    assert "echo: again" in _text(conn.call_tool("echo", {"text": "again"}))
    assert manager.state() == [{"name": "h", "status": "ready"}]


def test_server_that_exits_during_the_call(root: SupervisorHandle, server: HttpMcp, tmp_path: Path):
    manager = _manager(root, server.url, tmp_path)
    with pytest.raises(McpServerCrashed, match="crashed during the call"):
        manager.connection("h").call_tool("crash", {})
    server.restart()
    assert "echo: x" in _text(manager.connection("h", timeout=15).call_tool("echo", {"text": "x"}))


def test_server_killed_while_idle(root: SupervisorHandle, server: HttpMcp, tmp_path: Path):
    manager = _manager(root, server.url, tmp_path)
    conn = manager.connection("h")
    server.kill()
    with pytest.raises(McpServerCrashed, match="mcp server 'h'"):
        conn.call_tool("echo", {"text": "nobody home"}, timeout=10)
    server.start()
    assert "echo: back" in _text(manager.connection("h", timeout=15).call_tool("echo", {"text": "back"}))


def test_hung_call_times_out_and_the_server_is_reached_again(root: SupervisorHandle, server: HttpMcp,
                                                             tmp_path: Path):
    manager = _manager(root, server.url, tmp_path, timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(McpServerCrashed, match="did not answer hang within 1s"):
        manager.connection("h").call_tool("hang", {})
    assert time.monotonic() - started < 30  # only a call that ignored its timeout reaches it
    assert "echo: fine" in _text(manager.connection("h", timeout=15).call_tool("echo", {"text": "fine"}))


def test_server_down_at_start_comes_up_later(root: SupervisorHandle, pidfile: Path, tmp_path: Path):
    late = HttpMcp(env={"COX_TEST_PIDFILE": str(pidfile)})
    manager = _manager(root, late.url, tmp_path)
    status = manager.state()[0]["status"]
    assert status.startswith("failed: cannot connect to http://127.0.0.1:") and late.url in status, status
    with late:
        conn = manager.connection("h", timeout=15)
        assert "echo: late" in _text(conn.call_tool("echo", {"text": "late"}))


def test_an_http_tool_through_cox_run(tmp_path: Path, cox_home: Path, server: HttpMcp):
    ws = tmp_path / "ws"
    ws.mkdir()
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text(f'[mcp.servers.web]\nurl = "{server.url}"\n')
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [
        {"tool_calls": [{"id": "w1", "name": "mcp__web__echo", "input": {"text": "hello over http"}}]},
        {"text": "echoed"},
    ]}))
    env = {**os.environ, "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script), "-p", "echo",
                        "--permission-mode", "bypassPermissions", "--output-format", "stream-json"],
                       cwd=ws, env=env, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr
    events = [json.loads(x) for x in p.stdout.splitlines()]
    assert events[0]["mcp_servers"] == [{"name": "web", "status": "ready"}]
    done = [e for e in events if e["type"] == "tool_call_done"][0]
    assert done["result"]["status"] == "ok" and "hello over http" in done["result"]["visible"]
    assert not (cox_home / "mcp-auth").exists(), "a server that asks for no login leaves nothing filed"


# -- the reference server over streamable HTTP -----------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
NODE = shutil.which("node")


class Everything:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert NODE is not None
        self.proc = subprocess.Popen([NODE, str(ENTRY), "streamableHttp"], env={**os.environ, "PORT": str(self.port)},
                                     start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "server-everything exited"
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("server-everything did not listen within 30s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@pytest.mark.skipif(NODE is None or not ENTRY.is_file(),
                    reason="node or node_modules/@modelcontextprotocol/server-everything is missing: run scripts/test "
                           "(its set-up runs `npm ci`)")
def test_server_everything_over_streamable_http(root: SupervisorHandle, tmp_path: Path):
    everything = Everything()
    everything.start()
    try:
        manager = _manager(root, everything.url, tmp_path, name="ev", timeout_s=20.0)
        assert manager.state() == [{"name": "ev", "status": "ready"}], manager.state()
        tools = manager.tools()
        assert {"mcp__ev__echo", "mcp__ev__get-sum", "mcp__ev__trigger-long-running-operation"} <= set(tools)
        conn = manager.connection("ev")
        assert "Echo: hi" in _text(conn.call_tool("echo", {"message": "hi"}))
        assert "5" in _text(conn.call_tool("get-sum", {"a": 2, "b": 3}))
        killer = threading.Timer(0.5, everything.kill)
        killer.start()
        with pytest.raises(McpServerCrashed, match="mcp server 'ev'"):
            conn.call_tool("trigger-long-running-operation", {"duration": 10, "steps": 10}, timeout=20)
        killer.join()
        everything.start()
        conn = manager.connection("ev", timeout=20)
        assert "Echo: back" in _text(conn.call_tool("echo", {"message": "back"}))
    finally:
        everything.kill()
