"""cox's Events as Claude Code's stream-json messages.

What maps to what (docs/claude-code-dialect.md has the table):

- ``turn_started`` → ``system/init`` (Claude Code sends one before each user message's work):
  the session id as a UUID (``ids``), cwd, tools and ``mcp_servers`` as Claude Code names them,
  model, permissionMode, slash_commands, agents, a semver ``claude_code_version``;
- ``assistant_message`` → one ``assistant`` message per content block (Claude Code splits them
  so), all with the response's ``message.id``, model and usage; tool calls as ``to_claude`` spells
  them;
- ``tool_call_done`` → a ``user`` message with the ``tool_result`` block and ``tool_use_result``;
- ``text_delta`` / ``thinking_delta`` → ``stream_event``s (``--include-partial-messages``), in
  the Messages API's raw event shapes, the tool_use blocks given whole at the response's end;
- ``compacted`` → ``system/compact_boundary`` after a ``system/status`` ``compacting``;
- a subagent's relayed events (``agent_event``) the same way, with ``parent_tool_use_id`` set to
  the parent's call;
- the run's ``result`` once per turn, from ``headless.RunState`` plus what this printer saw.

Every string a model, tool or file wrote is scrubbed of secret shapes before it is printed, as in
cox's own dialect.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from typing import IO, Any

from cox.actors.tools.spelling import to_claude
from cox.policy.redact import scrub_data
from cox.protocol.messages import ProtocolError, decode_event

from .ids import ulid_to_uuid
from .wire import Wire

CLAUDE_CODE_VERSION = "2.1.0"
"""The Claude Code version this dialect speaks, as the SDK reads it from system/init (it warns
below 2.0.0). cox's own version is in ``cox_version``."""

SUBTYPES = {
    "end_turn": "success", "max_tokens": "success", "denied": "error_during_execution",
    "max_turns": "error_max_turns", "budget": "error_max_budget_usd",
    "error": "error_during_execution", "interrupted": "error_during_execution",
    "usage": "error_during_execution",
}
"""cox's stop reasons as Claude Code's result subtypes. A denied call never fails a turn in this
dialect (the denial goes to the model and the turn goes on): ``denied`` is the turn a
UserPromptSubmit hook blocked, which never reached the model."""
TERMINAL = {"end_turn": "completed", "max_tokens": "completed", "denied": "hook_stopped", "max_turns": "max_turns",
            "budget": "max_budget", "error": "model_error", "usage": "model_error"}
STOP_REASON = {"end_turn": "end_turn", "max_tokens": "max_tokens"}


def _id(prefix: str = "") -> str:
    return prefix + uuid.uuid4().hex[:24] if prefix else str(uuid.uuid4())


def _scrub(value: Any) -> Any:
    return scrub_data(value)[0]


