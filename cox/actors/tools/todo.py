"""``todo_write``: the model's task list for the work at hand.

Writing the plan down keeps a long task on track (and shows the person what the model thinks
it is doing). Each call replaces the whole list, so there is no partial state to merge: the list
is the call's input, rendered in its result (the items also in ``meta["items"]``), and the
latest ``todo_write`` in the conversation is the plan. The tool keeps no state and changes no
file, hence ReadOnly, but calls run one at a time so the last write wins in order.
"""

from __future__ import annotations

from typing import Any

from cox.protocol.types import Risk, ToolCall, ToolResult

from . import catalog
from .base import BaseTool, ToolEnv, ToolInputError

STATUSES = catalog.TODO_STATUSES
_MARKS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}


def parse_todos(raw: Any) -> list[dict[str, str]]:
    """The checked list: every item has ``id``, ``content`` and ``status`` (missing ids are
    numbered by position)."""
    if not isinstance(raw, list):
        raise ToolInputError("'todos' must be a list of {content, status, id?} items")
    todos: list[dict[str, str]] = []
    seen: set[str] = set()
    for n, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise ToolInputError(f"todo {n} must be an object with content and status")
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise ToolInputError(f"todo {n}: 'content' must be a non-empty string")
        status = item.get("status", "pending")
        if status not in STATUSES:
            raise ToolInputError(f"todo {n}: 'status' must be one of {', '.join(STATUSES)}, not {status!r}")
        ident = item.get("id")
        ident = str(n) if ident is None or ident == "" else str(ident)
        if ident in seen:
            raise ToolInputError(f"todo {n}: id {ident!r} is used twice")
        seen.add(ident)
        todos.append({"id": ident, "content": " ".join(content.split()), "status": status})
    return todos


def render(todos: list[dict[str, str]]) -> str:
    if not todos:
        return "todo list cleared"
    done = sum(1 for t in todos if t["status"] == "completed")
    lines = [f"todos ({done}/{len(todos)} done):"]
    lines += [f"{_MARKS[t['status']]} {t['content']}" for t in todos]
    working = sum(1 for t in todos if t["status"] == "in_progress")
    if working > 1:
        lines.append(f"note: {working} items are in progress; finish one before starting the next")
    return "\n".join(lines)


class TodoWriteTool(BaseTool):
    spec = catalog.TODO_WRITE

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        todos = parse_todos(call.input.get("todos"))
        counts = {s: sum(1 for t in todos if t["status"] == s) for s in STATUSES}
        return ToolResult(visible=render(todos), meta={"todos": len(todos), **counts, "items": todos})
