"""``session/request_permission`` for every approval, answered each way, and ``session/cancel``
during a running ``sleep``: stopReason ``cancelled`` and nothing left running."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from acp import text_block

from tests.waits import BOUND_S

from .driver import Editor, agent, gone, run, running, script


def _bash(cid: str, command: str) -> dict[str, object]:
    return {"tool_calls": [{"id": cid, "name": "bash", "input": {"command": command}}]}


def test_each_answer_is_the_sessions_own_decision(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path / "s.json", [
        _bash("a1", "touch once"), {"text": "ok"},                       # allow once
        _bash("a2", "touch always"), {"text": "ok"},                     # allow always: the session grant
        _bash("a3", "touch always"), {"text": "ok"},                     # the grant holds: not asked
        _bash("a4", "touch rejected"),                                   # reject once: the turn ends
        _bash("a5", "touch never"),                                      # reject always: denied, the turn ends
        _bash("a6", "touch never"), {"text": "ok"},                      # denied again without asking; goes on
        _bash("a7", "touch rejected"), {"text": "ok"},                   # reject once was once: asked again
    ])
    editor = Editor(["allow_once", "allow_always", "reject_once", "reject_always", "allow_once"])

    async def go() -> list[str]:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            stops = []
            for _ in range(7):
                stops.append((await conn.prompt(session_id=sid, prompt=[text_block("go")])).stop_reason)
            return stops

    assert run(go()) == ["end_turn"] * 7
    assert [c.tool_call_id for c in editor.asked] == ["a1", "a2", "a4", "a5", "a7"]
    assert {p.name for p in ws.iterdir()} - {".cox"} == {"once", "always", "rejected"}  # "rejected" by a7
    failed = {u.tool_call_id for u in editor.of("tool_call_update") if u.status == "failed"}
    assert failed == {"a4", "a5", "a6"}
    rollout = next((tmp_path / "cox-home").rglob("*.jsonl")).read_text()
    assert "rejected `touch never` for this session" in rollout  # what the model was told for a6


def test_cancel_during_a_running_sleep_ends_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = f"sleep 47.{os.getpid()}"  # its own: copies of the suite may run side by side
    s = script(tmp_path / "s.json", [_bash("z1", marker), {"text": "after"}])
    editor = Editor(["allow_once"])

    async def go() -> str:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("wait")]))
            async def started() -> None:
                while not running(marker):
                    await asyncio.sleep(0.02)
            await asyncio.wait_for(started(), BOUND_S)
            await conn.cancel(session_id=sid)
            answer = await asyncio.wait_for(prompt, BOUND_S)
            assert gone(marker)  # killed when the cancel came, not when the session closed
            return str(answer.stop_reason)

    assert run(go()) == "cancelled"
    ended = [u for u in editor.of("tool_call_update") if u.tool_call_id == "z1"]
    assert ended and ended[-1].status == "failed"


def test_a_cancelled_permission_request_runs_nothing(tmp_path: Path) -> None:
    """The client answers ``cancelled`` (it dropped the request), then the person cancels the
    turn while another request is open: neither call runs, none stays pending."""
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path / "s.json", [_bash("c1", "touch nope"), _bash("c2", "touch nope2")])
    editor = Editor(["cancel", "hold"])

    async def go() -> tuple[str, str]:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            first = (await conn.prompt(session_id=sid, prompt=[text_block("go")])).stop_reason
            prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("again")]))
            await editor.wait(lambda: len(editor.asked) == 2)
            await conn.cancel(session_id=sid)
            editor.release.set()  # a client answers its open requests "cancelled" after session/cancel
            second = (await asyncio.wait_for(prompt, BOUND_S)).stop_reason
            return str(first), str(second)

    assert run(go()) == ("end_turn", "cancelled")
    assert not (ws / "nope").exists() and not (ws / "nope2").exists()
    last = {u.tool_call_id: u.status for u in editor.of("tool_call_update") if u.status}
    assert last == {"c1": "failed", "c2": "failed"}


def test_the_editor_stopping_cox_mid_call_leaves_nothingrunning(tmp_path: Path) -> None:
    """SIGTERM (an editor closing its agent) during a running ``sleep``: cox stops as on EOF."""
    import signal

    from acp import spawn_agent_process

    from .driver import ROOT

    ws = tmp_path / "ws"
    ws.mkdir()
    marker = f"sleep 61.{os.getpid()}"
    s = script(tmp_path / "s.json", [_bash("k1", marker)])
    editor = Editor(["allow_once"])

    async def go() -> int | None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        async with spawn_agent_process(editor, sys.executable, "-m", "cox.surfaces.cli", "acp", "--script", str(s),
                                       env=env, cwd=str(ws), transport_kwargs={"stderr": subprocess.DEVNULL}) as (
                conn, proc):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("wait")]))
            async def started() -> None:
                while not running(marker):
                    await asyncio.sleep(0.02)
            await asyncio.wait_for(started(), BOUND_S)
            proc.send_signal(signal.SIGTERM)
            return await asyncio.wait_for(proc.wait(), BOUND_S)

    assert run(go()) == 0
    assert gone(marker)
