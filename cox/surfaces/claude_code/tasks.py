"""Subagents as Claude Code's tasks: ``system/task_started``, ``task_progress`` and
``task_notification`` frames, from the ``agent_event``s a parent relays for each child.

As Claude Code streams them (and the SDK parses them into ``TaskStartedMessage`` …): the task's
id is the agent's id (what ``stop_task`` takes), ``tool_use_id`` the parent's ``Task`` call and
``description`` that call's. ``task_started`` comes with the first event of a child's turn
(foreground or background alike), or, for a background agent, as soon as the parent's ``Task``
call says it started (before the parent's turn can end, as Claude Code's does), ``task_progress`` after each of its tool calls (the tokens,
calls and time so far, the last tool's Claude Code name), ``task_notification`` when its turn
ends: ``completed``, ``failed`` (an error, a budget or turn limit) or ``stopped`` (interrupted or
closed), with the child's last words as ``summary``. cox keeps no task output file, so
``output_file`` is empty.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cox.slim import dataclass

__all__ = ["Tasks"]

SUMMARY_CAP = 2000
_STOPPED = frozenset({"interrupted"})
_DONE = frozenset({"end_turn", "max_tokens"})


@dataclass
class _Task:
    description: str
    tool_use_id: str | None
    started: float
    tokens: int = 0
    tool_uses: int = 0
    last_tool: str | None = None
    text: str = ""

    def usage(self) -> dict[str, int]:
        return {"total_tokens": self.tokens, "tool_uses": self.tool_uses,
                "duration_ms": int((time.monotonic() - self.started) * 1000)}


class Tasks:
    def __init__(self, send: Callable[..., None], describe: Callable[[str], str],
                 claude_name: Callable[[str, dict[str, Any]], str]) -> None:
        self.send = send
        """``send(subtype, **fields)``: one system frame on the wire."""
        self.describe = describe
        """The ``description`` of the parent's ``Task`` call with this id."""
        self.claude_name = claude_name
        self.running: dict[str, _Task] = {}

    def start(self, agent_id: str, call_id: str) -> _Task:
        """Agent ``agent_id``'s task, its ``task_started`` sent the first time it is named."""
        task = self.running.get(agent_id)
        if task is None:
            task = self.running[agent_id] = _Task(self.describe(call_id), call_id or None, time.monotonic())
            self.send("task_started", task_id=agent_id, description=task.description, tool_use_id=task.tool_use_id,
                      task_type="local_agent")
        return task

    def on(self, agent_id: str, call_id: str, inner: Any) -> None:
        """One relayed child event ``inner`` of agent ``agent_id`` (started by call ``call_id``)."""
        if agent_id not in self.running and inner.type in ("turn_done", "rewound", "compacted"):
            return  # nothing of a turn ran: no task to start or end
        task = self.start(agent_id, call_id)
        t = inner.type
        if t == "usage":
            task.tokens += inner.usage.input_tokens + inner.usage.output_tokens
        elif t == "assistant_message":
            text = "".join(b.get("text", "") for b in inner.content if b.get("type") == "text").strip()
            task.text = text or task.text
        elif t == "tool_call_requested":
            task.last_tool = self.claude_name(inner.call.name, inner.call.input)
        elif t == "tool_call_done":
            task.tool_uses += 1
            self.send("task_progress", task_id=agent_id, description=task.description, usage=task.usage(),
                      tool_use_id=task.tool_use_id, last_tool_name=task.last_tool)
        elif t == "turn_done":
            del self.running[agent_id]
            stop = str(getattr(inner.stop, "value", inner.stop))
            status = "completed" if stop in _DONE else "stopped" if stop in _STOPPED else "failed"
            summary = task.text or inner.reason or f"the agent's turn ended ({stop})"
            self.send("task_notification", task_id=agent_id, status=status, output_file="",
                      summary=summary[:SUMMARY_CAP], tool_use_id=task.tool_use_id, usage=task.usage())
