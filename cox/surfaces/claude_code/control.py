"""The stdin side of the dialect: user messages and the client's control protocol.

Each line is one JSON object:

- ``{"type": "user", "message": {"role": "user", "content": TEXT or [blocks]}}`` → a ``UserTurn``
  (text blocks joined; image blocks given as the turn's images); one that comes while a turn
  runs waits for it, as in cox's own dialect;
- ``{"type": "control_request", "request_id", "request": {"subtype": …}}`` → answered with one
  ``control_response`` (``success`` with the subtype's payload, or ``error`` with a sentence):
  an unknown subtype or a bad field is an error response, never a crash;
- ``{"type": "control_response", "response": {…}}`` → the answer to one of cox's own requests
  (``outgoing``);
- ``{"type": "control_cancel_request"}``: cox answers every client request at once, so there is
  nothing in flight to cancel; it is read and dropped.

The reader starts before the session opens (the SDK sends ``initialize`` at once, and an SDK MCP
server's tools are listed over this channel while cox starts up); what needs the session waits,
in order, until ``attach`` hands it over. ``initialize``'s hooks are registered at once (the
session's first hook points need them); its answer, which lists the session's commands, is sent
from a thread of its own once they are known (``ready``), so the reader goes on delivering the
answers start-up waits for.
"""

from __future__ import annotations

import collections
import json
import os
import threading
from collections.abc import Callable
from typing import IO, Any

from cox.protocol import messages as m
from cox.protocol.types import PermissionMode

from .outgoing import Outgoing
from .wire import Wire

Wake = Callable[[], None]
MODES = [mode.value for mode in PermissionMode]
REWIND_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0  # an agent's close waits at most agents.STOP_WAIT_S for it to stop
SLOW = frozenset({"rewind_files", "mcp_reconnect", "mcp_toggle", "stop_task"})
READY_TIMEOUT_S = 60.0
"""The longest ``initialize``'s answer waits for the session's commands (start-up, MCP prompts)."""


class RequestError(Exception):
    """A control request cox cannot carry out: its message is the error response's."""


