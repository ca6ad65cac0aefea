"""cox's Events as ACP ``session/update`` payloads: the one translation ``cox acp`` speaks.

Pure: :class:`Translator` holds what one session's stream needs remembered (each call's kind and
input, the output a running call has streamed so far) and turns each Event into the updates the
client is sent, in order. The same translator replays a stored rollout for ``session/load``.

- ``text_delta`` → ``agent_message_chunk``; ``thinking_delta`` → ``agent_thought_chunk``;
  ``user_message`` → ``user_message_chunk`` (in a replay: the live client typed it itself);
- ``tool_call_requested`` → ``tool_call`` (kind, title, locations, the edit's diff, the raw
  input); a ``todo_write`` is also a ``plan``; ``tool_call_output`` → ``tool_call_update``
  (in_progress, what the call printed so far, its tail kept); ``tool_call_done`` →
  ``tool_call_update`` (completed or failed, with the result);
- ``agent_event`` (a subagent's relayed event) → its tool calls as calls of their own, ids
  prefixed with the agent's id and ``_meta.cox.parentToolCallId`` naming the parent's ``agent``
  call, so a client nests them;
- ``error`` → a message chunk saying so (the prompt's answer says how the turn ended);
- ``turn_done`` → a ``failed`` update for every call the turn left unfinished (one still waiting
  for its approval when the turn was cancelled), so none stays pending in the client.

Every string shown is sanitised (no terminal escapes from a hostile tool or model).
"""

from __future__ import annotations

from typing import Any

from acp import helpers as h
from acp.schema import ToolCallLocation

from cox.policy.sanitize import sanitize
from cox.protocol.messages import decode_event

__all__ = ["OUTPUT_TAIL", "Translator", "kind_of", "stop_reason"]

OUTPUT_TAIL = 64 * 1024
"""Characters of a running call's output a ``tool_call_update`` carries (its tail): ACP replaces
the content with each update, so the whole output would be resent on every chunk."""

KINDS = {"read": "read", "write": "edit", "edit": "edit", "apply_patch": "edit", "bash": "execute",
         "grep": "search", "glob": "search", "ls": "search", "tool_search": "search", "web_fetch": "fetch",
         "todo_write": "think", "skill": "read"}

STOPS = {"end_turn": "end_turn", "denied": "end_turn", "interrupted": "cancelled", "max_turns": "max_turn_requests",
         "max_tokens": "max_tokens"}
"""cox's stop reasons as ACP's; ``error`` and ``budget`` are an error answer instead (see agent.py)."""


def stop_reason(stop: str) -> str | None:
    """ACP's stopReason for cox's, or None when the turn failed (the prompt answers an error)."""
    return STOPS.get(stop)


def kind_of(name: str) -> str:
    if name.startswith("mcp__"):
        return "other"
    return KINDS.get(name, "other")


def _locations(name: str, call_input: dict[str, Any], subject: str) -> list[ToolCallLocation] | None:
    if name in ("read", "write", "edit"):
        path = subject or str(call_input.get("path") or "")
        if path:
            line = call_input.get("offset") if name == "read" else None
            return [ToolCallLocation(path=path, line=line if isinstance(line, int) and line >= 0 else None)]
    if name in ("grep", "glob", "ls") and isinstance(call_input.get("path"), str):
        return [ToolCallLocation(path=call_input["path"])]
    return None


def _diff(name: str, call_input: dict[str, Any], subject: str) -> list[Any] | None:
    path = subject or str(call_input.get("path") or "")
    if not path:
        return None
    if name == "write" and isinstance(call_input.get("content"), str):
        return [h.tool_diff_content(path, call_input["content"])]
    if name == "edit" and isinstance(call_input.get("new_string"), str):
        old = call_input.get("old_string")
        return [h.tool_diff_content(path, call_input["new_string"], old if isinstance(old, str) else None)]
    return None


def _plan(call_input: dict[str, Any]) -> Any | None:
    todos = call_input.get("todos")
    if not isinstance(todos, list):
        return None
    entries = []
    for item in todos:
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            continue
        status = item.get("status")
        entries.append(h.plan_entry(sanitize(item["content"]),
                                    status=status if status in ("pending", "in_progress", "completed") else "pending"))
    return h.update_plan(entries)


def _text(text: str) -> Any:
    return h.tool_content(h.text_block(text))


