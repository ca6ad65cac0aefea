"""The Chat Completions adapter: for any OpenAI-compatible server (vLLM, Ollama, llama.cpp,
gateways) that does not speak the Responses API.

The request keeps the cache-stable layout as far as the format allows: ``tools`` natively, one
system message holding system[1], system[2] and the volatile system[3] in that order (so the
stable text still leads and servers with prefix caching — vLLM's automatic prefix caching,
OpenAI's — hit), then the history. Fields only OpenAI knows (``prompt_cache_key``,
``max_completion_tokens``) are sent only to OpenAI; a local server gets the widely supported
``max_tokens`` and no ``tool_choice`` (vLLM refuses ``"auto"`` unless started with
``--enable-auto-tool-choice``; every server defaults to it when tools are given).

The stream: ``delta.content`` → text, ``delta.reasoning_content`` / ``delta.reasoning`` (vLLM,
DeepSeek, OpenRouter) → thinking, ``delta.tool_calls[i]`` → tool-use start (id and name arrive in
the first fragment of a call) and argument deltas, stopped at the ``finish_reason``; the usage
chunk (``stream_options.include_usage``) → usage; ``data: [DONE]`` ends it. Reasoning text is not
sent back: the chat format has no field for it that servers agree on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cox.actors.provider.openai_common import (
    DEFAULT_BASE_URL,
    KEY_VAR,
    PROVIDER,
    check_key,
    close_events,
    data_url,
    image_note,
    is_openai,
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
    UsageDelta,
)

FINISH: dict[str, ModelStop] = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class OpenAIChatProvider:
    """Streams ``POST {base_url}/chat/completions``; stateless between requests."""

    name = "openai-chat"

    def __init__(self, model: str, *, api_key: str | None, base_url: str = DEFAULT_BASE_URL,
                 organization: str | None = None, project: str | None = None,
                 waits: ProviderConfig | None = None) -> None:
        self.model = model
        self.waits = waits or DEFAULT_WAITS
        self.api_key = api_key or ""
        self.base_url = base_url.rstrip("/")
        self.headers = request_headers(self.api_key, organization=organization, project=project)
        self._openai = is_openai(self.base_url)
        self.reasoning_effort: str | None = None
        """``--effort``: sent as ``reasoning_effort`` on the main loop's requests."""

    def check_key(self) -> None:
        """Raise the one-line missing-key error now (for a caller that wants it at start-up)."""
        check_key(self.api_key, self.base_url)

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request`` (see the module docstring for the layout)."""
        body: dict[str, Any] = {"model": request.model or self.model}
        if request.tools:
            body["tools"] = [function_tool(t) for t in request.tools]
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        if self._openai and request.session_id:
            body["prompt_cache_key"] = request.session_id
        system = "\n\n".join(text for text in request.system[1:4] if text)
        body["messages"] = ([{"role": "system", "content": system}] if system else []) + chat_messages(request.messages)
        body["max_completion_tokens" if self._openai else "max_tokens"] = request.max_output_tokens
        effort = request.effort or self.reasoning_effort
        if effort and request.tier != "cheap":  # --effort (or the request's own): the chat API's reasoning_effort
            body["reasoning_effort"] = effort
        return body

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[StreamDelta]:
        """Yield the deltas of one completion. Raises ProviderError (classified for the stream
        actor's retry logic); returns quietly when ``cancel`` fired."""
        check_key(self.api_key, self.base_url)
        events = post_sse(f"{self.base_url}/chat/completions", self.headers, self.build_body(request), cancel,
                          provider=PROVIDER, key_var=KEY_VAR, idle_s=self.waits.stream_idle_timeout_s)
        reader = ChatReader()
        try:
            for _event, data in events:
                yield from reader.feed(data)
                if reader.done:  # [DONE] ends it, as in the SDK: nothing after it is read
                    break
        except ProviderError as err:
            raise refine_http_error(err) from None
        finally:
            close_events(events)
        if cancel.cancelled:
            return
        yield from reader.end()


# -- request translation ---------------------------------------------------------------------


def function_tool(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function",
            "function": {"name": spec.name, "description": spec.description, "parameters": spec.input_schema}}


def chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The normalised history as chat messages: assistant turns with ``tool_calls``, each result
    as a ``tool`` message right after them, then images and user text as user messages."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        blocks = msg.get("content", [])
        if msg.get("role") == "assistant":
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            calls = [{"id": b["id"], "type": "function",
                      "function": {"name": b["name"], "arguments": tool_arguments(b)}}
                     for b in blocks if b.get("type") == "tool_use"]
            if not text and not calls:
                continue  # thinking only: nothing a chat server can take back
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = calls
            out.append(message)
            continue
        images: list[dict[str, Any]] = []
        texts: list[str] = []
        pictures_of_user: list[dict[str, Any]] = []
        for b in blocks:
            kind = b.get("type")
            if kind == "tool_result":
                out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": result_text(b)})
                pictures = b.get("images") or []
                if pictures:
                    images.append({"type": "text", "text": image_note(b["tool_use_id"], len(pictures))})
                    images.extend({"type": "image_url", "image_url": {"url": data_url(p)}} for p in pictures)
            elif kind == "text" and b.get("text"):
                texts.append(b["text"])
            elif kind == "image":
                pictures_of_user.append({"type": "image_url", "image_url": {"url": data_url(b)}})
        if images:
            out.append({"role": "user", "content": images})
        if pictures_of_user:
            out.append({"role": "user", "content": [{"type": "text", "text": "\n\n".join(texts)}, *pictures_of_user]})
        elif texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


# -- stream translation ----------------------------------------------------------------------


@dataclass
class _Call:
    index: int | None = None  # cox's tool index, once started
    id: str = ""
    name: str = ""
    args: list[str] = field(default_factory=list)  # fragments that came before the name


class ChatReader:
    """Turns chat completion chunks into deltas."""

    def __init__(self) -> None:
        self.done = False
        self._calls: dict[int, _Call] = {}
        self._started = 0
        self._stopped = False
        self._finish: str | None = None
        self._usage: UsageDelta | None = None

    def feed(self, data: str) -> Iterator[StreamDelta]:
        if data.strip() == "[DONE]":
            self.done = True
            return
        chunk = parse_json(data)
        if chunk.get("error") is not None or chunk.get("object") == "error":
            raise stream_error(chunk, where="stream error")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            details = usage.get("prompt_tokens_details") or {}
            self._usage = usage_delta(usage.get("prompt_tokens"), usage.get("completion_tokens"),
                                      details.get("cached_tokens"))
        for choice in chunk.get("choices") or []:
            if int(choice.get("index") or 0) != 0:
                continue  # n > 1 is never asked for
            delta = choice.get("delta") or {}
            thinking = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thinking, str) and thinking:
                yield ThinkingPart(thinking)
            content = delta.get("content")
            if isinstance(content, str) and content:
                yield TextPart(content)
            for position, fragment in enumerate(delta.get("tool_calls") or []):
                yield from self._tool_fragment(position, fragment)
            if choice.get("finish_reason"):
                self._finish = str(choice["finish_reason"])
                yield from self._stop_calls()

    def _tool_fragment(self, position: int, fragment: dict[str, Any]) -> Iterator[StreamDelta]:
        key = fragment.get("index")
        call = self._calls.setdefault(int(key) if key is not None else position, _Call())
        function = fragment.get("function") or {}
        if fragment.get("id") and not call.id:
            call.id = str(fragment["id"])
        if function.get("name") and not call.name:
            call.name = str(function["name"])
        piece = function.get("arguments")
        if isinstance(piece, dict):  # a few servers send the arguments already parsed
            piece = json.dumps(piece, ensure_ascii=False)
        if piece:
            call.args.append(str(piece))
        if call.index is None and call.name:
            call.index = self._started
            self._started += 1
            yield ToolUseStart(call.index, call.id or f"call_{call.index}", call.name)
        if call.index is not None and call.args:
            for part in call.args:
                yield ToolUseInputDelta(call.index, part)
            call.args.clear()

    def _stop_calls(self) -> Iterator[StreamDelta]:
        if self._stopped:
            return
        self._stopped = True
        for call in sorted(self._calls.values(), key=lambda c: c.index if c.index is not None else 1 << 30):
            if call.index is not None:
                yield ToolUseStop(call.index)

    def end(self) -> Iterator[StreamDelta]:
        """After the last chunk: usage and the stop reason, or a retryable error when the stream
        was cut before it said how it finished."""
        if self._finish is None and not self.done:
            raise ProviderError(f"the {PROVIDER} stream ended before a finish_reason (connection cut)",
                                retryable=True)
        yield from self._stop_calls()
        if self._usage is not None:
            yield self._usage
        stop = FINISH.get(self._finish or "")
        if stop is None:
            stop = "tool_use" if self._started else "end_turn"
        yield StopDelta(stop)
