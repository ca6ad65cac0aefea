"""The OpenAI Responses adapter: a ``ModelRequest`` out, provider-neutral deltas back.

What it sends, and why (the layout Codex uses, see codex-elpis-walkthrough §2):

- ``store: false`` and ``include: ["reasoning.encrypted_content"]``: nothing is kept server-side;
  the whole history, reasoning items included, is re-sent on every request. That only pays off
  with the automatic prefix cache, so the request is laid out for it: ``tools`` (native, sorted),
  ``instructions`` = system[1], then ``input`` starting with system[2] and system[3] as developer
  messages, then the history — the bytes before the history repeat exactly across a session, and
  ``prompt_cache_key`` (the session id) routes every request to the same warm cache. Per-request
  knobs (reasoning effort, output cap) come after ``input`` so even the JSON text of one request
  is a prefix of the next.
- Reasoning items are echoed as ``{"type": "reasoning", "summary", "encrypted_content"}``. The
  ``rs_…`` id is kept in history (``openai_id``) but not sent: with ``store: false`` there is no
  stored item to refer to, and an id-bearing reasoning item whose following message or call has
  no id of its own (cox does not keep ``msg_``/``fc_`` ids) is what the API rejects with "provided
  without its required following item". Codex omits the ids of every input item for the same
  reason. A reasoning item without ``encrypted_content`` cannot be replayed and is left out.

The stream: ``response.output_text.delta`` → text; reasoning summary deltas → thinking, and at
the reasoning item's ``output_item.done`` one ``ThinkingPart("", extra=…)`` that carries the item
(id, encrypted content, summary) into the assembled thinking block; function calls → tool-use
start / argument deltas / stop; ``response.completed`` / ``response.incomplete`` → usage and the
stop reason; ``response.failed`` and ``error`` events → a classified ``ProviderError``. A stream
that ends without its terminal event was cut: a retryable error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cox.actors.provider.openai_common import (
    DEFAULT_BASE_URL,
    KEY_VAR,
    PROVIDER,
    check_key,
    close_events,
    data_url,
    image_note,
    parse_json,
    refine_http_error,
    request_headers,
    result_text,
    stream_error,
    tool_arguments,
    usage_delta,
)
from cox.actors.provider.transport import post_sse
from cox.actors.provider.waits import DEFAULT_WAITS
from cox.config.schema import ProviderConfig
from cox.protocol.interfaces import CancelToken
from cox.protocol.model import (
    ModelRequest,
    ModelStop,
    ProviderError,
    StopDelta,
    StreamDelta,
    TextPart,
    ThinkingPart,
    ToolSpec,
    ToolUseInputDelta,
    ToolUseStart,
    ToolUseStop,
)

THINK_EFFORT = "high"
# Model families that take no ``reasoning`` parameter (sending one is a 400). Anything else on
# the Responses API (o-series, gpt-5, codex models, unknown names on a gateway) is asked for a
# reasoning summary and its encrypted reasoning.
NON_REASONING_PREFIXES = ("gpt-4", "gpt-3.5", "chatgpt-4o")


def is_reasoning_model(model: str) -> bool:
    """Whether ``reasoning`` / encrypted reasoning may be requested for ``model``."""
    return not model.lower().startswith(NON_REASONING_PREFIXES)


class OpenAIResponsesProvider:
    """Streams ``POST {base_url}/responses``. One instance per configured model; stateless
    between requests (everything the server needs is in each request)."""

    name = "openai"

    def __init__(self, model: str, *, api_key: str | None, base_url: str = DEFAULT_BASE_URL,
                 reasoning_effort: str | None = None, organization: str | None = None,
                 project: str | None = None, waits: ProviderConfig | None = None) -> None:
        self.model = model
        self.waits = waits or DEFAULT_WAITS
        self.api_key = api_key or ""
        self.base_url = base_url.rstrip("/")
        self.reasoning_effort = reasoning_effort
        self.thinking_budget = 0
        """A default thinking budget for the main loop's requests (``--max-thinking-tokens``):
        any budget asks for :data:`THINK_EFFORT`."""
        self.headers = request_headers(self.api_key, organization=organization, project=project)

    def check_key(self) -> None:
        """Raise the one-line missing-key error now (for a caller that wants it at start-up)."""
        check_key(self.api_key, self.base_url)

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request`` (see the module docstring for the layout)."""
        model = request.model or self.model
        system = list(request.system) + [""] * (4 - len(request.system))
        body: dict[str, Any] = {
            "model": model,
            "instructions": system[1],
            "tools": [function_tool(t) for t in request.tools],
            "tool_choice": "auto",
            "parallel_tool_calls": True,
            "store": False,
            "stream": True,
        }
        reasoning = is_reasoning_model(model)
        if reasoning:
            body["include"] = ["reasoning.encrypted_content"]
        if request.session_id:
            body["prompt_cache_key"] = request.session_id
        preamble = [developer_message(text) for text in system[2:4] if text]
        body["input"] = preamble + input_items(request.messages)
        if reasoning:
            budget = request.thinking_budget or (self.thinking_budget if request.tier != "cheap" else 0)
            own = request.effort or self.reasoning_effort
            effort = THINK_EFFORT if budget > 0 and not own else own
            body["reasoning"] = {"effort": effort, "summary": "auto"} if effort else {"summary": "auto"}
        body["max_output_tokens"] = request.max_output_tokens
        return body

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[StreamDelta]:
        """Yield the deltas of one response. Raises ProviderError (classified for the stream
        actor's retry logic); returns quietly when ``cancel`` fired."""
        check_key(self.api_key, self.base_url)
        events = post_sse(f"{self.base_url}/responses", self.headers, self.build_body(request), cancel,
                          provider=PROVIDER, key_var=KEY_VAR, idle_s=self.waits.stream_idle_timeout_s)
        reader = ResponsesReader()
        try:
            for event, data in events:
                # After the terminal event the body is read to its end, as the SDK does: the
                # connection then goes back to the pool instead of being torn down.
                if not reader.finished:
                    yield from reader.feed(event, data)
        except ProviderError as err:
            raise refine_http_error(err) from None
        finally:
            close_events(events)
        if not reader.finished and not cancel.cancelled:
            raise ProviderError(f"the {PROVIDER} stream ended before response.completed (connection cut)",
                                retryable=True)