class Channel:
    def __init__(self, wire: Wire, outgoing: Outgoing, err: IO[str], *, printer: Any, hooks: Any = None,
                 info: Callable[[], dict[str, Any]] | None = None, mcp: Callable[[], list[dict[str, Any]]] | None = None,
                 models: Callable[[], list[str]] | None = None,
                 commands: Callable[[], list[dict[str, str]]] | None = None) -> None:
        self.wire = wire
        self.outgoing = outgoing
        self.err = err
        self.printer = printer
        self.hooks = hooks
        self.info = info or (lambda: {})
        self.mcp = mcp or (lambda: [])
        self.models = models or (lambda: [])
        self.commands = commands or (lambda: [])
        self.ready = threading.Event()
        """The session's commands are known (``initialize`` answers with them)."""
        self.handle: Any = None
        self.inbox: collections.deque[Any] | None = None
        self.wake: Wake = lambda: None
        self.closed_event: threading.Event | None = None
        self.eof = False
        self._early: list[tuple[int, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self.initialized = False

    # ------------------------------------------------------------------ the reader

    def start(self, stdin: IO[str]) -> threading.Thread:
        thread = threading.Thread(target=self._read, args=(stdin,), name="cox-claude-stdin", daemon=True)
        thread.start()
        return thread

    def attach(self, handle: Any, inbox: collections.deque[Any], closed: threading.Event, wake: Wake) -> None:
        """The session is open: run what waited for it, in order, then route as lines come."""
        with self._lock:
            self.handle, self.inbox, self.closed_event, self.wake = handle, inbox, closed, wake
            early, self._early = self._early, []
            eof = self.eof
        for lineno, data in early:
            self._route(lineno, data)
        if eof:
            closed.set()
            wake()

    def _read(self, stdin: IO[str]) -> None:
        try:
            for lineno, line in enumerate(stdin, start=1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as exc:
                    self._say(f"stdin line {lineno}: not JSON ({exc.msg} at column {exc.colno}); skipped")
                    continue
                if not isinstance(data, dict):
                    self._say(f"stdin line {lineno}: expected a JSON object; skipped")
                    continue
                try:
                    self._take(lineno, data)
                except Exception as exc:  # a bug on one line must not stop the reading of the next
                    self._say(f"stdin line {lineno}: cox failed on it ({exc}); skipped")
        except (OSError, ValueError) as exc:
            self._say(f"stdin could not be read ({exc})")
        finally:
            self.outgoing.close("stdin closed: the client can no longer answer")
            with self._lock:
                self.eof = True
                closed, wake = self.closed_event, self.wake
            if closed is not None:
                closed.set()
                wake()

    def _take(self, lineno: int, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "control_response":
            response = data.get("response")
            if not isinstance(response, dict) or not self.outgoing.resolve(response):
                self._say(f"stdin line {lineno}: a control_response for no open request; skipped")
            return
        if kind == "control_cancel_request":
            return
        if kind == "control_request" and _subtype(data) == "initialize":
            request = data.get("request")
            if isinstance(request, dict) and self.hooks is not None:
                for problem in self.hooks.register(request.get("hooks")):
                    self._say(f"warning: {problem}")
            threading.Thread(target=self._initialized, args=(data,), name="cox-claude-initialize", daemon=True).start()
            return
        with self._lock:
            if self.handle is None:
                self._early.append((lineno, data))
                return
        self._route(lineno, data)

    def _route(self, lineno: int, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "user":
            turn = self._user_turn(lineno, data)
            if turn is not None and self.inbox is not None:
                self.inbox.append(turn)
                self.wake()
        elif kind == "control_request" and _subtype(data) in SLOW:
            # These wait on the session or a server, which may be waiting on an answer this
            # reader has to deliver (a hook callback's): answered from a thread of their own.
            threading.Thread(target=self._answer, args=(data, self._handler(_subtype(data))),
                             name="cox-claude-request", daemon=True).start()
        elif kind == "control_request":
            self._answer(data, self._handler(_subtype(data)))
        else:
            self._say(f"stdin line {lineno}: unknown message type {kind!r} (expected 'user', 'control_request', "
                      "'control_response' or 'control_cancel_request'); skipped")

    # ------------------------------------------------------------------ requests

    def _answer(self, data: dict[str, Any], handler: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        request_id = data.get("request_id")
        request = data.get("request")
        try:
            if not isinstance(request, dict):
                raise RequestError("a control_request needs a 'request' object")
            payload = handler(request)
            response: dict[str, Any] = {"subtype": "success", "request_id": request_id, "response": payload or {}}
        except RequestError as exc:
            response = {"subtype": "error", "request_id": request_id, "error": str(exc)}
        except Exception as exc:  # a bug here is the request's error, never the run's
            response = {"subtype": "error", "request_id": request_id, "error": f"cox failed on this request: {exc}"}
        self.wire.send({"type": "control_response", "response": response})

    def _handler(self, subtype: str) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
        handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
            "interrupt": self._interrupt, "set_permission_mode": self._set_permission_mode,
            "set_model": self._set_model, "mcp_status": self._mcp_status, "get_context_usage": self._context_usage,
            "rewind_files": self._rewind_files, "mcp_reconnect": self._mcp_reconnect, "mcp_toggle": self._mcp_toggle,
            "stop_task": self._stop_task,
        }
        handler = handlers.get(subtype)
        if handler is None:
            known = ", ".join(["initialize", *handlers])
            raise_unknown = RequestError(f"unsupported control request subtype {subtype!r} (cox knows: {known})")

            def unknown(_: dict[str, Any]) -> dict[str, Any] | None:
                raise raise_unknown

            return unknown
        return handler

    def _initialized(self, data: dict[str, Any]) -> None:
        self.ready.wait(READY_TIMEOUT_S)
        self._answer(data, self._initialize)

    def _initialize(self, request: dict[str, Any]) -> dict[str, Any]:
        agents = request.get("agents")
        if isinstance(agents, dict) and agents:
            self._say(f"warning: initialize: the client's own agent definitions ({', '.join(sorted(map(str, agents)))}) "
                      "are not supported by cox yet; ignored (cox's agent files under .cox/agents/ or .claude/agents/ are)")
        self.initialized = True
        models = [{"value": name, "displayName": name, "description": ""} for name in self.models()]
        return {"commands": self.commands(), "output_style": "default", "available_output_styles": ["default"],
                "models": models, "account": {}, "pid": os.getpid(), "hook_on_failure_supported": True,
                "hooks_applied": True, **self.info()}

    def _submit(self, submission: Any) -> None:
        if self.handle is None or not self.handle.submit(submission):
            raise RequestError("the session is not running")

    def _interrupt(self, request: dict[str, Any]) -> None:
        if self.handle is None or not self.handle.interrupt():
            raise RequestError("the session is not running")

    def _set_permission_mode(self, request: dict[str, Any]) -> None:
        mode = request.get("mode")
        if mode not in MODES:
            raise RequestError(f"unknown permission mode {mode!r} (cox knows: {', '.join(MODES)})")
        self._submit(m.SetMode(mode=PermissionMode(mode)))
        self.printer.permission_mode = mode

    def _set_model(self, request: dict[str, Any]) -> None:
        model = request.get("model")
        if model is None:
            names = self.models()
            if not names:
                raise RequestError("no default model to go back to")
            model = names[0]
        if not isinstance(model, str):
            raise RequestError(f"set_model wants a model name, got {model!r}")
        try:
            sub = m.SetModel(model=model)
        except ValueError as exc:
            raise RequestError(str(exc)) from None
        self._submit(sub)
        self.printer.model = model

    def _mcp_status(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"mcpServers": self.mcp()}

    def _context_usage(self, request: dict[str, Any]) -> dict[str, Any]:
        from cox.actors.provider.catalog import describe

        model = self.printer.model
        window = int(describe(model, {}).context_window or 0) if model else 0
        used = int(self.printer.context_tokens)
        return {"categories": [{"name": "Messages", "tokens": used, "color": "purple"}], "totalTokens": used,
                "maxTokens": window, "rawMaxTokens": window, "percentage": round(100.0 * used / window, 2) if window else 0.0,
                "model": model, "isAutoCompactEnabled": True, "memoryFiles": [], "mcpTools": [], "agents": [],
                "gridRows": []}

    def _rewind_files(self, request: dict[str, Any]) -> dict[str, Any]:
        """``user_message_id``: a user message this run showed (a prompt echoed with
        ``--replay-user-messages``, or a tool result); the files go back to how they were before
        that message's turn began — cox's ``Rewind{to_turn, what: "code"}``."""
        message_id = request.get("user_message_id")
        turn = self.printer.user_turns.get(message_id) if isinstance(message_id, str) else None
        if turn is None:
            raise RequestError(f"no user message {message_id!r} in this run (pass the uuid of a user message this "
                               "run printed; --replay-user-messages echoes the prompts)")
        ref = self.handle.ref() if self.handle is not None else None
        if ref is None:
            raise RequestError("the session is not running")
        ref.ask(m.Rewind(to_turn=turn, what="code"), timeout=REWIND_TIMEOUT_S)
        return {"canRewind": True}

    def _mcp_reconnect(self, request: dict[str, Any]) -> None:
        name = request.get("serverName")
        manager = getattr(self.printer, "mcp_manager", None)
        if manager is None or name not in getattr(manager, "servers", {}):
            raise RequestError(f"no MCP server {name!r} in this session")
        try:
            manager.reconnect(name)
        except Exception as exc:
            raise RequestError(str(exc)) from None

    def _mcp_toggle(self, request: dict[str, Any]) -> None:
        """``serverName`` off (``enabled`` false: its process stopped, its tools gone from the
        next request, ``disabled`` in ``mcp_status``) or on again, for this session."""
        name, enabled = request.get("serverName"), request.get("enabled")
        manager = getattr(self.printer, "mcp_manager", None)
        if manager is None or not isinstance(name, str) or name not in getattr(manager, "servers", {}):
            raise RequestError(f"no MCP server {name!r} in this session")
        if not isinstance(enabled, bool):
            raise RequestError(f"mcp_toggle needs 'enabled': true or false, got {enabled!r}")
        if not enabled:  # the tools go first: no request offers a tool whose server is stopping
            self._submit(m.SetMcpServer(server=name, enabled=False))
        try:
            manager.set_enabled(name, enabled)
        except Exception as exc:
            if not enabled:  # it could not be switched off: its tools come back as they were
                self._submit(m.SetMcpServer(server=name, enabled=True))
            raise RequestError(str(exc).strip("'\"")) from None
        if enabled:
            self._submit(m.SetMcpServer(server=name, enabled=True))

    def _stop_task(self, request: dict[str, Any]) -> None:
        """``task_id``: a background subagent, by the id its ``Task`` call's result names; it is
        closed as ``agent_close`` closes it (``CloseAgent``, asked of the session)."""
        task_id = request.get("task_id")
        if not isinstance(task_id, str) or not task_id.strip():
            raise RequestError("stop_task needs a 'task_id': the agent id a background Task call's result names")
        ref = self.handle.ref() if self.handle is not None else None
        if ref is None:
            raise RequestError("the session is not running")
        why = ref.ask(m.CloseAgent(agent_id=task_id), timeout=STOP_TIMEOUT_S)
        if why:
            raise RequestError(f"stop_task: {why}")

    # ------------------------------------------------------------------ user messages

    def _user_turn(self, lineno: int, data: dict[str, Any]) -> m.UserTurn | None:
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        texts: list[str] = []
        images: list[dict[str, Any]] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
                elif block.get("type") == "image" and isinstance(block.get("source"), dict):
                    images.append(block["source"])
        text = "\n\n".join(texts)
        if not text.strip() and not images:
            self._say(f"stdin line {lineno}: a user message with no text (message.content: a string or text "
                      "blocks); skipped")
            return None
        return m.UserTurn(text=text, images=images or None)

    def _say(self, text: str) -> None:
        from ..headless import shown

        try:
            self.err.write(f"cox: {shown(text)}\n")
            self.err.flush()
        except (BrokenPipeError, ValueError):
            pass


def _subtype(data: dict[str, Any]) -> str:
    request = data.get("request")
    return str(request.get("subtype", "")) if isinstance(request, dict) else ""


__all__ = ["Channel", "RequestError"]
