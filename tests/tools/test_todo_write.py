"""todo_write: the list comes back rendered, its items in the result's meta; the tool keeps no
state of its own (the latest call in the conversation is the plan)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cox.actors.tools.base import ToolEnv, ToolInputError
from cox.actors.tools.todo import TodoWriteTool
from cox.protocol.types import Risk, ToolCall, ToolResult
from cox.supervisors import CancelScope


def write(env: ToolEnv, todos: object) -> ToolResult:
    return TodoWriteTool().call(ToolCall(id="t", name="todo_write", input={"todos": todos}), env)


@pytest.fixture
def env(tmp_path: Path) -> ToolEnv:
    return ToolEnv(roots=[tmp_path], cwd=tmp_path, cancel=CancelScope())


def test_list_is_rendered_and_returned(env: ToolEnv) -> None:
    res = write(env, [
        {"content": "read the parser", "status": "completed"},
        {"content": "fix  the\nbug", "status": "in_progress", "id": "fix"},
        {"content": "add tests", "status": "pending"},
    ])
    assert res.ok
    assert res.visible == "todos (1/3 done):\n[x] read the parser\n[>] fix the bug\n[ ] add tests"
    items = [
        {"id": "1", "content": "read the parser", "status": "completed"},
        {"id": "fix", "content": "fix the bug", "status": "in_progress"},
        {"id": "3", "content": "add tests", "status": "pending"},
    ]
    assert res.meta == {"todos": 3, "pending": 1, "in_progress": 1, "completed": 1, "items": items}


def test_each_call_replaces_the_list_and_empty_clears_it(env: ToolEnv) -> None:
    write(env, [{"content": "a", "status": "pending"}, {"content": "b", "status": "pending"}])
    res = write(env, [{"content": "a", "status": "completed"}])
    assert [t["content"] for t in res.meta["items"]] == ["a"] and res.visible == "todos (1/1 done):\n[x] a"
    res = write(env, [])
    assert res.visible == "todo list cleared" and res.meta["items"] == []


def test_several_in_progress_is_allowed_with_a_note(env: ToolEnv) -> None:
    res = write(env, [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}])
    assert res.ok and "2 items are in progress" in res.visible


@pytest.mark.parametrize("todos", [
    "not a list",
    ["not an object"],
    [{"content": "", "status": "pending"}],
    [{"content": "x", "status": "done"}],
    [{"content": "x", "status": "pending", "id": "a"}, {"content": "y", "status": "pending", "id": "a"}],
])
def test_bad_lists_are_refused_and_nothing_changes(env: ToolEnv, todos: object) -> None:
    before = repr(env)
    with pytest.raises(ToolInputError):
        write(env, todos)
    assert repr(env) == before  # the tool writes nothing into its environment


def test_contract(env: ToolEnv) -> None:
    tool = TodoWriteTool()
    call = tool.describe(ToolCall(id="t", name="todo_write", input={"todos": []}), env)
    assert call.risk is Risk.READ_ONLY and tool.parallel is False
    assert tool.writes(call, env) == []
