"""The Anthropic Messages adapter: a ``ModelRequest`` becomes one streaming ``POST /v1/messages``,
and the server-sent events come back as provider-neutral deltas.

Why not the ``anthropic`` SDK: importing it costs ~1.1 s and cox's first request must leave
≤ 150 ms after launch, so the adapter speaks the wire format over httpx (``transport.post_sse``,
imported on the first request). What the SDK does that matters is reproduced here and checked
against the SDK in ``tests/provider/test_anthropic*.py``: the same auth and version headers, the
same assembly of the stream (text, thinking with its signature, tool input JSON, stop reason,
usage), and the same error classes. Neither the SDK nor httpx is imported at module level.

Request layout (the cache-stable prefix of ``cox.actors.session.request``): ``tools`` natively
from ``request.tools`` (``system[0]`` is only their canonical text for providers that need it),
then ``system[1]`` (prompt), ``system[2]`` (instruction files), ``system[3]`` (volatile) as text
blocks, then the history. ``cache_control`` goes at exactly three places — the end of the stable
system (which covers the tools before it), the end of the last turn (``request.breakpoints[0]``)
and the last block of the last message — so a request reads the previous one's prefix from the
cache and writes its own for the next. Thinking blocks cannot carry a breakpoint, and empty text
blocks are never sent, so a mark that would land on one moves to the nearest block before it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from cox import __version__
from cox.actors.provider.transport import OVERFLOW_MARKERS, post_sse
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
    ToolUseInputDelta,
    ToolUseStart,
    ToolUseStop,
    UsageDelta,
)

PROVIDER = "Anthropic"
KEY_VAR = "ANTHROPIC_API_KEY"
TOKEN_VAR = "ANTHROPIC_AUTH_TOKEN"
DEFAULT_BASE_URL = "https://api.anthropic.com"
# What anthropic 2.14 sends (``anthropic._constants.ANTHROPIC_API_VERSION``); a test keeps the two
# equal, so an SDK upgrade that moves the version shows up as a failing test, not a silent drift.
API_VERSION = "2026-10-21"
USER_AGENT = f"cox/{__version__} (anthropic-messages; Python {sys.version_info[0]}.{sys.version_info[1]})"
MISSING_KEY = "no Anthropic key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
MIN_THINKING_BUDGET = 1024  # the API's floor for ``budget_tokens``
STOP_REASONS: frozenset[str] = frozenset(
    {"end_turn", "tool_use", "max_tokens", "pause_turn", "refusal", "stop_sequence"})
# Stop reasons the neutral set has no name for, mapped to the one the session must act on.
STOP_ALIASES: dict[str, ModelStop] = {"model_context_window_exceeded": "max_tokens"}
# ``error`` event types (mid-stream) and the HTTP status the same failure has as a response, so
# they are classified exactly like ``transport.http_error`` classifies a failed response.
ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
    "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
    "rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529,
}
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})
TASK_BUDGET_BETA = "task-budgets-2026-03-13"
"""The beta ``output_config.task_budget`` needs."""


class AnthropicProvider:
    """A ``Provider`` for the Anthropic Messages API (and gateways that speak it).

    ``max_output_tokens`` caps the request's ``max_output_tokens`` (the model's own limit, from
    the catalog); ``thinking=True`` turns thinking on even when the request has no budget (the
    model then decides how much to think: ``{"type": "adaptive"}``); ``waits`` bounds how long a
    request may wait (``waits``; the defaults when None)."""

    name = "anthropic"

    def __init__(self, model: str, *, api_key: str | None, auth_token: str | None = None,
                 base_url: str = DEFAULT_BASE_URL, max_output_tokens: int | None = None,
                 thinking: bool = False, waits: ProviderConfig | None = None) -> None:
        self.model = model
        self.waits = waits or DEFAULT_WAITS
        self.api_key = api_key or None
        self.auth_token = auth_token or None
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.max_output_tokens = max_output_tokens
        self.thinking = thinking
        # Claude Code's request flags (``cox.surfaces.compat_flags.apply_request_flags``), for the
        # main loop's requests (not the cheap tier's summaries): a default thinking budget, thinking
        # off whatever the request asks, how thinking is shown, ``output_config``'s effort and task
        # budget, and beta headers.
        self.thinking_budget = 0
        self.thinking_off = False
        self.thinking_display: str | None = None
        self.effort: str | None = None
        self.task_budget: int | None = None
        self.betas: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        """The headers anthropic 2.14 sends, minus its own telemetry (``X-Stainless-*``) and with
        a user agent that names cox. That SDK sends a key and a token alike as
        ``Authorization: Bearer`` (the key wins when both are set); ``accept`` asks for the
        event stream because that is what a ``stream: true`` request answers with."""
        credential = self.api_key or self.auth_token
        if credential is None:
            raise ProviderError(MISSING_KEY)
        headers = {
            "authorization": f"Bearer {credential}",
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream",
            "user-agent": USER_AGENT,
        }
        betas = [*self.betas, *([TASK_BUDGET_BETA] if self.task_budget else [])]
        if betas:
            headers["anthropic-beta"] = ",".join(dict.fromkeys(betas))
        return headers

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request`` (public so tests and the bench can inspect the bytes)."""
        max_tokens = request.max_output_tokens
        if self.max_output_tokens:
            max_tokens = min(max_tokens, self.max_output_tokens)
        body: dict[str, Any] = {"model": request.model or self.model, "max_tokens": max_tokens}
        main = request.tier != "cheap"
        budget = request.thinking_budget or (self.thinking_budget if main else 0)
        display = request.thinking_display or self.thinking_display
        thinking, max_tokens = thinking_config(budget, (self.thinking or bool(request.thinking_display)) and main,
                                               max_tokens)
        if self.thinking_off and not request.thinking_display:
            thinking = None
        elif thinking is not None and display:
            thinking["display"] = display
        body["max_tokens"] = max_tokens
        tools = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                 for t in request.tools]
        system, stable_marked = system_blocks(request.system)
        if not stable_marked and tools:  # no stable system text: the tools end the stable prefix
            tools[-1]["cache_control"] = dict(EPHEMERAL)
        # In the order the API reads the cached prefix: tools, system, messages.
        if tools:
            body["tools"] = tools
        if system:
            body["system"] = system
        body["messages"] = messages_body(request.messages, request.breakpoints)
        if thinking is not None:
            # No temperature/top_k is ever sent: with thinking the API accepts only the defaults.
            body["thinking"] = thinking
        output = {k: v for k, v in (("effort", request.effort or self.effort), ("task_budget", self.task_budget and {
            "type": "tokens", "total": self.task_budget})) if v} if main else {}
        if output:
            body["output_config"] = output
        body["stream"] = True
        return body

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[StreamDelta]:
        """POST the request and yield its deltas; raises ``ProviderError`` (see the module doc)."""
        headers = self.headers()  # a missing key fails here, before any request
        body = self.build_body(request)
        key_var = KEY_VAR if self.api_key else TOKEN_VAR  # a 401 names the variable that was used
        events = post_sse(self.url, headers, body, cancel, provider=PROVIDER, key_var=key_var,
                          idle_s=self.waits.stream_idle_timeout_s)
        yield from decode_events(events, cancel)


