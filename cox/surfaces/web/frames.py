"""A session's Events as the web agent mode's server-sent events, and the SSE wire format.

The event names are the design's: ``start`` (a turn began: its number and model), ``block`` (a
new text or thinking block, without its text), ``delta`` ({index, kind, text}), ``tool_call``,
``approval`` (answer it at ``approvals/{approval_id}``), ``tool_output`` (a chunk while the call
runs, then ``done`` with its status and result), ``fallback`` (main turns moved to the fallback
model), ``compaction``, ``notice``, ``done`` ({stop, reason, usage, rolled_back}: a refused turn is rolled
back, so the page greys it and offers to rephrase) and ``error``. Text is sent
as the session produced it; the page renders it as text, never as markup.
"""

from __future__ import annotations

import json
from typing import Any

from cox.protocol import messages as m
from cox.protocol.record import to_plain

Frame = tuple[str, dict[str, Any]]


def sse(name: str, data: dict[str, Any]) -> bytes:
    """One event on the wire: ``event: NAME`` and one ``data:`` line of JSON (no raw newlines)."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def _call(call: Any) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "input": call.input, "subject": call.subject, "risk": call.risk.value}


class TurnFrames:
    """Turns one turn's Events into frames; keeps the block numbering of the turn."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.index = -1
        self.kind: str | None = None
        self.usage: dict[str, Any] | None = None
        self.rolled_back = False

    def _delta(self, kind: str, text: str) -> list[Frame]:
        out: list[Frame] = []
        if kind != self.kind:
            self.index += 1
            self.kind = kind
            out.append(("block", {"index": self.index, "block": {"type": kind}}))
        out.append(("delta", {"index": self.index, "kind": kind, "text": text}))
        return out

    def of(self, event: Any) -> list[Frame]:
        if isinstance(event, m.TextDelta):
            return self._delta("text", event.text)
        if isinstance(event, m.ThinkingDelta):
            return self._delta("thinking", event.text)
        self.kind = None if isinstance(event, (m.ToolCallRequested, m.AssistantMessage)) else self.kind
        if isinstance(event, m.TurnStarted):
            return [("start", {"turn": event.turn, "model": self.model})]
        if isinstance(event, m.ToolCallRequested):
            return [("tool_call", _call(event.call))]
        if isinstance(event, m.ToolCallEdited):
            return [("tool_call", {**_call(event.call), "edited": True})]
        if isinstance(event, m.ApprovalRequired):
            return [("approval", {"approval_id": event.call.id, "call": _call(event.call), "reason": event.reason,
                                  "answers": ["yes", "no", "always"]})]
        if isinstance(event, m.ToolCallOutput):
            return [("tool_output", {"id": event.call_id, "chunk": event.chunk})]
        if isinstance(event, m.ToolCallDone):
            r = event.result
            return [("tool_output", {"id": event.call_id, "done": True, "status": r.status.value, "text": r.visible,
                                     "exit_code": r.exit_code, "duration_ms": event.duration_ms})]
        if isinstance(event, m.Compacted):
            return [("compaction", {"summary": event.summary, "before_tokens": event.before_tokens,
                                    "after_tokens": event.after_tokens})]
        if isinstance(event, m.Notice):
            if "fallback model" in event.message:
                self.model = event.message.rsplit("fallback model ", 1)[-1].strip()
                return [("fallback", {"model": self.model, "message": event.message})]
            return [("notice", {"level": event.level, "message": event.message})]
        if isinstance(event, m.UsageEvent):
            self.usage = to_plain(event.usage)
            return []
        if isinstance(event, m.Rewound):  # a refused turn is rolled back: the page greys it for rephrasing
            self.rolled_back = True
            return []
        if isinstance(event, m.ErrorEvent):
            return [("error", {"message": event.message, "fatal": event.fatal})]
        if isinstance(event, m.TurnDone):
            return [("done", {"turn": event.turn, "model": self.model, "stop": event.stop.value,
                              "reason": event.reason, "usage": self.usage, "rolled_back": self.rolled_back})]
        return []
