"""One model step's tool calls: who may run now, and the results in emission order.

A read/write lock over the batch: read-only calls of a parallel tool run together; any other
call runs alone, after those before it finished and before those after it start. Results are
kept by call id and handed back in the order the model emitted the calls, whatever order they
finished in. Pure: no actors, no threads — the machine asks it and starts what it says.
"""

from __future__ import annotations

from collections.abc import Callable

from cox.protocol.types import ToolCall, ToolResult


class Batch:
    def __init__(self) -> None:
        self.calls: list[ToolCall] = []  # in emission order
        self.results: dict[str, ToolResult] = {}
        self.awaiting_approval: dict[str, ToolCall] = {}
        self.queued: list[ToolCall] = []  # allowed, waiting for their turn to run
        self.running: dict[str, bool] = {}  # call id -> runs exclusively

    def add(self, call: ToolCall) -> None:
        self.calls.append(call)

    def call(self, call_id: str) -> ToolCall:
        return next(c for c in self.calls if c.id == call_id)

    def replace(self, call: ToolCall) -> None:
        """The same call with another input (a hook's updatedInput, the person's edit)."""
        self.calls = [call if c.id == call.id else c for c in self.calls]

    def deliver(self, call: ToolCall, result: ToolResult) -> bool:
        """Record ``result``; False when the call already has one (the first one stands)."""
        if call.id in self.results:
            return False
        self.results[call.id] = result
        return True

    def startable(self, exclusive: Callable[[ToolCall], bool]) -> list[tuple[ToolCall, bool]]:
        """Take the queued calls that may start now, marking them running: shared ones together
        while no exclusive one runs, an exclusive one alone, always in queue order."""
        started: list[tuple[ToolCall, bool]] = []
        while self.queued:
            call = self.queued[0]
            alone = exclusive(call)
            if alone and self.running:
                break
            if not alone and any(self.running.values()):
                break
            self.queued.pop(0)
            self.running[call.id] = alone
            started.append((call, alone))
            if alone:
                break
        return started

    def done(self) -> bool:
        """Every call of the step has its result (none waits, is queued or runs)."""
        return bool(self.calls) and not self.awaiting_approval and not self.queued and not self.running

    def unfinished(self) -> list[ToolCall]:
        return [c for c in self.calls if c.id not in self.results]

    def drop_pending(self) -> None:
        self.awaiting_approval.clear()
        self.queued.clear()
        self.running.clear()

    def in_order(self) -> list[tuple[ToolCall, ToolResult]]:
        """Each call with its result, in emission order (every call must have one)."""
        return [(c, self.results[c.id]) for c in self.calls]
