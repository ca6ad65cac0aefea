"""A model that calls Claude Code's tools (``Write``, ``Read``, ``MultiEdit``, ``Grep``…) with Claude
Code's fields, through a real session: each call runs as cox's tool through the one choke point,
cox's events name it as it ran (cox's spelling), and the model's own history keeps the name and
fields it used, so the next request shows the model its own words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cox.protocol.types import PermissionMode
from tests.harness import check_invariants, run_session


def _tool_uses(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for msg in messages if msg["role"] == "assistant" for b in msg["content"] if b.get("type") == "tool_use"]


def test_every_claude_code_tool_runs_as_coxs_and_the_history_keeps_the_models_spelling(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("x = 1\ny = 2\n")
    target = ws / "notes.txt"
    calls = [
        {"id": "c1", "name": "Write", "input": {"file_path": str(target), "content": "one\ntwo\n"}},
        {"id": "c2", "name": "Read", "input": {"file_path": str(target), "offset": 2, "limit": 1}},
        {"id": "c3", "name": "Edit", "input": {"file_path": str(target), "old_string": "one", "new_string": "1",
                                               "replace_all": False}},
        {"id": "c4", "name": "MultiEdit", "input": {"file_path": str(ws / "src" / "a.py"), "edits": [
            {"old_string": "x = 1", "new_string": "x = 10"}, {"old_string": "y = 2", "new_string": "y = 20"}]}},
        {"id": "c5", "name": "Grep", "input": {"pattern": "= [12]0", "output_mode": "count", "-n": True}},
        {"id": "c6", "name": "Grep", "input": {"pattern": "Y = 2", "-i": True, "output_mode": "content", "-C": 1,
                                               "type": "py"}},
        {"id": "c7", "name": "Glob", "input": {"pattern": "**/*.py"}},
        {"id": "c8", "name": "LS", "input": {"path": str(ws), "ignore": ["*.pyc"]}},
        {"id": "c9", "name": "Bash", "input": {"command": "cat notes.txt", "timeout": 5000,
                                               "description": "show the notes"}},
        {"id": "c10", "name": "TodoWrite", "input": {"todos": [
            {"content": "check", "status": "in_progress", "activeForm": "Checking"}]}},
        {"id": "c11", "name": "Read", "input": {"file_path": str(target), "pages": "1-2"}},
    ]
    run = run_session(ws, tmp_path, [{"tool_calls": [c]} for c in calls] + [{"text": "done"}], "go",
                      mode=PermissionMode.BYPASS)
    check_invariants(run)
    done = {e.call_id: e.result for e in run.of("tool_call_done")}
    assert [done[c["id"]].status.value for c in calls] == ["ok"] * 10 + ["error"], {
        k: v.visible for k, v in done.items()}
    assert target.read_text() == "1\ntwo\n"
    assert (ws / "src" / "a.py").read_text() == "x = 10\ny = 20\n"
    assert done["c2"].visible.strip().endswith("two") and "one" not in done["c2"].visible
    assert done["c5"].visible.splitlines()[0] == "src/a.py:2"
    assert done["c6"].visible.splitlines() == ["src/a.py-1-x = 10", "src/a.py:2:y = 20"]
    assert "1\ntwo" in done["c9"].visible
    assert done["c11"].visible == "read: unknown field 'pages'; read takes path, offset, limit"
    # cox's events: the call as it ran, in cox's spelling
    requested = {e.call.id: e.call for e in run.of("tool_call_requested")}
    assert [requested[c["id"]].name for c in calls] == ["write", "read", "edit", "edit", "grep", "grep", "glob",
                                                        "ls", "bash", "todo_write", "read"]
    assert requested["c1"].input == {"path": str(target), "content": "one\ntwo\n"}
    assert requested["c9"].input["timeout"] == 5
    assert requested["c4"].subject == str(ws / "src" / "a.py")
    # the model's history: its own names and fields, in every request after the call
    assert run.provider is not None
    sent = _tool_uses(run.provider.requests[-1].messages)
    assert [(b["name"], b["input"]) for b in sent] == [(c["name"], c["input"]) for c in calls]


def test_a_claude_code_call_to_a_tool_the_session_lacks_names_what_the_model_called(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    from cox.actors.tools.registry import builtin_tools

    tools = {k: v for k, v in builtin_tools().items() if k != "bash"}
    run = run_session(ws, tmp_path, [{"tool_calls": [{"id": "b1", "name": "Bash", "input": {"command": "ls"}}]},
                                     {"text": "done"}], "go", tools=tools, mode=PermissionMode.BYPASS)
    [result] = [e.result for e in run.of("tool_call_done")]
    assert result.visible.startswith("unknown tool 'Bash'; available: ")


def test_an_edited_input_goes_back_into_the_history_in_the_models_spelling(tmp_path: Path) -> None:
    """The person edits a ``Write`` at approval: cox runs cox's input, the model's history shows
    the same change as ``file_path``."""
    from cox.protocol import messages as m
    from cox.protocol.types import Decision

    ws = tmp_path / "ws"
    ws.mkdir()

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "approval_required":
            edited = {**event.call.input, "path": "other.txt"}
            handle.submit(m.Approve(call_id=event.call.id, decision=Decision.EDIT, edited_input=edited))

    run = run_session(ws, tmp_path, [
        {"tool_calls": [{"id": "w1", "name": "Write", "input": {"file_path": "mine.txt", "content": "hi\n"}}]},
        {"text": "done"}], "go", react=react)
    assert (ws / "other.txt").read_text() == "hi\n" and not (ws / "mine.txt").exists()
    assert run.provider is not None
    [block] = _tool_uses(run.provider.requests[-1].messages)
    assert (block["name"], block["input"]) == ("Write", {"file_path": "other.txt", "content": "hi\n"})
