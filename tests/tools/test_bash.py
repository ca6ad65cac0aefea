"""The bash tool with real processes: sandbox, timeouts, interrupts, big output, background jobs."""

from __future__ import annotations

import http.server
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cox.actors.tools.base import ToolEnv, ToolServices
from cox.actors.tools.bash import BashTool
from cox.actors.tools.jobs import Jobs
from cox.actors.tools.shell_env import sandbox_status
from cox.protocol.types import SandboxMode, ToolCall
from cox.supervisors import CancelScope
from tests.waits import BOUND_S

needs_sandbox = pytest.mark.skipif(not sandbox_status()[0], reason=f"no working sandbox here: {sandbox_status()[1]}")


class Seen:
    """What a call archived and streamed."""

    def __init__(self) -> None:
        self.archived: list[bytes] = []
        self.outputs: list[str] = []

    def archive(self, data: bytes) -> str:
        self.archived.append(data)
        return f"A{len(self.archived)}"


def env_for(ws: Path, mode: SandboxMode = SandboxMode.WORKSPACE_WRITE, seen: Seen | None = None,
            **services: Any) -> ToolEnv:
    seen = seen or Seen()
    return ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope(), output=seen.outputs.append,
                   services=ToolServices(sandbox_mode=mode, archive=seen.archive, jobs=Jobs(), **services))


def run(env: ToolEnv, command: str, **kw):
    return BashTool().call(ToolCall(id="b", name="bash", input={"command": command, **kw}), env)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    return d


def gone(pid: int) -> bool:
    """Dead: no such process, or a zombie waiting for a reaper (PID 1 in a container may not reap)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@needs_sandbox  # without one, nothing but danger-full-access runs (test_bash_sandbox.py)
def test_stdout_stderr_and_exit_code(ws):
    r = run(env_for(ws), "echo out; echo err >&2; exit 3")
    assert r.status.value == "error" and r.exit_code == 3
    assert "out" in r.visible and "[stderr]\nerr" in r.visible and "[exit code 3]" in r.visible


@pytest.fixture
def outside_dir(ws: Path) -> Iterator[Path]:
    """A folder of ours the sandbox does not make writable: not under /tmp (writable, or private
    to the session), the workspace or its roots, wherever HOME or the pytest temp folder is."""
    for base in (Path("/var/tmp"), Path.home(), Path("/srv"), Path("/opt")):
        resolved = base.resolve()
        if resolved.is_relative_to("/tmp") or resolved.is_relative_to(ws.resolve()):
            continue
        try:
            probe = Path(tempfile.mkdtemp(prefix="cox-sandbox-probe-", dir=resolved))
        except OSError:
            continue
        try:
            yield probe
        finally:
            shutil.rmtree(probe, ignore_errors=True)
        return
    pytest.skip("no folder outside /tmp and the workspace to probe the sandbox with")


@needs_sandbox
def test_sandbox_confines_writes(ws, tmp_path, outside_dir):
    outside = tmp_path / "outside.txt"
    probe = outside_dir / "written"
    r = run(env_for(ws), f"echo in > inside.txt && echo out > {probe}; echo done")
    assert (ws / "inside.txt").read_text() == "in\n"
    assert not probe.exists(), "wrote outside the workspace"
    assert "Read-only file system" in r.visible
    r = run(env_for(ws, SandboxMode.READ_ONLY), "echo x > inside2.txt")
    assert r.exit_code != 0 and not (ws / "inside2.txt").exists()
    r = run(env_for(ws, SandboxMode.DANGER_FULL_ACCESS), f"echo y > {outside}")
    assert r.exit_code == 0 and outside.read_text() == "y\n"


@needs_sandbox
def test_network_is_unreachable_when_off(ws):
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    port = server.server_address[1]
    t = threading.Thread(target=server.serve_forever, daemon=True, kwargs={"poll_interval": 0.02})
    t.start()
    try:
        probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\""
        off = run(env_for(ws), probe)
        assert off.exit_code != 0 and "connected" not in off.visible
        on = run(env_for(ws, network=True), probe)
        assert on.exit_code == 0 and "connected" in on.visible
    finally:
        server.shutdown()
        server.server_close()


@needs_sandbox  # without one, nothing but danger-full-access runs (test_bash_sandbox.py)
def test_interrupt_kills_the_group_within_a_second(ws):
    env = env_for(ws)
    pidfile = ws / "child.pid"
    result: dict = {}
    t = threading.Thread(target=lambda: result.update(r=run(env, f"sleep 600 & echo $! > {pidfile}; wait")))
    t.start()
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    started = time.monotonic()
    env.cancel.cancel()
    t.join(BOUND_S)
    assert time.monotonic() - started < 30  # sleep 600 otherwise: only a missed cancel reaches this
    assert "[interrupted" in result["r"].visible


@needs_sandbox  # without one, nothing but danger-full-access runs (test_bash_sandbox.py)
def test_timeout_kills_the_group(ws):
    started = time.monotonic()
    r = run(env_for(ws), "sleep 60", timeout=1)
    assert time.monotonic() - started < 30  # only a missed timeout reaches this
    assert "timed out after 1 s" in r.visible


def test_leftover_background_processes_end_with_the_call(ws):
    pidfile = ws / "srv.pid"
    run(env_for(ws, SandboxMode.DANGER_FULL_ACCESS), f"sleep 300 & echo $! > {pidfile}")
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gone(pid)


def test_run_in_background_is_owned_by_the_session(ws):
    env = env_for(ws, SandboxMode.DANGER_FULL_ACCESS)
    r = run(env, "echo started; sleep 300", run_in_background=True)
    pid = r.meta["pid"]
    os.kill(pid, 0)  # still running after the call returned
    time.sleep(0.2)
    assert "started" in Path(r.meta["log"]).read_text()
    assert env.services.jobs is not None and env.services.jobs.stop_all() == 1
    assert gone(pid)


@needs_sandbox  # without one, nothing but danger-full-access runs (test_bash_sandbox.py)
def test_big_output_spills_and_is_archived_whole(ws):
    seen = Seen()
    env = env_for(ws, seen=seen)
    r = run(env, "seq 1 400000")
    data = seen.archived[0]
    assert data.decode().splitlines()[-1] == "400000" and len(data) > 1024 * 1024
    assert r.archive_id == "A1" and "expand #A1" in r.visible and len(r.visible) < 64 * 1024
    streamed = "".join(seen.outputs)
    assert streamed.startswith("1\n2\n") and len(streamed) <= 64 * 1024


@needs_sandbox  # without one, nothing but danger-full-access runs (test_bash_sandbox.py)
def test_login_environment_is_used(ws, monkeypatch):
    from cox.actors.tools import shell_env

    shell_env.reset_for_tests()
    monkeypatch.setenv("COX_PROBE_VAR", "from-login")
    r = run(env_for(ws), "echo $COX_PROBE_VAR")
    assert "from-login" in r.visible
    shell_env.reset_for_tests()


def test_sigterm_ignoring_command_is_killed(ws):
    seen = Seen()
    env = env_for(ws, SandboxMode.DANGER_FULL_ACCESS, seen)
    result: dict = {}
    t = threading.Thread(target=lambda: result.update(
        r=run(env, "trap '' TERM; echo ready; sleep 600")))
    t.start()
    deadline = time.monotonic() + 10
    while not seen.outputs:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    env.cancel.cancel()
    t.join(5)
    assert not t.is_alive()
    assert result["r"].exit_code in (-signal.SIGKILL, 128 + signal.SIGKILL, -signal.SIGTERM)