class Translator:
    """One session's Events → ACP updates. ``prefix`` and ``parent`` are set for a subagent's:
    its call ids get the prefix, and each call names the parent's ``agent`` call in ``_meta``."""

    def __init__(self, *, prefix: str = "", parent: str | None = None, replay: bool = False) -> None:
        self.prefix = prefix
        self.parent = parent
        self.replay = replay
        self.calls: dict[str, tuple[str, dict[str, Any], str]] = {}
        self.output: dict[str, str] = {}
        self.children: dict[str, Translator] = {}

    def _meta(self, update: Any) -> Any:
        if self.parent is not None:
            update.field_meta = {"cox": {"parentToolCallId": self.parent}}
        return update

    def updates(self, event: Any) -> list[Any]:
        t = event.type
        if t == "text_delta":
            return [] if self.parent is not None else [h.update_agent_message_text(sanitize(event.text))]
        if t == "thinking_delta":
            return [] if self.parent is not None else [h.update_agent_thought_text(sanitize(event.text))]
        if t == "user_message" and self.replay and self.parent is None:
            return [h.update_user_message_text(sanitize(event.text))]
        if t in ("tool_call_requested", "tool_call_edited"):
            return self._requested(event.call, edited=t == "tool_call_edited")
        if t == "tool_call_output":
            return self._output(event.call_id, event.chunk)
        if t == "tool_call_done":
            return self._done(event.call_id, event.result)
        if t == "agent_event":
            return self._agent(event)
        if t == "turn_done" and self.parent is None:
            return self._unfinished(event.stop.value)
        if t == "error" and self.parent is None:
            return [h.update_agent_message_text(f"\n\ncox: error: {sanitize(event.message)}\n")]
        return []

    def _requested(self, call: Any, *, edited: bool) -> list[Any]:
        cid = self.prefix + call.id
        name, call_input, subject = call.name, dict(call.input or {}), call.subject or ""
        self.calls[cid] = (name, call_input, subject)
        title = sanitize(f"{name} {subject}".strip())[:300]
        content = _diff(name, call_input, subject)
        if edited:
            out: list[Any] = [self._meta(h.update_tool_call(cid, title=title, content=content, raw_input=call_input,
                                                            locations=_locations(name, call_input, subject)))]
        else:
            out = [self._meta(h.start_tool_call(cid, title, kind=kind_of(name), status="pending",  # type: ignore[arg-type]
                                                content=content, locations=_locations(name, call_input, subject),
                                                raw_input=call_input))]
        if name == "todo_write" and self.parent is None:
            plan = _plan(call_input)
            if plan is not None:
                out.append(plan)
        return out

    def _output(self, call_id: str, chunk: str) -> list[Any]:
        cid = self.prefix + call_id
        text = (self.output.get(cid, "") + chunk)[-OUTPUT_TAIL:]
        self.output[cid] = text
        return [self._meta(h.update_tool_call(cid, status="in_progress", content=[_text(sanitize(text))]))]

    def _done(self, call_id: str, result: Any) -> list[Any]:
        cid = self.prefix + call_id
        self.output.pop(cid, None)
        name, call_input, subject = self.calls.pop(cid, ("", {}, ""))
        status = getattr(result.status, "value", result.status)
        content: list[Any] = list(_diff(name, call_input, subject) or []) if status == "ok" else []
        terminal = result.meta.get("terminal_id") if isinstance(result.meta, dict) else None
        if isinstance(terminal, str):  # bash ran in the editor's terminal: it stays shown
            content.append(h.tool_terminal_ref(terminal))
        if result.visible:
            content.append(_text(sanitize(result.visible)))
        raw: dict[str, Any] = {"status": status}
        if result.exit_code is not None:
            raw["exit_code"] = result.exit_code
        return [self._meta(h.update_tool_call(cid, status="completed" if status == "ok" else "failed",
                                              content=content, raw_output=raw))]

    def _unfinished(self, stop: str) -> list[Any]:
        """The turn ended: a call it never ran (waiting for approval when it was cancelled, say)
        must not stay pending in the client."""
        why = "not run: the turn was cancelled" if stop == "interrupted" else f"not run: the turn ended ({stop})"
        out = []
        for child in self.children.values():
            out += child._unfinished(stop)
        for cid in list(self.calls):
            self.calls.pop(cid)
            self.output.pop(cid, None)
            out.append(self._meta(h.update_tool_call(cid, status="failed", content=[_text(why)])))
        return out

    def running(self, shown_id: str) -> bool:
        """Whether the call the client knows as ``shown_id`` was requested and has not ended."""
        if shown_id in self.calls:
            return True
        return any(child.running(shown_id) for child in self.children.values())

    def shown_id(self, call_id: str) -> str:
        """The id the client knows a call by: a subagent's calls carry their agent's prefix."""
        if self.prefix + call_id in self.calls:
            return self.prefix + call_id
        for child in self.children.values():
            found = child.shown_id(call_id)
            if found != call_id:
                return found
        return call_id

    def _agent(self, event: Any) -> list[Any]:
        try:
            inner = decode_event(event.event)
        except Exception:
            return []
        if inner.type not in ("tool_call_requested", "tool_call_edited", "tool_call_output", "tool_call_done",
                              "agent_event"):
            return []
        child = self.children.get(event.agent_id)
        if child is None:
            child = self.children[event.agent_id] = Translator(prefix=f"{self.prefix}{event.agent_id}/",
                                                               parent=self.prefix + event.call_id if event.call_id
                                                               else self.parent, replay=self.replay)
        return child.updates(inner)
