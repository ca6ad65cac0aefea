"""One tool call from its start on: checkpoint → run → cap and archive.

Whatever decided that a call runs (a session's hooks, permission engine and approval; ``cox mcp
serve``'s engine), the call itself goes through :func:`execute` and nothing else, so a session's
``ToolCallActor`` and ``cox mcp serve`` treat it the same way:

- **checkpoint**: a writing call's pre-images are saved before the tool runs (or the workspace
  is snapshotted around a call that cannot name its files), when ``env.checkpoint`` says where;
  a checkpoint failure is a note in the result, never a failed call;
- **run**: bad input and any exception a tool raises become an error result the model reads
  (cox's own one-line sentence: it is neither archived nor capped);
- **cap and archive**: every result a tool returned is archived whole before anyone sees it
  (small ones inline in cox.db), so each has an id (``cox expand ID``; microcompaction sends a
  pointer later), and a result too big to show whole is capped to head and tail around that id.

It never raises and starts nothing it does not end: the caller runs it in the thread it wants
(the call actor's own, a worker thread of the MCP server).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from cox.policy.paths import PathEscape
from cox.protocol.types import ToolCall, ToolResult, ToolStatus
from cox.slim import dataclass

from .base import ArchivePut, BaseTool, CallCheckpoint, ToolEnv, ToolInputError
from .visible import cap, needs_cap

__all__ = ["Executed", "archive_and_cap", "execute", "run"]

DEFAULT_MAX_BYTES = 16384


@dataclass(frozen=True)
class Executed:
    """A call's result as the model sees it, and the files its checkpoint recorded."""

    result: ToolResult
    files: tuple[str, ...] = ()


def execute(tool: BaseTool, call: ToolCall, env: ToolEnv, *, archive: ArchivePut | None = None,
            limits: Mapping[str, int] | None = None) -> Executed:
    """Checkpoint (``env.checkpoint``), run, then archive and cap (``archive``; ``limits``:
    ``visible_max_bytes``, ``output_head_lines``, ``output_tail_lines``)."""
    limits = limits or {}
    files: tuple[str, ...] = ()
    if env.checkpoint is None:
        result, returned = _run(tool, call, env)
    else:
        result, returned, files = _checkpointed(tool, call, env, env.checkpoint)
    if not returned or (env.cancel.cancelled and result.status is ToolStatus.OK):
        return Executed(result, files)  # cancelled: the caller turns it into an aborted result
    if env.cancel.cancelled and not needs_cap(result.visible, limits.get("visible_max_bytes", DEFAULT_MAX_BYTES)):
        # The turn was interrupted: this result is small enough to keep whole, and nobody waits
        # for its id — a crowd of cancelled calls (every subagent of an interrupted turn) does
        # not queue a round trip each to the one store writer.
        return Executed(result, files)
    return Executed(archive_and_cap(result, archive, limits), files)


def run(tool: BaseTool, call: ToolCall, env: ToolEnv) -> ToolResult:
    """The tool's full result; never raises (a tool bug must not take the turn down)."""
    return _run(tool, call, env)[0]


def _run(tool: BaseTool, call: ToolCall, env: ToolEnv) -> tuple[ToolResult, bool]:
    """The result, and whether the tool returned it (False: it raised; the result says how)."""
    try:
        tool.check(call.input)
        return tool.call(call, env), True
    except (ToolInputError, PathEscape) as exc:
        return ToolResult.error(str(exc)), False
    except Exception as exc:
        return ToolResult.error(f"{call.name} failed: {type(exc).__name__}: {exc}"), False


def _checkpointed(tool: BaseTool, call: ToolCall, env: ToolEnv,
                  checkpoint: CallCheckpoint) -> tuple[ToolResult, bool, tuple[str, ...]]:
    """Pre-images before the tool writes (or a snapshot around a call that cannot name its
    files), so the rows exist before the model sees the result."""
    from cox.actors.store.checkpoints import CheckpointError

    cp, session_id, turn = checkpoint
    note = ""
    files: list[str] = []
    tree: str | None = None
    try:
        paths = tool.writes(call, env)
    except Exception:
        paths = None
    try:
        if paths is None:
            tree = cp.snapshot()
        elif paths:
            files = cp.pre_images(session_id, turn, call.id, paths)
    except CheckpointError as exc:
        note = f"\n[no checkpoint for this call: {exc}]"
    result, returned = _run(tool, call, env)
    if files and tree is None:
        try:  # what the call left in its files: a rewind undoes only that
            cp.settle(session_id, files)
        except CheckpointError as exc:
            note = f"\n[no checkpoint for this call: {exc}]"
    if tree is not None:
        try:
            files = cp.changes_since(session_id, turn, call.id, tree)
        except CheckpointError as exc:
            note = f"\n[no checkpoint for this call: {exc}]"
    if note:
        result = replace(result, visible=result.visible + note)
    return result, returned, tuple(files)


def archive_and_cap(result: ToolResult, archive: ArchivePut | None, limits: Mapping[str, int]) -> ToolResult:
    """Every result is archived before the model sees it, so each has an id. A tool that
    archived its own bytes (bash: what the command printed, without cox's footer) keeps that id;
    a result too big to show whole is capped around it. With no archive, or one that fails, a
    big result is capped with a sentence saying the rest is lost — never silently."""
    max_bytes = limits.get("visible_max_bytes", DEFAULT_MAX_BYTES)
    big = needs_cap(result.visible, max_bytes)
    if archive is None:
        if not big:
            return result
        if result.archive_id is not None:
            return _capped(result, result.archive_id, limits)
        return _capped(result, "unavailable", limits, "\n[no archive here: the full output is not kept]")
    if result.archive_id is None and result.visible:
        data = result.visible.encode("utf-8", "replace")
        try:
            result = replace(result, archive_id=archive(data))
        except Exception as exc:
            if not big:
                return result  # shown whole: nothing is lost
            # Losing the full output silently is worse than a big message: say so.
            return replace(result, visible=cap(result.visible, "unavailable", max_bytes=max_bytes)
                           + f"\n[archive failed: {exc}]")
    if not big or result.archive_id is None:
        return result
    return _capped(result, result.archive_id, limits)


def _capped(result: ToolResult, archive_id: str, limits: Mapping[str, int], note: str = "") -> ToolResult:
    visible = cap(result.visible, archive_id, head=limits.get("output_head_lines", 40),
                  tail=limits.get("output_tail_lines", 40),
                  max_bytes=limits.get("visible_max_bytes", DEFAULT_MAX_BYTES))
    total = result.total_bytes or len(result.visible.encode("utf-8", "replace"))
    return replace(result, visible=visible + note, total_bytes=total)