# -- request translation ---------------------------------------------------------------------


def function_tool(spec: ToolSpec) -> dict[str, Any]:
    """A cox tool as a Responses function tool. Not ``strict``: cox schemas have optional
    properties, which strict mode forbids."""
    return {"type": "function", "name": spec.name, "description": spec.description,
            "parameters": spec.input_schema, "strict": False}


def developer_message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": text}]}


def user_message(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": content}


def input_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The normalised history as Responses input items, in order."""
    items: list[dict[str, Any]] = []
    for msg in messages:
        if msg.get("role") == "assistant":
            items.extend(_assistant_items(msg.get("content", [])))
        else:
            items.extend(_user_items(msg.get("content", [])))
    return items


def _assistant_items(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []

    def flush() -> None:
        if texts:
            out.append({"type": "message", "role": "assistant", "content": list(texts)})
            texts.clear()

    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                texts.append({"type": "output_text", "text": block["text"]})
            continue
        flush()
        if kind == "thinking":
            item = reasoning_item(block)
            if item is not None:
                out.append(item)
        elif kind == "tool_use":
            out.append({"type": "function_call", "call_id": block["id"], "name": block["name"],
                        "arguments": tool_arguments(block)})
    flush()
    return out


def reasoning_item(block: dict[str, Any]) -> dict[str, Any] | None:
    """A thinking block that carries an OpenAI reasoning item, as the input item to echo; None for
    any other thinking (streamed summary text, another provider's thinking), which the API could
    not use."""
    if not block.get("openai_id") or not block.get("encrypted_content"):
        return None
    return {"type": "reasoning", "summary": block.get("summary") or [],
            "encrypted_content": block["encrypted_content"]}


def _user_items(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "tool_result":
            out.append({"type": "function_call_output", "call_id": block["tool_use_id"],
                        "output": result_text(block)})
            pictures = block.get("images") or []
            if pictures:
                images.append({"type": "input_text", "text": image_note(block["tool_use_id"], len(pictures))})
                images.extend({"type": "input_image", "image_url": data_url(p)} for p in pictures)
        elif kind == "text":
            if block.get("text"):
                content.append({"type": "input_text", "text": block["text"]})
        elif kind == "image":
            content.append({"type": "input_image", "image_url": data_url(block)})
    # Outputs stay right after their calls; images ride in a user message after them (an output
    # is text on every Responses-compatible server), then whatever the user said.
    if images:
        out.append(user_message(images))
    if content:
        out.append(user_message(content))
    return out


# -- stream translation ----------------------------------------------------------------------


class ResponsesReader:
    """Turns Responses stream events into deltas. Tolerant of servers that skip the fine-grained
    events (a message or call that only arrives whole at ``output_item.done`` still yields its
    text / arguments once)."""

    def __init__(self) -> None:
        self.finished = False
        self._tool_index: dict[str, int] = {}  # item key → cox tool index
        self._tools: dict[int, dict[str, Any]] = {}  # cox tool index → {"args": bool, "stopped": bool}
        self._pending_args: dict[str, list[str]] = {}  # argument deltas that came before their item
        self._text_seen: set[str] = set()
        self._thinking_seen: set[str] = set()
        self._saw_tool = False

    @staticmethod
    def _key(item_id: Any, output_index: Any) -> str:
        return str(item_id) if item_id else f"#{output_index}"

    def _keys(self, data: dict[str, Any], item: dict[str, Any] | None = None) -> list[str]:
        keys = []
        item_id = (item or {}).get("id") or data.get("item_id")
        if item_id:
            keys.append(str(item_id))
        if data.get("output_index") is not None:
            keys.append(f"#{data['output_index']}")
        return keys or ["#"]

    def _lookup(self, keys: list[str]) -> int | None:
        for k in keys:
            if k in self._tool_index:
                return self._tool_index[k]
        return None

    def feed(self, event: str, data: str) -> Iterator[StreamDelta]:
        payload = parse_json(data)
        kind = str(payload.get("type") or event)
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            delta = str(payload.get("delta") or "")
            self._text_seen.update(self._keys(payload))
            if delta:
                yield TextPart(delta)
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            delta = str(payload.get("delta") or "")
            self._thinking_seen.update(self._keys(payload))
            if delta:
                yield ThinkingPart(delta)
        elif kind == "response.reasoning_summary_part.added":
            if int(payload.get("summary_index") or 0) > 0 and set(self._keys(payload)) & self._thinking_seen:
                yield ThinkingPart("\n\n")
        elif kind == "response.function_call_arguments.delta":
            yield from self._arguments(self._keys(payload), str(payload.get("delta") or ""))
        elif kind == "response.output_item.added":
            item = payload.get("item") or {}
            if item.get("type") == "function_call":
                yield from self._start(self._keys(payload, item), item)
        elif kind == "response.output_item.done":
            yield from self._item_done(payload, payload.get("item") or {})
        elif kind in ("response.completed", "response.incomplete"):
            yield from self._finish(payload.get("response") or {}, complete=kind == "response.completed")
        elif kind == "response.failed":
            response = payload.get("response") or {}
            raise stream_error(response.get("error") or {"message": "the response failed"}, where="response failed")
        elif kind == "error":
            raise stream_error(payload, where="stream error")

    def _start(self, keys: list[str], item: dict[str, Any]) -> Iterator[StreamDelta]:
        if self._lookup(keys) is not None:
            return
        index = len(self._tools)
        for k in keys:
            self._tool_index[k] = index
        self._tools[index] = {"args": False, "stopped": False}
        self._saw_tool = True
        call_id = str(item.get("call_id") or item.get("id") or f"call_{index}")
        yield ToolUseStart(index, call_id, str(item.get("name") or ""))
        for k in keys:
            for piece in self._pending_args.pop(k, []):
                yield from self._arguments(keys, piece)

    def _arguments(self, keys: list[str], delta: str) -> Iterator[StreamDelta]:
        index = self._lookup(keys)
        if index is None:
            self._pending_args.setdefault(keys[0], []).append(delta)
            return
        if delta:
            self._tools[index]["args"] = True
            yield ToolUseInputDelta(index, delta)

    def _item_done(self, payload: dict[str, Any], item: dict[str, Any]) -> Iterator[StreamDelta]:
        keys = self._keys(payload, item)
        kind = item.get("type")
        if kind == "function_call":
            yield from self._start(keys, item)
            index = self._lookup(keys)
            assert index is not None
            state = self._tools[index]
            if not state["args"] and item.get("arguments"):
                yield from self._arguments(keys, str(item["arguments"]))
            if not state["stopped"]:
                state["stopped"] = True
                yield ToolUseStop(index)
        elif kind == "reasoning":
            summary = item.get("summary") or []
            if not set(keys) & self._thinking_seen:
                text = "\n\n".join(str(s.get("text", "")) for s in summary if isinstance(s, dict))
                if text:
                    yield ThinkingPart(text)
            yield ThinkingPart("", extra={"openai_id": item.get("id") or "",
                                          "encrypted_content": item.get("encrypted_content"),
                                          "summary": summary})
        elif kind == "message" and not set(keys) & self._text_seen:
            for part in item.get("content") or []:
                text = part.get("text") if part.get("type") == "output_text" else part.get("refusal")
                if text:
                    yield TextPart(str(text))

    def _finish(self, response: dict[str, Any], *, complete: bool) -> Iterator[StreamDelta]:
        self.finished = True
        if complete:  # a call whose item never finished is closed now; a cut one stays cut
            for index, state in self._tools.items():
                if not state["stopped"]:
                    state["stopped"] = True
                    yield ToolUseStop(index)
        usage = response.get("usage")
        if isinstance(usage, dict):
            details = usage.get("input_tokens_details") or {}
            yield usage_delta(usage.get("input_tokens"), usage.get("output_tokens"), details.get("cached_tokens"))
        yield StopDelta(self._stop(response))

    def _stop(self, response: dict[str, Any]) -> ModelStop:
        reason = (response.get("incomplete_details") or {}).get("reason")
        if reason == "max_output_tokens":
            return "max_tokens"
        if reason == "content_filter":
            return "refusal"
        return "tool_use" if self._saw_tool else "end_turn"
