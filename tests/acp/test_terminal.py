"""``bash`` in the editor's terminal (``terminal/*``): the argv the bash tool would run (its
sandbox included) runs as the client's process, the call shows the terminal, the result is the
bash tool's; an interrupt kills the terminal and nothing is left running."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from acp import text_block

from tests.waits import BOUND_S

from .driver import Editor, agent, gone, run, script


def _bash(cid: str, command: str) -> dict[str, object]:
    return {"tool_calls": [{"id": cid, "name": "bash", "input": {"command": command}}]}


def test_bash_runs_in_the_editors_terminal_and_cancel_kills_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = f"sleep 53.{os.getpid()}"  # its own: copies of the suite may run side by side
    s = script(tmp_path / "s.json", [_bash("b1", "echo from-the-terminal > t.txt; echo shown"), {"text": "ok"},
                                     _bash("b2", marker)])
    editor = Editor(["allow_once", "allow_once"], terminal=True)

    async def go() -> str:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=sid, prompt=[text_block("one")])).stop_reason == "end_turn"
            prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("two")]))
            await editor.wait(lambda: len(editor.terminals) == 2)
            await conn.cancel(session_id=sid)
            return str((await asyncio.wait_for(prompt, BOUND_S)).stop_reason)

    assert run(go()) == "cancelled"
    first, second = editor.terminals["term-1"], editor.terminals["term-2"]
    assert first.argv[-3:] == ["bash", "-c", "echo from-the-terminal > t.txt; echo shown"]
    if shutil.which("bwrap"):
        assert Path(first.argv[0]).name == "bwrap"  # the sandbox runs in the editor's terminal too
    assert (ws / "t.txt").read_text() == "from-the-terminal\n"
    assert first.released and not first.killed
    assert second.killed and second.released and second.proc.returncode is not None
    assert gone(marker)
    shows = [u for u in editor.of("tool_call_update") if u.tool_call_id == "b1" and u.content]
    assert shows[0].status == "in_progress" and shows[0].content[0].terminal_id == "term-1"
    done = shows[-1]
    terminal, text = done.content
    assert done.status == "completed" and terminal.terminal_id == "term-1"  # it stays shown
    assert "shown" in text.content.text and "[exit code 0]" in text.content.text
    assert [u.status for u in editor.of("tool_call_update") if u.tool_call_id == "b2"][-1] == "failed"
