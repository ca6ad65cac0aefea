"""Submission (into a session) and Event (out of it): the one contract between cox's parts.

Every message is JSON-encoded as one object with a snake_case ``type``. ``decode_submission`` and
``decode_event`` reject unknown types and bad fields with a message a person can act on.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError, model_validator

from .types import (
    Decision,
    NoticeLevel,
    PermissionMode,
    RewindWhat,
    StopReason,
    Strict,
    ToolCall,
    ToolResult,
    Usage,
)

# ---------------------------------------------------------------- submissions


class UserTurn(Strict):
    type: Literal["user_turn"] = "user_turn"
    text: str
    images: list[dict[str, Any]] | None = None


class Approve(Strict):
    type: Literal["approve"] = "approve"
    call_id: str
    decision: Decision
    edited_input: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _edit_needs_input(self) -> Approve:
        if self.decision is Decision.EDIT and self.edited_input is None:
            raise ValueError("decision 'edit' needs edited_input (the call's new input object)")
        return self


class Interrupt(Strict):
    type: Literal["interrupt"] = "interrupt"


class Answer(Strict):
    type: Literal["answer"] = "answer"
    question_id: str
    answer: Any = None
    declined: bool = False


class Compact(Strict):
    type: Literal["compact"] = "compact"
    focus: str | None = None


class SetMode(Strict):
    """Change the permission mode (``mode``) or the preset (``preset``: architect runs main
    turns on the think tier in plan mode; editor goes back to the configured mode and the code
    tier). Exactly one of the two."""

    type: Literal["set_mode"] = "set_mode"
    mode: PermissionMode | None = None
    preset: Literal["architect", "editor"] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> SetMode:
        if (self.mode is None) == (self.preset is None):
            raise ValueError("set_mode takes exactly one of 'mode' (a permission mode) or 'preset' "
                             "(architect or editor)")
        return self


class Rewind(Strict):
    type: Literal["rewind"] = "rewind"
    to_turn: int
    what: RewindWhat = "both"


class Shutdown(Strict):
    type: Literal["shutdown"] = "shutdown"


Submission = Annotated[
    UserTurn | Approve | Interrupt | Answer | Compact | SetMode | Rewind | Shutdown,
    Field(discriminator="type"),
]

# ---------------------------------------------------------------- events


class SessionStarted(Strict):
    type: Literal["session_started"] = "session_started"
    session_id: str
    cwd: str
    model: str
    permission_mode: PermissionMode = PermissionMode.DEFAULT
    tools: list[str] = Field(default_factory=list)
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    resumed: bool = False


class TurnStarted(Strict):
    type: Literal["turn_started"] = "turn_started"
    turn: int


class UserMessage(Strict):
    """What the user said: the initial text of a turn, or a steering message seen mid-turn."""

    type: Literal["user_message"] = "user_message"
    turn: int
    text: str
    steered: bool = False


class TextDelta(Strict):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ThinkingDelta(Strict):
    type: Literal["thinking_delta"] = "thinking_delta"
    text: str


class AssistantMessage(Strict):
    """One finished model response, as content blocks (text, thinking with its signature,
    tool_use). Resume rebuilds the history from these, so thinking signatures survive."""

    type: Literal["assistant_message"] = "assistant_message"
    turn: int
    content: list[dict[str, Any]]


class ToolCallRequested(Strict):
    type: Literal["tool_call_requested"] = "tool_call_requested"
    call: ToolCall


class ApprovalRequired(Strict):
    type: Literal["approval_required"] = "approval_required"
    call: ToolCall
    reason: str = ""


class ToolCallOutput(Strict):
    type: Literal["tool_call_output"] = "tool_call_output"
    call_id: str
    chunk: str


class ToolCallDone(Strict):
    type: Literal["tool_call_done"] = "tool_call_done"
    call_id: str
    result: ToolResult
    duration_ms: float | None = None


class CheckpointEvent(Strict):
    type: Literal["checkpoint"] = "checkpoint"
    turn: int
    call_id: str
    files: list[str]


class Compacted(Strict):
    type: Literal["compacted"] = "compacted"
    summary: str
    dropped: list[str] = Field(default_factory=list)
    before_tokens: int = 0
    after_tokens: int = 0


class Question(Strict):
    """A question for the person: a form (``schema``, a flat JSON Schema object), a link to open
    (``url``), or a yes/no (neither). ``source`` says who asks (``mcp server 'x'``, ``cox``).
    The answer comes back as ``Answer{question_id}`` and goes to the asker only."""

    type: Literal["question"] = "question"
    question_id: str
    prompt: str
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    url: str | None = None
    source: str | None = None


class Notice(Strict):
    type: Literal["notice"] = "notice"
    level: NoticeLevel = "info"
    message: str


class UsageEvent(Strict):
    type: Literal["usage"] = "usage"
    usage: Usage
    session_total: Usage | None = None
    api_ms: float | None = None


class TurnDone(Strict):
    type: Literal["turn_done"] = "turn_done"
    turn: int
    stop: StopReason
    reason: str | None = None


class Rewound(Strict):
    type: Literal["rewound"] = "rewound"
    to_turn: int
    what: RewindWhat = "both"


class ErrorEvent(Strict):
    type: Literal["error"] = "error"
    message: str
    fatal: bool = False


Event = Annotated[
    SessionStarted
    | TurnStarted
    | UserMessage
    | TextDelta
    | ThinkingDelta
    | AssistantMessage
    | ToolCallRequested
    | ApprovalRequired
    | ToolCallOutput
    | ToolCallDone
    | CheckpointEvent
    | Compacted
    | Question
    | Notice
    | UsageEvent
    | TurnDone
    | Rewound
    | ErrorEvent,
    Field(discriminator="type"),
]

_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _adapter(kind: str) -> TypeAdapter[Any]:
    """The union validators are built on first decode, not at import (start-up time)."""
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(Submission if kind == "submission" else Event)
    return adapter

SUBMISSION_TYPES = sorted(
    m.model_fields["type"].default for m in (UserTurn, Approve, Interrupt, Answer, Compact, SetMode, Rewind, Shutdown)
)


class ProtocolError(ValueError):
    """A message that is not valid JSON, has an unknown ``type`` or a bad field."""


def _explain(kind: str, err: ValidationError, raw: Any) -> ProtocolError:
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        if e["type"] == "union_tag_invalid":
            tag = raw.get("type") if isinstance(raw, dict) else None
            parts.append(f"unknown {kind} type {tag!r} (expected one of: {e['ctx']['expected_tags']})")
        elif e["type"] == "union_tag_not_found":
            parts.append(f"{kind} has no 'type' field")
        else:
            parts.append(f"{loc}: {e['msg']}")
    return ProtocolError(f"bad {kind}: " + "; ".join(parts))


def _decode(kind: str, data: str | bytes | dict[str, Any]) -> Any:
    raw: Any = data
    if isinstance(data, (str, bytes)):
        try:
            raw = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"bad {kind}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(raw, dict):
        raise ProtocolError(f"bad {kind}: expected a JSON object, got {type(raw).__name__}")
    try:
        return _adapter(kind).validate_python(raw)
    except ValidationError as exc:
        raise _explain(kind, exc, raw) from None


def decode_submission(data: str | bytes | dict[str, Any]) -> Any:
    return _decode("submission", data)


def decode_event(data: str | bytes | dict[str, Any]) -> Any:
    return _decode("event", data)


def encode(message: Strict) -> str:
    """One line of JSON for a Submission or Event (no trailing newline)."""
    return message.model_dump_json(exclude_none=True, by_alias=True)


def to_dict(message: Strict) -> dict[str, Any]:
    return message.model_dump(mode="json", exclude_none=True, by_alias=True)
