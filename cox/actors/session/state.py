"""The state of one running turn, kept apart from the actor so it is easy to read and test."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cox.protocol.types import ToolCall, ToolResult


@dataclass
class Turn:
    turn: int
    gen: int
    scope: Any
    requests: int = 0
    stream_id: int = 0
    stream_ref: Any = None
    stream_emitted: bool = False
    stream_retried: bool = False
    partial: list[str] = field(default_factory=list)
    # The current batch of tool calls, in emission order.
    calls: list[ToolCall] = field(default_factory=list)
    results: dict[str, ToolResult] = field(default_factory=dict)
    awaiting_approval: dict[str, ToolCall] = field(default_factory=dict)
    queued: list[ToolCall] = field(default_factory=list)
    running: dict[str, tuple[Any, bool]] = field(default_factory=dict)  # id -> (ref, exclusive)
    steer: list[str] = field(default_factory=list)
    denied_by_user: bool = False
    stop_watchdog: Any = None
    processes: list[Any] = field(default_factory=list)
    ran_commands: bool = False
    compacted: bool = False
    suspects: set[tuple[str, Any]] = field(default_factory=set)

    def batch_done(self) -> bool:
        return not self.awaiting_approval and not self.queued and not self.running

    def unfinished(self) -> list[ToolCall]:
        return [c for c in self.calls if c.id not in self.results]


@dataclass
class Compaction:
    """A summary being written: the stream, what it replaces, and the turn waiting on it."""

    stream_id: int
    scope: Any
    new: list[dict[str, Any]]
    dropped: list[int]
    retry_turn: Turn | None
    before_tokens: int
    text: list[str] = field(default_factory=list)
    ref: Any = None
