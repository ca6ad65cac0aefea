"""The client's ``fs/write_text_file`` under the file tools: a write lands in the editor's buffer
and on disk, and is checkpointed (its pre-image saved, so cox's rewind covers it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from acp import text_block

from tests.waits import BOUND_S

from .driver import ROOT, Editor, agent, run, script


def test_a_write_lands_in_the_clients_buffer_and_is_checkpointed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("old\n")
    s = script(tmp_path / "s.json", [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "a.txt", "content": "new\n"}}]},
        {"tool_calls": [{"id": "e1", "name": "edit", "input": {"path": "b.txt", "old_string": "x",
                                                                "new_string": "y"}}]},
        {"text": "done"},
    ])
    editor = Editor(["allow_once"], fs=True)

    async def go() -> str:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            return str((await conn.prompt(session_id=sid, prompt=[text_block("go")])).stop_reason)

    assert run(go()) == "end_turn"
    assert editor.buffers == {str(ws / "a.txt"): "new\n"}  # the failed edit (no b.txt) sent nothing
    assert (ws / "a.txt").read_text() == "new\n"
    rollout = next((tmp_path / "cox-home").rglob("*.jsonl")).read_text().splitlines()
    checkpoints = [json.loads(line) for line in rollout if '"type":"checkpoint"' in line]
    assert [(c["call_id"], c["files"]) for c in checkpoints] == [("w1", ["a.txt"])]
    # cox's rewind (here from `cox run --resume`) restores what the bridged write replaced.
    sid = json.loads(rollout[0])["session_id"]
    rewind = json.dumps({"type": "rewind", "to_turn": 1, "what": "code"})
    done = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--resume", sid, "--input-format",
                           "stream-json", "--output-format", "stream-json", "--script", str(s)], input=rewind + "\n",
                          cwd=ws, capture_output=True, text=True, timeout=BOUND_S, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert '"type":"rewound"' in done.stdout, done.stderr
    assert (ws / "a.txt").read_text() == "old\n"


def test_a_read_sees_the_unsaved_buffer_after_the_read_tool_accepted_the_path(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("on disk\n")
    (ws / ".env").write_text("TOKEN=hunter2\n")
    (tmp_path / "cox-home").mkdir(exist_ok=True)
    (tmp_path / "cox-home" / "config.toml").write_text('[permissions]\ndeny = ["Read(**/.env)"]\n')
    s = script(tmp_path / "s.json", [
        {"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
        {"tool_calls": [{"id": "r2", "name": "read", "input": {"path": ".env"}}]},
        {"text": "done"},
    ])
    editor = Editor(fs=True)
    editor.buffers[str(ws / "a.txt")] = "unsaved line\n"

    async def go() -> None:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("go")])

    run(go())
    results = {u.tool_call_id: u for u in editor.of("tool_call_update") if u.status}
    assert results["r1"].status == "completed" and "1\tunsaved line" in results["r1"].content[0].content.text
    assert results["r2"].status == "failed"  # a Read deny rule covers .env: the client was never asked
    assert editor.reads == [str(ws / "a.txt")]


def test_without_the_capability_nothing_is_sent(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path / "s.json", [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "a.txt", "content": "new\n"}}]},
        {"text": "done"},
    ])
    editor = Editor(["allow_once"], fs=False)

    async def go() -> None:
        async with agent(editor, ws, s) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("go")])

    run(go())
    assert editor.buffers == {} and (ws / "a.txt").read_text() == "new\n"
