"""The scripted provider: replays a JSON script of model replies, so tests and the demo run
offline through the same ProviderStream actor as a real model.

Format (documented for users in docs/scripted-provider.md)::

    {"model": "scripted", "replies": [REPLY, ...]}

Each model request takes the next REPLY. A reply is either the shorthand

    {"thinking": "...", "text": "...", "tool_calls": [{"name": "read", "input": {...}, "id": "t1"}],
     "stop": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}, "chunk": 8,
     "delay_ms": 0, "delta_delay_ms": 0}

or an explicit list of steps, played in order

    {"events": [{"text": "Hel"}, {"delay_ms": 50}, {"text": "lo", "repeat": 3},
                {"thinking": "hmm", "signature": "sig"},
                {"tool_call": {"name": "bash", "input": {"command": "ls"}}},
                {"tool_call_raw": {"name": "write", "partial_json": "{\\"path\\": \\"a"}},
                {"stall": true}, {"error": {...}}, {"crash": "boom"}],
     "stop": "tool_use"}

or a request-level failure ``{"error": {"message": "overloaded", "status": 529,
"retryable": true, "retry_after": 0.01}}``. ``stall`` blocks until the turn is cancelled;
``crash`` raises a plain exception (an adapter bug). When the replies run out the request fails
with a clear, non-retryable error. Set ``COX_SCRIPTED_DUMP=FILE`` to have every request the
model received written to FILE (tests and debugging).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cox.protocol.interfaces import CancelToken
from cox.protocol.model import (
    ModelRequest,
    ProviderError,
    StopDelta,
    StreamDelta,
    TextPart,
    ThinkingPart,
    ToolUseInputDelta,
    ToolUseStart,
    ToolUseStop,
    UsageDelta,
)
from cox.supervisors.cancel import wait_cancelled


class ScriptError(ValueError):
    """The script file is missing or malformed."""


def load_script(source: str | Path | dict[str, Any]) -> dict[str, Any]:
    if isinstance(source, dict):
        script = source
    else:
        path = Path(source)
        try:
            script = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ScriptError(f"cannot read model script {path}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise ScriptError(f"model script {path} is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(script, dict) or not isinstance(script.get("replies"), list):
        raise ScriptError('a model script is an object with a "replies" list')
    where = f"model script {source}" if not isinstance(source, dict) else "the model script"
    _check_keys(script, SCRIPT_KEYS, where)
    for n, reply in enumerate(script["replies"], start=1):
        check_reply(reply, f"{where}, reply #{n}")
    agents = script.get("agents", {})
    if not isinstance(agents, dict) or not all(isinstance(v, list) for v in agents.values()):
        raise ScriptError(f'{where}: "agents" maps a subagent\'s prompt to its list of replies')
    for prompt, replies in agents.items():
        for n, reply in enumerate(replies, start=1):
            check_reply(reply, f"{where}, agent {prompt[:40]!r}, reply #{n}")
    return script


# What a script may say. A key outside these is a typo the replay would otherwise skip silently
# (a reply whose "txt" says nothing), so it is refused with its place named.
SCRIPT_KEYS = {"model", "replies", "agents"}
REPLY_KEYS = {"thinking", "signature", "text", "tool_calls", "stop", "usage", "chunk", "delay_ms",
              "delta_delay_ms", "events", "error"}
STEP_KEYS = {"text": {"text", "repeat"}, "thinking": {"thinking", "signature"}, "tool_call": {"tool_call"},
             "tool_call_raw": {"tool_call_raw"}, "delay_ms": {"delay_ms"}, "stall": {"stall"},
             "error": {"error"}, "crash": {"crash"}}
CALL_KEYS = {"id", "name", "input"}
RAW_CALL_KEYS = {"id", "name", "partial_json"}
ERROR_KEYS = {"message", "status", "retryable", "retry_after", "context_overflow"}
USAGE_KEYS = {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}


def _check_keys(obj: Any, known: set[str], where: str) -> None:
    if not isinstance(obj, dict):
        raise ScriptError(f"{where} is not an object: {json.dumps(obj)[:80]}")
    unknown = sorted(set(obj) - known)
    if unknown:
        raise ScriptError(f"{where} has an unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")


def check_reply(reply: Any, where: str) -> None:
    """Refuse a reply (and its steps, tool calls, error and usage) holding a key cox does not
    know, naming the reply, the step and the key."""
    _check_keys(reply, REPLY_KEYS, where)
    if "error" in reply:
        _check_keys(reply["error"], ERROR_KEYS, f"{where}, its error")
    if "usage" in reply:
        _check_keys(reply["usage"], USAGE_KEYS, f"{where}, its usage")
    for i, call in enumerate(reply.get("tool_calls") or [], start=1):
        _check_keys(call, CALL_KEYS, f"{where}, tool call #{i}")
    for i, step in enumerate(reply.get("events") or [], start=1):
        at = f"{where}, step #{i}"
        if not isinstance(step, dict):
            raise ScriptError(f"{at} is not an object: {json.dumps(step)[:80]}")
        kind = next((k for k in STEP_KEYS if k in step), None)
        if kind is None:
            raise ScriptError(f"{at} has no known step ({', '.join(STEP_KEYS)}): {json.dumps(step)[:80]}")
        _check_keys(step, STEP_KEYS[kind], at)
        if kind == "tool_call":
            _check_keys(step["tool_call"], CALL_KEYS, f"{at}, its tool_call")
        elif kind == "tool_call_raw":
            _check_keys(step["tool_call_raw"], RAW_CALL_KEYS, f"{at}, its tool_call_raw")
        elif kind == "error":
            _check_keys(step["error"], ERROR_KEYS, f"{at}, its error")


def _first_prompt(request: ModelRequest) -> str:
    """The text of a conversation's first user message (a subagent's task)."""
    for message in request.messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        for block in content or []:
            if isinstance(block, dict) and block.get("type") == "text":
                return str(block.get("text", ""))
        return ""
    return ""


class ScriptedProvider:
    """A Provider that plays replies from a script; one instance per session (it keeps its place)."""

    name = "scripted"

    def __init__(self, script: str | Path | dict[str, Any]) -> None:
        self.script = load_script(script)
        self.model = str(self.script.get("model", "scripted"))
        self._replies: list[dict[str, Any]] = list(self.script["replies"])
        self._next = 0
        # A subagent's conversation (its first prompt) plays its own replies, in its own order,
        # so agents running at once get the replies written for them.
        self._agents: dict[str, list[dict[str, Any]]] = {k: list(v) for k, v in self.script.get("agents", {}).items()}
        self._agent_next: dict[str, int] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.requests: list[ModelRequest] = []

    def _take(self, request: ModelRequest) -> dict[str, Any]:
        with self._lock:
            self.requests.append(request)
            said = _first_prompt(request)
            first = max((k for k in self._agents if said.startswith(k)), key=len, default=None)
            if first is not None:
                n = self._agent_next.get(first, 0)
                queue = self._agents[first]
                if n >= len(queue):
                    raise ProviderError(f"the scripted model has no reply #{n + 1} for the agent {first[:40]!r} "
                                        f"(its script has {len(queue)})")
                self._agent_next[first] = n + 1
                return queue[n]
            if self._next >= len(self._replies):
                raise ProviderError(
                    f"the scripted model has no reply #{self._next + 1} (its script has {len(self._replies)})"
                )
            reply = self._replies[self._next]
            self._next += 1
            dump = os.environ.get("COX_SCRIPTED_DUMP")
            if dump:  # for tests and debugging: every request the scripted model received
                Path(dump).write_text(json.dumps(
                    [{"system": r.system, "messages": r.messages, "model": r.model, "tools": [t.name for t in r.tools],
                      "t": time.time()} for r in self.requests]),
                    encoding="utf-8")
            return reply

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[StreamDelta]:
        from .transport import REQUEST_SENT

        REQUEST_SENT.set()  # as a real provider does once its request has left
        reply = self._take(request)
        if "error" in reply and "events" not in reply:
            raise _error(reply["error"])
        if wait_cancelled(cancel, float(reply.get("delay_ms", 0)) / 1000):
            return
        steps = reply["events"] if "events" in reply else _shorthand(reply)
        delta_delay = float(reply.get("delta_delay_ms", 0)) / 1000
        chunk = int(reply.get("chunk", 0))
        index = 0
        out_chars = 0
        saw_tool = False
        for step in steps:
            if cancel.cancelled:
                return
            if "text" in step:
                text = str(step["text"])
                for _ in range(int(step.get("repeat", 1))):
                    for piece in _chunks(text, chunk):
                        out_chars += len(piece)
                        yield TextPart(piece)
                        if delta_delay and wait_cancelled(cancel, delta_delay):
                            return
            elif "thinking" in step:
                for piece in _chunks(str(step["thinking"]), chunk):
                    yield ThinkingPart(piece)
                yield ThinkingPart("", signature=step.get("signature", "scripted-signature"))
            elif "tool_call" in step:
                tc = step["tool_call"]
                saw_tool = True
                yield ToolUseStart(index, str(tc.get("id") or f"toolu_{next(self._ids):04d}"), str(tc["name"]))
                yield ToolUseInputDelta(index, json.dumps(tc.get("input", {})))
                yield ToolUseStop(index)
                index += 1
            elif "tool_call_raw" in step:
                tc = step["tool_call_raw"]
                saw_tool = True
                yield ToolUseStart(index, str(tc.get("id") or f"toolu_{next(self._ids):04d}"), str(tc["name"]))
                yield ToolUseInputDelta(index, str(tc.get("partial_json", "")))
                yield ToolUseStop(index)
                index += 1
            elif "delay_ms" in step:
                if wait_cancelled(cancel, float(step["delay_ms"]) / 1000):
                    return
            elif step.get("stall"):
                wait_cancelled(cancel, 3600.0)
                return
            elif "error" in step:
                raise _error(step["error"])
            elif "crash" in step:
                raise RuntimeError(str(step["crash"]))
            else:
                raise ProviderError(f"the model script has an unknown step {step!r}")
        usage = reply.get("usage") or {}
        yield UsageDelta(
            input_tokens=int(usage.get("input_tokens", _estimate(request))),
            output_tokens=int(usage.get("output_tokens", max(1, out_chars // 4))),
            cache_read_tokens=int(usage.get("cache_read_tokens", 0)),
            cache_write_tokens=int(usage.get("cache_write_tokens", 0)),
        )
        yield StopDelta(reply.get("stop") or ("tool_use" if saw_tool else "end_turn"))


def _shorthand(reply: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    if reply.get("thinking"):
        steps.append({"thinking": reply["thinking"], "signature": reply.get("signature", "scripted-signature")})
    if reply.get("text"):
        steps.append({"text": reply["text"]})
    for tc in reply.get("tool_calls", []):
        steps.append({"tool_call": tc})
    return steps


def _chunks(text: str, size: int) -> list[str]:
    if size <= 0 or len(text) <= size:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def _estimate(request: ModelRequest) -> int:
    size = sum(len(s) for s in request.system)
    for m in request.messages:
        for block in m.get("content", []):
            size += len(json.dumps(block)) if not isinstance(block, str) else len(block)
    return max(1, size // 4)


def _error(spec: dict[str, Any]) -> ProviderError:
    return ProviderError(
        str(spec.get("message", "scripted provider error")),
        retryable=bool(spec.get("retryable", False)),
        retry_after=spec.get("retry_after"),
        status=spec.get("status"),
        context_overflow=bool(spec.get("context_overflow", False)),
    )
