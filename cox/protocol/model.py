"""Provider-neutral model requests and stream deltas.

The session builds one ``ModelRequest``; each provider adapter translates it to its wire format
and translates the stream back into ``StreamDelta`` objects, so the session never sees a wire
format. History is a list of messages shaped ``{"role": "user"|"assistant", "content": [block]}``
with blocks ``text``, ``thinking`` (with ``signature``), ``tool_use`` and ``tool_result``.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal

from cox.slim import dataclass

Tier = Literal["cheap", "code", "think"]


@dataclass(slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and JSON Schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(slots=True)
class ModelRequest:
    """One request, provider-neutral.

    ``system``: [tool schemas as canonical JSON (adapters send ``tools`` natively and skip this
    text), the versioned system prompt, instruction files, the volatile block]. ``breakpoints``:
    (message index, block index) positions that end a stable stretch of history — the end of the
    last turn; adapters that cache explicitly (Anthropic) mark them, plus the end of ``system[2]``
    and the last block of the last message. ``session_id`` lets OpenAI route to a warm cache
    (``prompt_cache_key``). ``thinking_budget``: tokens for extended thinking / reasoning effort
    on the think tier (0 = the model's default). ``effort`` (``low``/``medium``/``high``) and
    ``thinking_display`` (``summarized``/``omitted``: adaptive thinking, shown so) are this
    request's own, over the adapter's settings (the web chat sets them per message; "" = the
    adapter's)."""

    model: str
    system: list[str]
    tools: list[ToolSpec]
    messages: list[dict[str, Any]]
    tier: Tier = "code"
    max_output_tokens: int = 8192
    breakpoints: list[tuple[int, int]] = field(default_factory=list)
    session_id: str = ""
    thinking_budget: int = 0
    effort: str = ""
    thinking_display: str = ""


@dataclass(slots=True)
class TextPart:
    """Answer text as it streams."""

    text: str
    kind: Literal["text"] = "text"


@dataclass(slots=True)
class ThinkingPart:
    """Reasoning text as it streams. ``signature`` (Anthropic) or ``extra`` (e.g. an OpenAI
    reasoning item's ``id`` and ``encrypted_content``, an Anthropic ``redacted_thinking`` payload)
    must be echoed back exactly on the next request, so the assembler keeps them in the block."""

    text: str
    signature: str | None = None
    kind: Literal["thinking"] = "thinking"
    extra: dict[str, Any] | None = None


@dataclass(slots=True)
class ToolUseStart:
    """The model starts tool call ``index`` (its id and tool name)."""

    index: int
    id: str
    name: str
    kind: Literal["tool_use_start"] = "tool_use_start"


@dataclass(slots=True)
class ToolUseInputDelta:
    """A piece of tool call ``index``'s input, as JSON text to concatenate."""

    index: int
    partial_json: str
    kind: Literal["tool_use_input"] = "tool_use_input"


@dataclass(slots=True)
class ToolUseStop:
    """Tool call ``index``'s input is complete."""

    index: int
    kind: Literal["tool_use_stop"] = "tool_use_stop"


@dataclass(slots=True)
class UsageDelta:
    """Token counts the stream reports."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    kind: Literal["usage"] = "usage"


ModelStop = Literal["end_turn", "tool_use", "max_tokens", "pause_turn", "refusal", "stop_sequence"]


@dataclass(slots=True)
class StopDelta:
    """Why the model stopped."""

    reason: ModelStop
    kind: Literal["stop"] = "stop"


StreamDelta = TextPart | ThinkingPart | ToolUseStart | ToolUseInputDelta | ToolUseStop | UsageDelta | StopDelta


class ProviderError(Exception):
    """A model request failed. ``retryable`` errors (429, 5xx, overloaded, reset) may be retried;
    ``retry_after`` is the server's hint in seconds."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None,
                 status: int | None = None, context_overflow: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.context_overflow = context_overflow


@dataclass(slots=True)
class Assembled:
    """A finished response, assembled from the deltas (what enters history)."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop: ModelStop = "end_turn"
    usage: UsageDelta = field(default_factory=UsageDelta)
