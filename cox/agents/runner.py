"""What a tool sees of the parent session's subagents: run one, wait for it, steer it, close it.

The session implements :class:`AgentRunner` (``cox/actors/session/agents.py``) and hands it to its
tools as ``ToolServices.agents``; the ``agent`` tool and the work-graph tool call it from their
call's thread. A subagent is a child session actor of the parent: its own history, tools and
rollout, a permission mode no wider than the parent's, the parent's budget.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from cox.protocol.interfaces import CancelToken
from cox.slim import dataclass


@dataclass(frozen=True, slots=True)
class AgentTask:
    """One subagent to run (the ``agent`` tool's input, or a work-graph task)."""

    description: str
    prompt: str
    subagent_type: str = "general-purpose"
    isolation: str | None = None
    """None: the parent's workspace; "worktree": a worktree of its own (named ``name``)."""
    name: str | None = None
    """The worktree's name for ``isolation="worktree"`` (a work-graph task's id)."""
    model: str | None = None
    read_only: bool = False
    """Only read-only tools, whatever the type says (a work-graph task that is not writable)."""


@dataclass(frozen=True, slots=True)
class AgentReport:
    """How a subagent ended: its final text is what the parent's model reads."""

    agent_id: str
    text: str
    stop: str
    """The child's last turn's stop reason (``StopReason`` value): end_turn when it finished."""
    ok: bool
    worktree: Path | None = None
    branch: str | None = None
    cost_usd: float = 0.0


class TaskRunner(Protocol):
    """Runs one subagent to its end: all a work graph needs (its fakes implement only this)."""

    def run(self, task: AgentTask, cancel: CancelToken, call_id: str = "") -> AgentReport:
        """Run the task to its end (blocking the caller's thread); ``cancel`` ends it early.
        ``call_id``: the parent's call that runs it (its events are tagged with it)."""
        ...


class AgentRunner(TaskRunner, Protocol):
    """A session's subagents as the ``agent`` tools use them: foreground and background."""

    def start(self, task: AgentTask, call_id: str = "") -> str:
        """Start the task in the background; its agent id at once."""
        ...

    def wait(self, ids: list[str], timeout_s: float, cancel: CancelToken) -> dict[str, AgentReport | None]:
        """The reports of those that ended within ``timeout_s`` (None: still running)."""
        ...

    def send(self, agent_id: str, text: str) -> str | None:
        """Steer a running agent (seen at its next sampling step); why not, or None."""
        ...

    def close(self, agent_id: str) -> str | None:
        """Stop an agent; why not, or None."""
        ...
