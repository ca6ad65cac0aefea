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