class ClaudePrinter:
    """The ``headless.Printer`` of this dialect: same calls (``event``, ``result``,
    ``since_result``), Claude Code's messages on the wire."""

    def __init__(self, wire: Wire, err: IO[str], *, partial: bool = False, replay_user: bool = False,
                 only_result: bool = False,
                 agents: Callable[[], list[str]] | None = None, commands: Callable[[], list[str]] | None = None) -> None:
        self.wire = wire
        self.out = wire.out
        self.err = err
        self.partial = partial
        self.only_result = only_result
        """``--output-format json``: the result object alone."""
        self.replay_user = replay_user
        self.agents = agents or (lambda: [])
        self.commands = commands or (lambda: [])
        self.skills: Callable[[], list[str]] = lambda: []
        self.since_result = False
        self.said: set[str] = set()
        self.started: dict[str, Any] = {}
        self.permission_mode = "default"
        self.session_id = ""
        self.model = ""
        self.calls: dict[str, tuple[str, dict[str, Any]]] = {}
        """Each call by id: Claude Code's name and input (for permission_denials)."""
        self.denials: list[dict[str, Any]] = []
        self.model_usage: dict[str, dict[str, Any]] = {}
        self.last_usage: dict[str, Any] | None = None
        self.turn = 0
        self.final_text: str | None = None
        self.user_turns: dict[str, int] = {}
        """The uuid of each user message this run showed → its cox turn (``rewind_files``)."""
        self._stream: dict[str, Any] | None = None  # the open stream_event message, for partial output
        self.context_tokens = 0
        """The last main request's prompt size (``get_context_usage``)."""
        self.aborted = False
        """A call was aborted this turn: an interrupt stopped tools, not the stream."""
        self.on_approval: Callable[[Any], None] | None = None
        """Called for each ``approval_required`` (``--permission-prompt-tool stdio``: ``can_use_tool``)."""
        self.mcp_manager: Any = None
        self.on_turn_end: Callable[[], None] | None = None
        """Called at each ``turn_done`` (questions to the client about that turn are withdrawn)."""
        from .tasks import Tasks

        self.tasks = Tasks(lambda subtype, **fields: self.send(self._system(subtype, **fields)),
                           lambda call_id: str(self.calls.get(call_id, ("", {}))[1].get("description") or ""),
                           lambda name, given: self.claude_call(name, given)[0])
        """The subagents as Claude Code's tasks (``task_started`` …)."""

    # ------------------------------------------------------------------ the Printer's calls

    def _status(self, text: str) -> None:
        from ..headless import shown

        line = shown(text)
        self.said.add(line)
        try:
            self.err.write(f"cox: {line}\n")
        except (BrokenPipeError, ValueError):
            pass

    def event(self, event: Any, line: str) -> None:
        t = event.type
        if t == "session_started":
            self.started = {"cwd": event.cwd, "tools": list(event.tools), "mcp_servers": list(event.mcp_servers)}
            self.session_id = ulid_to_uuid(event.session_id)
            self.model = event.model
            self.permission_mode = event.permission_mode.value
        elif t == "turn_started":
            self.denials, self.model_usage, self.aborted, self.final_text = [], {}, False, None
            self.turn = event.turn
            self.send(self.init_message())
        elif t == "approval_required":
            if self.on_approval is not None:
                self.on_approval(event)
        elif t == "user_message":
            self._user_message(event)
        elif t == "turn_done":
            if self.on_turn_end is not None:
                self.on_turn_end()
        elif t == "notice" and event.level in ("warning", "security", "error"):
            self._status(f"{event.level}: {event.message}")
        elif t == "error":
            self._status(f"error: {event.message}")
        else:
            self._translate(event.type, event, None)

    def _translate(self, t: str, event: Any, parent: str | None) -> None:
        if t == "text_delta" or t == "thinking_delta":
            if self.partial:
                self._delta("thinking" if t == "thinking_delta" else "text", event.text, parent)
        elif t == "assistant_message":
            self._assistant(event.content, parent)
        elif t == "tool_call_requested" or t == "tool_call_edited":
            self.calls[event.call.id] = self.claude_call(event.call.name, event.call.input)
        elif t == "tool_call_done":
            background = parent is None and self.calls.get(event.call_id, ("", {}))[1].get("run_in_background")
            agent_id = event.result.meta.get("agent_id") if background else None
            if isinstance(agent_id, str):  # the parent's Task started a background agent: its task begins now
                self.tasks.start(agent_id, event.call_id)
            self._tool_done(event, parent)
        elif t == "usage":
            self._usage(event, parent)
        elif t == "compacted":
            self.send(self._system("status", status="compacting"))
            self.send(self._system("compact_boundary", compact_metadata={"trigger": "auto",
                                                                         "pre_tokens": event.before_tokens}))
            self.send(self._system("status", status=None))
        elif t == "agent_event":
            try:
                inner = decode_event(event.event)
            except ProtocolError:
                return
            self.tasks.on(event.agent_id, event.call_id, inner)
            if inner.type in ("assistant_message", "tool_call_requested", "tool_call_done", "usage"):
                self._translate(inner.type, inner, event.call_id or None)

    def result(self, state: Any) -> dict[str, Any]:
        res = self.result_of(state)
        self.send(res)
        self.since_result = False
        return res

    # ------------------------------------------------------------------ messages

    def send(self, message: dict[str, Any]) -> None:
        if message.get("type") != "result":
            if self.only_result:
                return
            self.since_result = True  # what was shown after a result: the run ends with one more
        self.wire.send(message, flush=message.get("type") == "result")

    def _system(self, subtype: str, **fields: Any) -> dict[str, Any]:
        return {"type": "system", "subtype": subtype, **fields, "session_id": self.session_id, "uuid": _id()}

    def claude_call(self, name: str, given: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return to_claude(name, given, self.started.get("cwd") or os.getcwd())

    def tool_names(self) -> list[str]:
        return [self.claude_call(name, {})[0] for name in self.started.get("tools", [])]

    def init_message(self) -> dict[str, Any]:
        from cox import __version__

        manager = self.mcp_manager
        rows = manager.state() if manager is not None else self.started.get("mcp_servers", [])  # as they are now
        servers = [{"name": s.get("name", ""), "status": _server_status(s)} for s in rows if isinstance(s, dict)]
        off = tuple(f"mcp__{name}__" for name in getattr(manager, "disabled", ()))
        tools = [t for t in self.tool_names() if not (off and t.startswith(off))]
        return self._system("init", cwd=self.started.get("cwd", ""), tools=tools, mcp_servers=servers,
                            model=self.model, permissionMode=self.permission_mode, slash_commands=self.commands(),
                            apiKeySource="none", claude_code_version=CLAUDE_CODE_VERSION, cox_version=__version__,
                            output_style="default", agents=self.agents(), skills=self.skills(), plugins=[])

    def _user_message(self, event: Any) -> None:
        mid = _id()
        self.user_turns[mid] = event.turn
        if self.replay_user:
            self.send({"type": "user", "message": {"role": "user", "content": _scrub(event.text)},
                       "parent_tool_use_id": None, "session_id": self.session_id, "uuid": mid})

    def _assistant(self, content: list[dict[str, Any]], parent: str | None) -> None:
        if parent is None:  # Claude Code's result is the last assistant message's text
            self.final_text = "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
        message_id = self._end_stream(content, parent) or _id("msg_")
        model = (self.last_usage or {}).get("model") or self.model
        usage = (self.last_usage or {}).get("usage") or {"input_tokens": 0, "output_tokens": 0}
        for block in content:
            shown = self._block(block)
            if shown is None:
                continue
            self.send({"type": "assistant",
                       "message": {"id": message_id, "type": "message", "role": "assistant", "model": model,
                                   "content": [shown], "stop_reason": None, "stop_sequence": None, "usage": usage},
                       "parent_tool_use_id": parent, "session_id": self.session_id, "uuid": _id()})
        self.last_usage = None

    def _block(self, block: dict[str, Any]) -> dict[str, Any] | None:
        kind = block.get("type")
        if kind == "text":
            return {"type": "text", "text": _scrub(block.get("text", ""))}
        if kind == "thinking":
            return {"type": "thinking", "thinking": _scrub(block.get("thinking", "")),
                    "signature": block.get("signature", "")}
        if kind == "tool_use":
            name, given = self.claude_call(str(block.get("name", "")), block.get("input") or {})
            self.calls[str(block.get("id", ""))] = (name, given)
            return {"type": "tool_use", "id": block.get("id", ""), "name": name, "input": _scrub(given)}
        return None

    def _tool_done(self, event: Any, parent: str | None) -> None:
        result = event.result
        status = result.status.value
        self.aborted = self.aborted or (status == "aborted" and parent is None)
        text = _scrub(result.visible)
        name, given = self.calls.get(event.call_id, ("", {}))
        if status == "denied" and parent is None:
            self.denials.append({"tool_name": name, "tool_use_id": event.call_id, "tool_input": _scrub(given)})
        block = {"type": "tool_result", "tool_use_id": event.call_id, "content": text, "is_error": status != "ok"}
        if name == "Bash":
            detail: Any = {"stdout": text, "stderr": "", "interrupted": status == "aborted", "isImage": False}
        elif status != "ok":
            detail = f"Error: {text}"
        else:
            detail = {"type": "text", "content": text, "status": status}
        self.send({"type": "user", "message": {"role": "user", "content": [block]}, "parent_tool_use_id": parent,
                   "session_id": self.session_id, "uuid": self._turn_message(), "tool_use_result": detail})

    def _turn_message(self) -> str:
        """A new user message's uuid, remembered as this turn's (``rewind_files`` takes it)."""
        mid = _id()
        self.user_turns[mid] = self.turn
        return mid

    def _usage(self, event: Any, parent: str | None) -> None:
        u = event.usage
        if parent is None:
            self.context_tokens = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
        model = u.model or self.model
        wire = {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                "cache_read_input_tokens": u.cache_read_tokens, "cache_creation_input_tokens": u.cache_write_tokens}
        self.last_usage = {"model": model, "usage": wire}
        per = self.model_usage.setdefault(model, {"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0,
                                                  "cacheCreationInputTokens": 0, "webSearchRequests": 0,
                                                  "costUSD": 0.0, "contextWindow": _window(model),
                                                  "maxOutputTokens": 0})
        per["inputTokens"] += u.input_tokens
        per["outputTokens"] += u.output_tokens
        per["cacheReadInputTokens"] += u.cache_read_tokens
        per["cacheCreationInputTokens"] += u.cache_write_tokens
        per["costUSD"] = round(per["costUSD"] + u.cost_usd, 6)

    # ------------------------------------------------------------------ partial messages

    def _stream_event(self, event: dict[str, Any], parent: str | None) -> None:
        self.send({"type": "stream_event", "uuid": _id(), "session_id": self.session_id, "event": event,
                   "parent_tool_use_id": parent})

    def _delta(self, kind: str, text: str, parent: str | None) -> None:
        s = self._stream
        if s is None:
            s = self._stream = {"id": _id("msg_"), "index": -1, "kind": None}
            self._stream_event({"type": "message_start", "message": {
                "id": s["id"], "type": "message", "role": "assistant", "model": self.model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}}, parent)
        if s["kind"] != kind:
            if s["kind"] is not None:
                self._stream_event({"type": "content_block_stop", "index": s["index"]}, parent)
            s["index"] += 1
            s["kind"] = kind
            start = {"type": "text", "text": ""} if kind == "text" else {"type": "thinking", "thinking": ""}
            self._stream_event({"type": "content_block_start", "index": s["index"], "content_block": start}, parent)
        delta = {"type": "text_delta", "text": _scrub(text)} if kind == "text" else \
            {"type": "thinking_delta", "thinking": _scrub(text)}
        self._stream_event({"type": "content_block_delta", "index": s["index"], "delta": delta}, parent)

    def _end_stream(self, content: list[dict[str, Any]], parent: str | None) -> str | None:
        """Close the open partial message (the tool_use blocks given whole); its id is the
        assistant messages' id, as in Claude Code."""
        s, self._stream = self._stream, None
        if not self.partial or parent is not None:
            return None
        if s is None:
            if not any(b.get("type") == "tool_use" for b in content):
                return None
            s = {"id": _id("msg_"), "index": -1, "kind": None}
            self._stream_event({"type": "message_start", "message": {
                "id": s["id"], "type": "message", "role": "assistant", "model": self.model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}}, None)
        if s["kind"] is not None:
            self._stream_event({"type": "content_block_stop", "index": s["index"]}, None)
        uses = False
        for block in content:
            if block.get("type") != "tool_use":
                continue
            uses = True
            s["index"] += 1
            name, given = self.claude_call(str(block.get("name", "")), block.get("input") or {})
            self._stream_event({"type": "content_block_start", "index": s["index"], "content_block": {
                "type": "tool_use", "id": block.get("id", ""), "name": name, "input": {}}}, None)
            self._stream_event({"type": "content_block_delta", "index": s["index"], "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(_scrub(given))}}, None)
            self._stream_event({"type": "content_block_stop", "index": s["index"]}, None)
        self._stream_event({"type": "message_delta", "delta": {"stop_reason": "tool_use" if uses else "end_turn",
                                                               "stop_sequence": None},
                            "usage": (self.last_usage or {}).get("usage") or {"output_tokens": 0}}, None)
        self._stream_event({"type": "message_stop"}, None)
        return str(s["id"])

    # ------------------------------------------------------------------ the result

    def result_of(self, state: Any) -> dict[str, Any]:
        base = state.result()
        stop = base["terminal_reason"]
        subtype = SUBTYPES.get(stop, "error_during_execution")
        is_error = subtype != "success"
        errors = [str(base["result"])] if is_error else []
        terminal = TERMINAL.get(stop, "model_error")
        if stop == "interrupted":
            terminal = "aborted_tools" if self.aborted else "aborted_streaming"
        res: dict[str, Any] = {
            "type": "result", "subtype": subtype, "is_error": is_error,
            "duration_ms": base["duration_ms"], "duration_api_ms": base["duration_api_ms"],
            "num_turns": base["num_turns"],
            "result": base["partial_result"] if is_error else self.final_text if self.final_text is not None
            else base["result"],
            "stop_reason": STOP_REASON.get(stop),
            "session_id": ulid_to_uuid(base.get("session_id") or "") or self.session_id,
            "total_cost_usd": base["total_cost_usd"], "usage": base["usage"],
            "modelUsage": self.model_usage, "permission_denials": self.denials,
            "terminal_reason": terminal, "errors": errors, "uuid": _id(),
        }
        if "structured_output" in base:  # --json-schema's value, as Claude Code's result carries it
            res["structured_output"] = base["structured_output"]
        self.denials, self.model_usage, self.calls, self.final_text = [], {}, {}, None
        return _scrub(res)  # type: ignore[no-any-return]


def exit_code(result: dict[str, Any]) -> int:
    """Claude Code's: 0 after a turn that succeeded (denials or not), 1 after one that did not."""
    return 1 if result.get("is_error") else 0


def _server_status(server: dict[str, Any]) -> str:
    state = str(server.get("status") or server.get("state") or "connected")
    if state.startswith("failed"):
        return "failed"
    if state.startswith("restarting"):
        return "pending"
    return {"ready": "connected", "running": "connected", "starting": "pending", "pending": "pending",
            "failed": "failed", "untrusted": "disabled", "disabled": "disabled"}.get(state, state)


def _window(model: str) -> int:
    try:
        from cox.actors.provider.catalog import describe

        return int(describe(model, {}).context_window)
    except Exception:
        return 0

