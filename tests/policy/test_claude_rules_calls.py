"""Permission rules written for Claude Code match the same calls in either spelling, through a
real session: the model calls ``Read``/``read``, ``MultiEdit``/``edit``, ``Task``/``agent``…
and each pair meets the same rule with the same outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cox.actors.tools.agent import agent_tools
from cox.actors.tools.registry import builtin_tools
from cox.protocol.types import ApprovalPolicy, PermissionMode
from tests.harness import run_session

DENY = ["Read(./src/**)", "Edit(docs/**)", "Bash(npm test:*)", "WebFetch(domain:example.com)", "Task(Explore)",
        "TodoWrite"]


def _tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for rel, text in {"src/a.py": "x = 1\n", "docs/d.md": "old\n", "other.txt": "fine\n"}.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


def _outcomes(run: Any) -> dict[str, tuple[str, str]]:
    return {e.call_id: (e.result.status.value, e.result.visible) for e in run.of("tool_call_done")}


def test_claude_code_deny_rules_stop_both_spellings(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    pairs: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("Read(./src/**)", {"name": "Read", "input": {"file_path": str(ws / "src" / "a.py")}},
         {"name": "read", "input": {"path": "src/a.py"}}),
        ("Read(./src/**)", {"name": "Grep", "input": {"pattern": "x", "path": "src", "output_mode": "count"}},
         {"name": "grep", "input": {"pattern": "x", "path": "src"}}),
        ("Edit(docs/**)", {"name": "MultiEdit", "input": {"file_path": str(ws / "docs" / "d.md"),
                                                          "edits": [{"old_string": "old", "new_string": "new"}]}},
         {"name": "edit", "input": {"path": "docs/d.md", "old_string": "old", "new_string": "new"}}),
        ("Edit(docs/**)", {"name": "Write", "input": {"file_path": "docs/new.md", "content": "n\n"}},
         {"name": "write", "input": {"path": "docs/new.md", "content": "n\n"}}),
        ("Bash(npm test:*)", {"name": "Bash", "input": {"command": "npm test -- --watch", "timeout": 60000}},
         {"name": "bash", "input": {"command": "npm test -- --watch"}}),
        ("WebFetch(domain:example.com)", {"name": "WebFetch", "input": {"url": "https://docs.example.com/x",
                                                                         "prompt": "summarise"}},
         {"name": "web_fetch", "input": {"url": "https://docs.example.com/x"}}),
        ("Task(Explore)", {"name": "Task", "input": {"description": "look", "prompt": "find it",
                                                     "subagent_type": "Explore"}},
         {"name": "agent", "input": {"description": "look", "prompt": "find it", "subagent_type": "explore"}}),
        ("TodoWrite", {"name": "TodoWrite", "input": {"todos": [{"content": "a", "status": "pending",
                                                                 "activeForm": "Doing a"}]}},
         {"name": "todo_write", "input": {"todos": [{"content": "a", "status": "pending"}]}}),
    ]
    calls = []
    for i, (_, claude, cox) in enumerate(pairs):
        calls += [{"id": f"c{i}", **claude}, {"id": f"x{i}", **cox}]
    controls = [{"id": "ok1", "name": "Read", "input": {"file_path": str(ws / "other.txt")}},
                {"id": "ok2", "name": "Task", "input": {"description": "look", "prompt": "REPORT please",
                                                        "subagent_type": "general-purpose"}}]
    run = run_session(ws, tmp_path, [{"tool_calls": [c]} for c in calls + controls] + [{"text": "done"}], "go",
                      deny=DENY, mode=PermissionMode.BYPASS, tools={**builtin_tools(), **agent_tools()},
                      agents={"REPORT": [{"text": "nothing found"}]})
    out = _outcomes(run)
    for i, (rule, claude, _) in enumerate(pairs):
        for call_id in (f"c{i}", f"x{i}"):
            status, visible = out[call_id]
            assert status == "denied" and f"rule {rule} " in visible, (claude["name"], call_id, visible)
    assert out["ok1"][0] == "ok" and out["ok2"][0] == "ok", (out["ok1"], out["ok2"])
    assert (ws / "docs" / "d.md").read_text() == "old\n" and not (ws / "docs" / "new.md").exists()


def test_claude_code_allow_rules_let_both_spellings_through_and_nothing_else(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    calls = [
        {"id": "b1", "name": "Bash", "input": {"command": "touch made1.txt"}},
        {"id": "b2", "name": "bash", "input": {"command": "touch made2.txt"}},
        {"id": "m1", "name": "MultiEdit", "input": {"file_path": "docs/d.md", "edits": [
            {"old_string": "old", "new_string": "mid"}, {"old_string": "mid", "new_string": "new"}]}},
        {"id": "w1", "name": "Write", "input": {"file_path": str(ws / "other.txt"), "content": "changed\n"}},
        {"id": "b3", "name": "Bash", "input": {"command": "touch made3.txt; rm made1.txt"}},
    ]
    run = run_session(ws, tmp_path, [{"tool_calls": [c]} for c in calls] + [{"text": "done"}], "go",
                      allow=["Bash(touch:*)", "Edit(docs/**)"], mode=PermissionMode.DEFAULT,
                      policy=ApprovalPolicy.NEVER)
    out = _outcomes(run)
    assert {k: v[0] for k, v in out.items()} == {"b1": "ok", "b2": "ok", "m1": "ok", "w1": "denied", "b3": "denied"}
    assert (ws / "docs" / "d.md").read_text() == "new\n" and (ws / "other.txt").read_text() == "fine\n"
    assert (ws / "made1.txt").exists() and (ws / "made2.txt").exists() and not (ws / "made3.txt").exists()
