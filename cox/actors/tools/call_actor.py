"""The ToolCall actor: one per tool call.

It runs the tool in its own thread, so a slow or stuck tool never blocks the session, turns any
exception into an error result the model can read, archives every output whole before capping
what the model sees of a big one, and tells the session ``("tool_done", gen, call_id, result)`` exactly once.
If the actor dies without that message, its supervisor's exit report reaches the session, which
fills in an error result instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pykka

from cox.actors.session.messages import ToolDone
from cox.policy.paths import PathEscape
from cox.protocol.types import ToolCall, ToolResult, ToolStatus
from cox.supervisors import CoxActor

from .base import BaseTool, ToolEnv, ToolInputError
from .visible import cap, needs_cap

ArchivePut = Callable[[bytes], str]


class ToolCallActor(CoxActor):
    def __init__(self, tool: BaseTool, call: ToolCall, env: ToolEnv, reply_to: pykka.ActorRef[Any], gen: int,
                 archive_put: ArchivePut | None, limits: dict[str, int] | None = None) -> None:
        super().__init__()
        self.tool = tool
        self.call = call
        self.env = env
        self.reply_to = reply_to
        self.gen = gen
        self.archive_put = archive_put
        self.limits = limits or {}

    def on_receive(self, message: Any) -> Any:
        if message == "run":
            started = time.monotonic()
            checkpoint = self.env.extra.get("checkpoint")
            files: list[str] = []
            if checkpoint is None:
                result = self._run()
            else:
                result, files = self._run_checkpointed(checkpoint)
            self.reply_to.tell(ToolDone(self.gen, self.call.id, result, (time.monotonic() - started) * 1000, files))
            self.stop()
        return None

    def _run_checkpointed(self, checkpoint: Any) -> tuple[ToolResult, list[str]]:
        """Pre-images before the tool writes (or a snapshot around a call that cannot name its
        files), so the rows exist before the model sees the result. A checkpoint failure is a
        note in the result, never a failed call."""
        from cox.actors.store.checkpoints import CheckpointError

        cp, session_id, turn = checkpoint
        note = ""
        files: list[str] = []
        tree: str | None = None
        try:
            paths = self.tool.writes(self.call, self.env)
        except Exception:
            paths = None
        try:
            if paths is None:
                tree = cp.snapshot()
            elif paths:
                files = cp.pre_images(session_id, turn, self.call.id, paths)
        except CheckpointError as exc:
            note = f"\n[no checkpoint for this call: {exc}]"
        result = self._run()
        if files and tree is None:
            try:  # what the call left in its files: a rewind undoes only that
                cp.settle(session_id, files)
            except CheckpointError as exc:
                note = f"\n[no checkpoint for this call: {exc}]"
        if tree is not None:
            try:
                files = cp.changes_since(session_id, turn, self.call.id, tree)
            except CheckpointError as exc:
                note = f"\n[no checkpoint for this call: {exc}]"
        if note:
            result = replace(result, visible=result.visible + note)
        return result, files

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        from .bash import reap

        reap(self.env.processes)
        super().on_failure(exception_type, exception_value, traceback)

    def on_stop(self) -> None:
        from .bash import reap

        reap(self.env.processes)

    def _run(self) -> ToolResult:
        try:
            self.tool.check(self.call.input)
            result = self.tool.call(self.call, self.env)
        except (ToolInputError, PathEscape) as exc:
            return ToolResult.error(str(exc))
        except Exception as exc:  # a tool bug must not take the turn down
            return ToolResult.error(f"{self.call.name} failed: {type(exc).__name__}: {exc}")
        if self.env.cancel.cancelled and result.status is ToolStatus.OK:
            return result
        return self._cap(result)

    def _cap(self, result: ToolResult) -> ToolResult:
        """Every result is archived before the model sees it (small ones inline in cox.db), so
        each has an id: microcompaction later sends a pointer in its place, and ``cox expand``
        gives it back. A tool that archived its own bytes (bash: what the command printed,
        without cox's footer) keeps that id; a result too big to show whole is capped around it."""
        max_bytes = self.limits.get("visible_max_bytes", 16384)
        if self.archive_put is None:
            return result
        big = needs_cap(result.visible, max_bytes)
        if result.archive_id is None and result.visible:
            data = result.visible.encode("utf-8", "replace")
            try:
                result = replace(result, archive_id=self.archive_put(data))
            except Exception as exc:
                if not big:
                    return result  # shown whole: nothing is lost
                # Losing the full output silently is worse than a big message: say so.
                return replace(result, visible=cap(result.visible, "unavailable", max_bytes=max_bytes)
                               + f"\n[archive failed: {exc}]")
        if not big or result.archive_id is None:
            return result
        visible = cap(result.visible, result.archive_id, head=self.limits.get("output_head_lines", 40),
                      tail=self.limits.get("output_tail_lines", 40), max_bytes=max_bytes)
        total = result.total_bytes or len(result.visible.encode("utf-8", "replace"))
        return replace(result, visible=visible, total_bytes=total)
