"""The MCP servers an ACP client passes in ``session/new`` connect for that session, under a
project server's trust rules: nothing starts before the person accepted the launch (asked in the
editor, as ``cox mcp trust`` asks on a terminal), and the engine still judges every tool call."""

from __future__ import annotations

import sys
from pathlib import Path

from acp import text_block
from acp.schema import EnvVariable, McpServerStdio

from .driver import Editor, agent, run, script

SERVER = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "testserver.py"


def test_a_client_server_starts_only_once_trusted_and_its_calls_are_judged(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    pidfile, marker = ws / "server.pid", ws / "calls.txt"
    server = McpServerStdio(name="ed", command=sys.executable, args=[str(SERVER)],
                            env=[EnvVariable(name="COX_TEST_PIDFILE", value=str(pidfile)),
                                 EnvVariable(name="COX_TEST_MARKER", value=str(marker))])
    s = script(tmp_path / "s.json", [
        {"tool_calls": [{"id": "m1", "name": "mcp__ed__echo", "input": {"text": "from the editor"}}]},
        {"text": "done"},
    ])
    editor = Editor(["decline", "trust", "allow_once"])

    async def go() -> None:
        async with agent(editor, ws, s) as conn:
            first = (await conn.new_session(cwd=str(ws), mcp_servers=[server])).session_id
            await editor.wait(lambda: len(editor.asked) == 1)
            assert editor.asked[0].tool_call_id == "mcp-trust:ed" and not pidfile.exists()  # declined: never run
            second = (await conn.new_session(cwd=str(ws), mcp_servers=[server])).session_id
            await editor.wait(lambda: len(editor.asked) == 2)
            await editor.wait(lambda: pidfile.exists())  # trusted: started once to list its tools
            third = (await conn.new_session(cwd=str(ws), mcp_servers=[server])).session_id
            answer = await conn.prompt(session_id=third, prompt=[text_block("echo")])
            assert answer.stop_reason == "end_turn"
            assert len({first, second, third}) == 3

    run(go())
    assert [c.tool_call_id for c in editor.asked] == ["mcp-trust:ed", "mcp-trust:ed", "m1"]  # the call was asked
    assert "from the editor" in marker.read_text()
    done = [u for u in editor.of("tool_call_update") if u.tool_call_id == "m1"]
    assert done[-1].status == "completed"
