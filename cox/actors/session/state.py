"""The state of one running turn and of a compaction, kept apart so it is easy to read and test."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from cox.slim import dataclass
from cox.supervisors.cancel import CancelScope

from .batch import Batch


@dataclass(slots=True)
class Turn:
    turn: int
    gen: int
    scope: CancelScope
    requests: int = 0
    stream_id: int = 0
    streaming: bool = False
    """A stream of this turn runs (its report is awaited)."""
    stream_emitted: bool = False
    stream_retried: bool = False
    partial: list[str] = field(default_factory=list)
    batch: Batch = field(default_factory=Batch)
    """The current step's tool calls."""
    steer: list[str] = field(default_factory=list)
    allow: list[str] = field(default_factory=list)
    effort: str = ""
    """The turn's own reasoning effort (``UserTurn.effort``; "" = the session's)."""
    """The turn's own allow rules (``UserTurn.allow``, a user's skill's allowed-tools): they end with it."""
    denied_by_user: bool = False
    compacted: bool = False
    cancelled: bool = False
    """The machine cancelled the turn's scope (the scope may also be cancelled out of band)."""

    @property
    def stopped(self) -> bool:
        return self.cancelled or self.scope.cancelled


@dataclass(slots=True)
class Compaction:
    """A summary being written: the stream, what it replaces, and the turn waiting on it."""

    stream_id: int
    scope: CancelScope
    new: list[dict[str, Any]]
    dropped: list[int]
    retry_turn: Turn | None
    before_tokens: int
    text: list[str] = field(default_factory=list)
