"""One scripted session, run twice: cox's own events, and Claude Code's dialect read by the SDK's
own stream-json parser (``message_parser.parse_message``). Both must say the same: the assistant's
text, every tool call (Claude Code's spelling of it) and every tool result — a subagent's under
its parent's call (``parent_tool_use_id``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cox.actors.tools.spelling import to_claude
from tests.claude_code.conftest import ROOT

SCRIPT = {
    "model": "scripted",
    "replies": [
        {"thinking": "look first", "signature": "sig", "text": "Reading.",
         "tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}},
                        {"id": "b1", "name": "bash", "input": {"command": "ls"}}]},
        {"tool_calls": [{"id": "b2", "name": "bash", "input": {"command": "rm -rf a.txt"}},
                        {"id": "g1", "name": "grep", "input": {"pattern": "alpha"}}]},
        {"tool_calls": [{"id": "ag1", "name": "agent", "input": {"description": "look", "prompt": "read a.txt",
                                                                  "subagent_type": "explore"}}]},
        {"text": "Done: a.txt says alpha."},
    ],
    "agents": {"read a.txt": [{"tool_calls": [{"id": "cr1", "name": "read", "input": {"path": "a.txt"}}]},
                              {"text": "a.txt says alpha"}]},
}


def cox(args: list[str], ws: Path, home: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "COX_HOME": str(home / "cox"), "HOME": str(home), "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args], cwd=ws, env=env, capture_output=True,
                       text=True, timeout=90)
    assert p.returncode in (0, 2), p.stderr  # 2: cox's own dialect after a denial; Claude Code's says 0
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def from_cox(events: list[dict[str, Any]], cwd: str) -> tuple[list[Any], list[Any], list[Any]]:
    texts, calls, results = [], [], []
    for e in events:
        parent = None
        if e["type"] == "agent_event":
            parent, e = e["call_id"], e["event"]
        if e["type"] == "assistant_message":
            for b in e["content"]:
                if b["type"] == "text":
                    texts.append((parent, b["text"]))
                elif b["type"] == "tool_use":
                    calls.append((parent, b["id"], *to_claude(b["name"], b["input"], cwd)))
        elif e["type"] == "tool_call_done":
            results.append((parent, e["call_id"], e["result"]["visible"], e["result"]["status"] != "ok"))
    return texts, calls, results


def from_sdk(lines: list[dict[str, Any]]) -> tuple[list[Any], list[Any], list[Any]]:
    from claude_agent_sdk import AssistantMessage, TextBlock, ToolResultBlock, ToolUseBlock, UserMessage
    from claude_agent_sdk._internal.message_parser import parse_message

    texts, calls, results = [], [], []
    for line in lines:
        message = parse_message(line)
        if isinstance(message, AssistantMessage):
            for b in message.content:
                if isinstance(b, TextBlock):
                    texts.append((message.parent_tool_use_id, b.text))
                elif isinstance(b, ToolUseBlock):
                    calls.append((message.parent_tool_use_id, b.id, b.name, b.input))
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for b in message.content:
                if isinstance(b, ToolResultBlock):
                    results.append((message.parent_tool_use_id, b.tool_use_id, b.content, bool(b.is_error)))
    return texts, calls, results


def test_the_sdk_parser_reads_what_cox_events_say(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps(SCRIPT))
    own = cox(["run", "--script", str(script), "-p", "look", "--output-format", "stream-json"], ws, tmp_path / "h1")
    claude = cox(["-p", "look", "--output-format", "stream-json", "--verbose", "--script", str(script)], ws,
                 tmp_path / "h2")
    texts, calls, results = from_cox(own, str(ws))
    assert from_sdk(claude) == (texts, calls, results)
    assert (None, "Done: a.txt says alpha.") in texts and ("ag1", "a.txt says alpha") in texts
    assert [c[1:3] for c in calls] == [("r1", "Read"), ("b1", "Bash"), ("b2", "Bash"), ("g1", "Grep"),
                                       ("ag1", "Task"), ("cr1", "Read")]
    assert ("ag1", "cr1") in [(c[0], c[1]) for c in calls]
    assert any(r[1] == "b2" and r[3] for r in results)  # the denied call, an error result in both
    assert claude[-1]["type"] == "result" and claude[-1]["subtype"] == "success"
    assert claude[-1]["permission_denials"] == [{"tool_name": "Bash", "tool_use_id": "b2",
                                                "tool_input": {"command": "rm -rf a.txt"}}]
