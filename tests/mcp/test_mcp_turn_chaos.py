"""A scripted turn that calls an MCP tool over and over while a seeded schedule SIGKILLs the
server: every call gets exactly one result, the turn ends normally, the rollout is valid, and
the server is back within 2 s."""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from cox.actors.mcp import McpServerSpec, Origin, start_mcp
from cox.actors.provider.scripted import ScriptedProvider
from cox.actors.session.actor import SessionSettings
from cox.actors.store.rollout import read_rollout
from cox.actors.tools.registry import builtin_tools
from cox.policy.permission import Engine
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode, ToolCall, new_ulid
from cox.surfaces.runtime import App
from tests.harness import Run, check_invariants
from tests.waits import BOUND_S

SERVER = Path(__file__).parent / "servers" / "testserver.py"
CALLS = 12
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("mcp")]


def _server_pids() -> list[int]:
    """The test servers this process started (its children: another xdist worker's are not ours
    to kill)."""
    pids = []
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(SERVER).encode() not in f.read():
                    continue
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            pids.append(int(pid))
    return pids


def test_sigkill_during_a_turn_of_mcp_calls(tmp_path: Path, cox_home: Path) -> None:
    seed = int(os.environ.get("COX_CHAOS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    ws = tmp_path / "ws"
    ws.mkdir()
    app = App(cox_home)
    stop = threading.Event()
    kills: list[int] = []
    try:
        spec = McpServerSpec(name="test", origin=Origin.USER, command=sys.executable, args=(str(SERVER),),
                             sandbox=False)
        manager = start_mcp(app.root, {"test": spec}, timeout_s=5.0, startup_timeout_s=15.0, cwd=ws)
        manager.wait_settled()
        tools = {**builtin_tools(), **manager.tools()}
        assert "mcp__test__echo" in tools
        replies = [{"tool_calls": [{"id": f"c{i}", "name": "mcp__test__echo", "input": {"text": f"n{i}"}}],
                    "delay_ms": rng.choice([50, 150, 300])} for i in range(CALLS)]
        replies.append({"text": "all done"})
        settings = SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="scripted", home=tmp_path,
                                   permission_mode=PermissionMode.BYPASS, max_turns=CALLS + 5)
        engine = Engine.compile([], [], [], home=tmp_path, roots=[ws])
        handle = app.open_session(settings, ScriptedProvider({"replies": replies}), tools, engine)

        first_seen: dict[int, float] = {pid: time.monotonic() - 1.0 for pid in _server_pids()}  # ready already

        def killer() -> None:
            # Kills land at random points of the turn, on a server that got through its start-up
            # (a server that dies while starting is the backoff's business, tested elsewhere).
            while not stop.is_set():
                time.sleep(rng.uniform(0.2, 0.8))
                now = time.monotonic()
                for pid in _server_pids():
                    if now - first_seen.setdefault(pid, now) < 0.6:
                        continue
                    try:
                        os.kill(pid, signal.SIGKILL)
                        kills.append(pid)
                    except ProcessLookupError:
                        pass

        t = threading.Thread(target=killer, daemon=True)
        t.start()
        handle.submit(m.UserTurn(text="echo twenty times"))
        run = Run()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                event, _ = handle.events.get(timeout=0.5)
            except Exception:
                continue
            run.events.append(event)
            if event.type == "turn_done":
                break
        stop.set()
        t.join(5)
        check_invariants(run)
        done = run.of("turn_done")
        assert done and done[0].stop.value == "end_turn", f"seed {seed}: {done}"
        results = [e for e in run.of("tool_call_done")]
        assert sorted(e.call_id for e in results) == sorted(f"c{i}" for i in range(CALLS))
        assert kills, f"seed {seed}: the schedule killed nothing"
        failed = [e for e in results if not e.result.ok]
        assert all("mcp server 'test'" in e.result.visible or "crash" in e.result.visible.lower()
                   or "restart" in e.result.visible.lower() for e in failed), [e.result.visible for e in failed]
        rollout = read_rollout(cox_home / "sessions" / f"{settings.session_id}.jsonl")
        assert not rollout.notices and [e["type"] for e in rollout.events][-1] == "turn_done"
        # back after the last kill (how soon is a figure for bench/mcp.py, not a test: the machine may be busy)
        started = time.monotonic()
        tool = manager.tools()["mcp__test__echo"]
        from cox.actors.tools.base import ToolEnv
        from cox.supervisors import CancelScope

        ok = False
        while time.monotonic() - started < BOUND_S and not ok:
            result = tool.call(ToolCall(id="x", name="mcp__test__echo", input={"text": "back"}),
                               ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope()))
            ok = result.ok
            if not ok:
                time.sleep(0.1)
        assert ok, f"seed {seed}: server not back within {BOUND_S} s"
    finally:
        stop.set()
        app.close()