# -- request -------------------------------------------------------------------------------------


def thinking_config(budget: int, enabled: bool, max_tokens: int) -> tuple[dict[str, Any] | None, int]:
    """The ``thinking`` field and the ``max_tokens`` that goes with it.

    A budget asks for manual extended thinking, which the API accepts only with
    1024 ≤ ``budget_tokens`` < ``max_tokens``: the budget is clamped to leave room for the answer,
    and ``max_tokens`` grows only when it is too small to hold the minimum budget plus an answer.
    ``enabled`` with no budget lets the model decide (adaptive)."""
    if budget > 0:
        budget = max(MIN_THINKING_BUDGET, budget)
        if budget >= max_tokens:
            budget = max(MIN_THINKING_BUDGET, max_tokens - MIN_THINKING_BUDGET)
        if budget >= max_tokens:
            max_tokens = budget + MIN_THINKING_BUDGET
        return {"type": "enabled", "budget_tokens": budget}, max_tokens
    if enabled:
        return {"type": "adaptive"}, max_tokens
    return None, max_tokens


def system_blocks(system: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """``system[1:]`` as text blocks (``system[0]`` is the tools' text; they go natively), the
    last non-empty stable block (``system[1]``/``system[2]``) carrying the first breakpoint.
    Returns the blocks and whether that breakpoint found a block."""
    blocks: list[dict[str, Any]] = []
    stable_end = -1
    for i, text in enumerate(system[1:], start=1):
        if not text:
            continue  # the API rejects empty text blocks
        blocks.append({"type": "text", "text": text})
        if i <= 2:
            stable_end = len(blocks) - 1
    if stable_end >= 0:
        blocks[stable_end]["cache_control"] = dict(EPHEMERAL)
    return blocks, stable_end >= 0


def messages_body(messages: list[dict[str, Any]], breakpoints: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """The history in the wire format, with the two message breakpoints.

    Blocks the API would reject are dropped (empty text, thinking with no signature — e.g. from
    another provider or a cut stream — and unknown types); a message left empty is dropped and
    neighbours of one role merged. Each wire block remembers the history position it came from,
    so ``breakpoints[0]`` still lands on the last cacheable block at or before it."""
    out: list[dict[str, Any]] = []
    origins: list[list[tuple[int, int]]] = []  # per wire message, per block: (message, block) in history
    for mi, msg in enumerate(messages):
        role = "assistant" if msg.get("role") == "assistant" else "user"
        content = msg.get("content")
        raw = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        blocks: list[dict[str, Any]] = []
        where: list[tuple[int, int]] = []
        for bi, block in enumerate(raw):
            wire = wire_block(block) if isinstance(block, dict) else None
            if wire is not None:
                blocks.append(wire)
                where.append((mi, bi))
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
            origins[-1].extend(where)
        else:
            out.append({"role": role, "content": blocks})
            origins.append(where)
    targets: list[tuple[int, int]] = []
    if breakpoints:
        spot = _cacheable_at_or_before(out, origins, breakpoints[0])
        if spot is not None:
            targets.append(spot)
    last = _cacheable_at_or_before(out, origins, None)
    if last is not None and last not in targets:
        targets.append(last)
    for m, b in targets:
        out[m]["content"][b]["cache_control"] = dict(EPHEMERAL)
    return out


def _cacheable_at_or_before(out: list[dict[str, Any]], origins: list[list[tuple[int, int]]],
                            limit: tuple[int, int] | None) -> tuple[int, int] | None:
    """The last wire block that may carry ``cache_control`` and came from at or before ``limit``
    (anywhere when ``limit`` is None)."""
    for m in range(len(out) - 1, -1, -1):
        for b in range(len(out[m]["content"]) - 1, -1, -1):
            if limit is not None and origins[m][b] > limit:
                continue
            if out[m]["content"][b]["type"] not in _UNCACHEABLE:
                return m, b
    return None


def wire_block(block: dict[str, Any]) -> dict[str, Any] | None:
    """One history block in the Messages format, or None when it must not be sent. Only the
    fields the API defines are copied: cox's private keys (``_archive``, ``input_error`` …)
    never leave the process."""
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return {"type": "text", "text": text} if isinstance(text, str) and text else None
    if kind == "thinking":
        if block.get("redacted"):
            return {"type": "redacted_thinking", "data": block["redacted"]}
        signature = block.get("signature")
        if not signature:
            return None  # unsigned thinking cannot be echoed (the API checks the signature)
        return {"type": "thinking", "thinking": block.get("thinking") or "", "signature": signature}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block["data"]} if block.get("data") else None
    if kind == "tool_use":
        value = block.get("input")
        return {"type": "tool_use", "id": block["id"], "name": block["name"],
                "input": value if isinstance(value, dict) else {}}
    if kind == "tool_result":
        return tool_result_block(block)
    if kind == "image":
        return image_block(block)
    return None


def tool_result_block(block: dict[str, Any]) -> dict[str, Any]:
    """A tool result: its text, and its images as image blocks inside it. The API refuses an
    error result with no content, so an empty one says so."""
    content = block.get("content")
    if isinstance(content, list):
        text = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    else:
        text = "" if content is None else str(content)
    is_error = bool(block.get("is_error"))
    images = [img for img in (image_block(i) for i in block.get("images") or [] if isinstance(i, dict)) if img]
    wire: dict[str, Any] = {"type": "tool_result", "tool_use_id": block["tool_use_id"]}
    if images:
        wire["content"] = ([{"type": "text", "text": text}] if text else []) + images
    elif text or is_error:
        wire["content"] = text or "(the tool failed without a message)"
    wire["is_error"] = is_error
    return wire


def image_block(image: dict[str, Any]) -> dict[str, Any] | None:
    """``{"media_type", "data"}`` (what the tools produce) or an already wire-shaped ``source``."""
    source = image.get("source")
    if isinstance(source, dict) and source.get("type") in ("base64", "url"):
        return {"type": "image", "source": dict(source)}
    if isinstance(image.get("url"), str):
        return {"type": "image", "source": {"type": "url", "url": image["url"]}}
    if image.get("data") and image.get("media_type"):
        return {"type": "image", "source": {"type": "base64", "media_type": image["media_type"],
                                            "data": image["data"]}}
    return None


# -- stream --------------------------------------------------------------------------------------


def decode_events(events: Iterable[tuple[str, str]], cancel: CancelToken | None = None) -> Iterator[StreamDelta]:
    """Messages stream events → neutral deltas.

    The usage (input, output, cache read, cache write) and the stop reason are yielded once, at
    the end. The message is complete at ``message_stop`` — or at the end of the stream once
    ``message_delta`` has given the stop reason and final usage: ``message_stop`` carries
    nothing more, and the SDK assembles such a stream too. A stream that ends before that was
    cut: a retryable error. A tool_use block that never got its ``content_block_stop`` (cut by
    ``max_tokens``) gets no ``ToolUseStop``, so the assembler keeps its partial JSON as
    ``input_error`` and the session does not run it."""
    kinds: dict[int, str] = {}
    fed: set[int] = set()  # tool blocks whose input came as input_json_delta
    initial: dict[int, Any] = {}  # a tool block's input as content_block_start gave it
    usage = [0, 0, 0, 0]  # input, output, cache read, cache write
    stop: str | None = None
    started = finished = False
    loads = json.loads
    for name, data in events:
        if finished:
            continue  # read to the end so the connection goes back to the pool
        if name == "ping":
            continue
        try:
            event = loads(data)
        except ValueError:
            raise ProviderError(f"{PROVIDER} sent an unreadable {name or 'message'} event: {data[:200]!r}") from None
        if not isinstance(event, dict):
            continue
        kind = event.get("type") or name
        if kind == "content_block_delta":
            index = event.get("index", 0)
            delta = event.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                if delta.get("text"):
                    yield TextPart(delta["text"])
            elif dtype == "input_json_delta":
                if kinds.get(index) == "tool_use":
                    fed.add(index)
                    if delta.get("partial_json"):
                        yield ToolUseInputDelta(index, delta["partial_json"])
            elif dtype == "thinking_delta":
                if delta.get("thinking"):
                    yield ThinkingPart(delta["thinking"])
            elif dtype == "signature_delta":
                yield ThinkingPart("", signature=str(delta.get("signature") or ""))
            # citations_delta and unknown deltas carry nothing the session keeps
        elif kind == "content_block_start":
            index = event.get("index", 0)
            block = event.get("content_block") or {}
            btype = str(block.get("type"))
            kinds[index] = btype
            if btype == "text":
                if block.get("text"):
                    yield TextPart(block["text"])
            elif btype == "thinking":
                if block.get("thinking"):
                    yield ThinkingPart(block["thinking"])
                if block.get("signature"):
                    yield ThinkingPart("", signature=block["signature"])
            elif btype == "redacted_thinking":
                # A signature ("" , never None) keeps the assembler from merging a following
                # thinking block's text into this one.
                yield ThinkingPart("", signature="", extra={"redacted": block.get("data", "")})
            elif btype == "tool_use":
                if block.get("input"):
                    initial[index] = block["input"]
                yield ToolUseStart(index, str(block.get("id", "")), str(block.get("name", "")))
        elif kind == "content_block_stop":
            index = event.get("index", 0)
            if kinds.get(index) == "tool_use":
                if index not in fed and index in initial:  # the SDK keeps the start's input then
                    yield ToolUseInputDelta(index, json.dumps(initial[index]))
                yield ToolUseStop(index)
        elif kind == "message_start":
            started = True
            _take_usage(usage, (event.get("message") or {}).get("usage"))
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            if delta.get("stop_reason") is not None:
                stop = str(delta["stop_reason"])
            _take_usage(usage, event.get("usage"))
        elif kind == "message_stop":
            finished = True
            yield from _finish(usage, stop)
        elif kind == "error":
            raise stream_error(event)
    if finished:
        return
    if cancel is not None and cancel.cancelled:
        return  # the turn was interrupted: not a failure
    if stop is not None:
        yield from _finish(usage, stop)
        return
    where = "before the message started" if not started else "before the message ended"
    raise ProviderError(f"the stream was cut: {PROVIDER} closed it {where}", retryable=True)


def _take_usage(usage: list[int], data: Any) -> None:
    """Usage counts are cumulative totals: a later event overwrites, and a field it omits keeps
    the earlier value (as the SDK does)."""
    if not isinstance(data, dict):
        return
    for slot, key in enumerate(("input_tokens", "output_tokens", "cache_read_input_tokens",
                                "cache_creation_input_tokens")):
        value = data.get(key)
        if isinstance(value, int):
            usage[slot] = value


def _finish(usage: list[int], stop: str | None) -> Iterator[StreamDelta]:
    yield UsageDelta(input_tokens=usage[0], output_tokens=usage[1], cache_read_tokens=usage[2],
                     cache_write_tokens=usage[3])
    yield StopDelta(stop_reason(stop))


def stop_reason(raw: str | None) -> ModelStop:
    """The neutral stop reason; an unknown or missing one ends the turn."""
    if raw in STOP_REASONS:
        return raw  # type: ignore[return-value]  # checked against the Literal's values
    return STOP_ALIASES.get(raw or "", "end_turn")


def stream_error(event: dict[str, Any]) -> ProviderError:
    """An ``error`` event in a 200 stream, classified like the same error as a response
    (``overloaded_error`` is a retryable 529, ``api_error`` a retryable 500 …)."""
    inner = event.get("error")
    err: dict[str, Any] = inner if isinstance(inner, dict) else event
    etype = str(err.get("type") or "api_error")
    message = str(err.get("message") or etype)
    status = ERROR_STATUS.get(etype, 500)
    retryable = status in (408, 409, 429) or status >= 500
    overflow = status in (400, 413) and any(m in message.lower() for m in OVERFLOW_MARKERS)
    return ProviderError(f"{PROVIDER} stream failed: {etype}: {message}", retryable=retryable, status=status,
                         context_overflow=overflow)
