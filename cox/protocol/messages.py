"""Submission (into a session) and Event (out of it): the one contract between cox's parts.

Every message is JSON-encoded as one object with a snake_case ``type``. ``decode_submission`` and
``decode_event`` reject unknown types and bad fields with a message a person can act on.
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from cox.policy.redact import scrub_data, suspect

from .record import DecodeError, Record, decode, field, json_any, record, tag_of, to_json, to_plain
from .types import (
    Decision,
    NoticeLevel,
    PermissionMode,
    QuestionCloseReason,
    RewindWhat,
    StopReason,
    ToolCall,
    ToolResult,
    Usage,
)

# ---------------------------------------------------------------- submissions


@record
class UserTurn(Record):
    type: Literal["user_turn"] = "user_turn"
    text: str
    images: list[dict[str, Any]] | None = None
    allow: list[str] | None = field(default=None, internal=True)
    """Allow rules (cox's spelling) in force for the turn this message starts, and only that turn:
    the ``allowed-tools`` of the person's own command or skill, set by the surface that expanded
    it. Internal: never read from a wire (a stdin line cannot pre-approve anything) nor written
    out. A message that arrives while a turn runs (it steers that turn) grants nothing."""
    effort: str | None = None
    """This turn's reasoning effort (``low``, ``medium``, ``high``: Anthropic's
    ``output_config.effort``, OpenAI's reasoning effort), over the session's; the web agent
    mode's per-turn ``effort``. A steering message's changes nothing."""


@record
class Approve(Record):
    type: Literal["approve"] = "approve"
    call_id: str
    decision: Decision
    edited_input: dict[str, Any] | None = None
    message: str | None = None
    """With ``deny``: the denied call's result, for the model, and the turn goes on (Claude Code's
    ``can_use_tool`` deny). Without it a deny ends the turn, the step's other calls not run."""

    def __post_init__(self) -> None:
        if self.decision is Decision.EDIT and self.edited_input is None:
            raise ValueError("decision 'edit' needs edited_input (the call's new input object)")
        if self.message is not None and self.decision is not Decision.DENY:
            raise ValueError("'message' goes with decision 'deny' only (the denied call's result for the model)")


@record
class Interrupt(Record):
    type: Literal["interrupt"] = "interrupt"


@record
class Answer(Record):
    type: Literal["answer"] = "answer"
    question_id: str
    answer: Any = None
    declined: bool = False


@record
class Compact(Record):
    type: Literal["compact"] = "compact"
    focus: str | None = None


@record
class SetMode(Record):
    """Change the permission mode (``mode``) or the preset (``preset``: architect runs main
    turns on the think tier in plan mode; editor goes back to the configured mode and the code
    tier). Exactly one of the two."""

    type: Literal["set_mode"] = "set_mode"
    mode: PermissionMode | None = None
    preset: Literal["architect", "editor"] | None = None

    def __post_init__(self) -> None:
        if (self.mode is None) == (self.preset is None):
            raise ValueError("set_mode takes exactly one of 'mode' (a permission mode) or 'preset' "
                             "(architect or editor)")


@record
class SetModel(Record):
    """Run main turns on ``model`` from the next request on (``/model NAME``): a model the
    session's provider serves; the session says in a notice what it switched to, or why not."""

    type: Literal["set_model"] = "set_model"
    model: str

    def __post_init__(self) -> None:
        if not self.model.strip() or any(c.isspace() for c in self.model):
            raise ValueError(f"set_model needs a model name without spaces, got {self.model!r}")


@record
class Rewind(Record):
    type: Literal["rewind"] = "rewind"
    to_turn: int
    what: RewindWhat = "both"
    force: bool = False
    """Restore files this session changed even where someone else changed them since."""


@record
class CloseAgent(Record):
    """Stop one of the session's subagents (a background one, by the id its ``agent`` call
    returned), as the ``agent_close`` tool does. Asked, it answers None, or why not (no such
    agent) — Claude Code's ``stop_task``; told, a failure is silent."""

    type: Literal["close_agent"] = "close_agent"
    agent_id: str


@record
class SetMcpServer(Record):
    """Switch MCP server ``server``'s tools off (``enabled`` false) or on again for this session,
    from the next request on (Claude Code's ``mcp_toggle``; the surface stops or starts the
    server itself)."""

    type: Literal["set_mcp_server"] = "set_mcp_server"
    server: str
    enabled: bool


@record
class Shutdown(Record):
    type: Literal["shutdown"] = "shutdown"


Submission = UserTurn | Approve | Interrupt | Answer | Compact | SetMode | SetModel | Rewind | CloseAgent | SetMcpServer | Shutdown

# ---------------------------------------------------------------- events


@record
class SessionStarted(Record):
    type: Literal["session_started"] = "session_started"
    session_id: str
    cwd: str
    model: str
    permission_mode: PermissionMode = PermissionMode.DEFAULT
    tools: list[str] = field(default_factory=list)
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    resumed: bool = False


@record
class TurnStarted(Record):
    type: Literal["turn_started"] = "turn_started"
    turn: int


@record
class UserMessage(Record):
    """What the user said: the initial text of a turn, or a steering message seen mid-turn."""

    type: Literal["user_message"] = "user_message"
    turn: int
    text: str
    steered: bool = False


@record
class TextDelta(Record):
    type: Literal["text_delta"] = "text_delta"
    text: str


@record
class ThinkingDelta(Record):
    type: Literal["thinking_delta"] = "thinking_delta"
    text: str


@record
class AssistantMessage(Record):
    """One finished model response, as content blocks (text, thinking with its signature,
    tool_use). Resume rebuilds the history from these, so thinking signatures survive."""

    type: Literal["assistant_message"] = "assistant_message"
    turn: int
    content: list[dict[str, Any]]


@record
class ToolCallRequested(Record):
    type: Literal["tool_call_requested"] = "tool_call_requested"
    call: ToolCall


@record
class ToolCallEdited(Record):
    """The person edited a call's input at approval (``Approve{decision: edit}``): ``call`` is
    the call as it will run (same id, new input, re-described subject and risk), so a surface
    shows what runs rather than what the model first asked for."""

    type: Literal["tool_call_edited"] = "tool_call_edited"
    call: ToolCall


@record
class ApprovalRequired(Record):
    type: Literal["approval_required"] = "approval_required"
    call: ToolCall
    reason: str = ""


@record
class ToolCallOutput(Record):
    type: Literal["tool_call_output"] = "tool_call_output"
    call_id: str
    chunk: str


@record
class ToolCallDone(Record):
    type: Literal["tool_call_done"] = "tool_call_done"
    call_id: str
    result: ToolResult
    duration_ms: float | None = None


@record
class CheckpointEvent(Record):
    type: Literal["checkpoint"] = "checkpoint"
    turn: int
    call_id: str
    files: list[str]


@record
class Compacted(Record):
    type: Literal["compacted"] = "compacted"
    summary: str
    dropped: list[str] = field(default_factory=list)
    before_tokens: int = 0
    after_tokens: int = 0


@record
class Question(Record):
    """A question for the person: a form (``schema``, a flat JSON Schema object), a link to open
    (``url``), or a yes/no (neither). ``source`` says who asks (``mcp:<server>``, ``cox``).
    The answer comes back as ``Answer{question_id}`` and goes to the asker only."""

    type: Literal["question"] = "question"
    question_id: str
    prompt: str
    schema: dict[str, Any] | None = None
    url: str | None = None
    source: str | None = None


@record
class QuestionClosed(Record):
    """An open ``Question`` ended without the surface's answer, so a surface stops asking it.
    ``reason``: ``withdrawn`` (the asker took it back: an MCP server cancelled its request, or
    the call or connection it came from ended first), ``interrupted`` (the turn was interrupted),
    ``turn_ended`` (the turn ended otherwise) or ``session_closed``. An ``Answer`` to it that
    was already on its way is ignored."""

    type: Literal["question_closed"] = "question_closed"
    question_id: str
    reason: QuestionCloseReason


@record
class Notice(Record):
    type: Literal["notice"] = "notice"
    level: NoticeLevel = "info"
    message: str


@record
class UsageEvent(Record):
    type: Literal["usage"] = "usage"
    usage: Usage
    session_total: Usage | None = None
    api_ms: float | None = None


@record
class TurnDone(Record):
    type: Literal["turn_done"] = "turn_done"
    turn: int
    stop: StopReason
    reason: str | None = None


@record
class Rewound(Record):
    type: Literal["rewound"] = "rewound"
    to_turn: int
    what: RewindWhat = "both"
    force: bool = False
    """Restore files this session changed even where someone else changed them since."""


@record
class ErrorEvent(Record):
    type: Literal["error"] = "error"
    message: str
    fatal: bool = False


@record
class AgentEvent(Record):
    """An event of a subagent (a child session), relayed by its parent: ``agent_id`` names the
    child, ``call_id`` the parent's ``agent`` call that started it (Claude Code's
    ``parent_tool_use_id``), ``event`` the child's event as it encodes. Only what a reader of the
    parent needs is relayed (messages, calls, results, turn ends, warnings, usage): the child's
    own rollout has every line. Its approvals reach the parent's surfaces as the parent's own
    ``approval_required``, labelled with the agent."""

    type: Literal["agent_event"] = "agent_event"
    agent_id: str
    call_id: str = ""
    event: dict[str, Any] = field(default_factory=dict)


Event = (
    SessionStarted
    | TurnStarted
    | UserMessage
    | TextDelta
    | ThinkingDelta
    | AssistantMessage
    | ToolCallRequested
    | ToolCallEdited
    | ApprovalRequired
    | ToolCallOutput
    | ToolCallDone
    | CheckpointEvent
    | Compacted
    | Question
    | QuestionClosed
    | Notice
    | UsageEvent
    | TurnDone
    | Rewound
    | ErrorEvent
    | AgentEvent
)

_KINDS: dict[str, dict[str, type[Record]]] = {
    "submission": {tag_of(cls) or "": cls for cls in get_args(Submission)},
    "event": {tag_of(cls) or "": cls for cls in get_args(Event)},
}

SUBMISSION_TYPES = sorted(_KINDS["submission"])


class ProtocolError(ValueError):
    """A message that is not valid JSON, has an unknown ``type`` or a bad field."""


def _decode(kind: str, data: str | bytes | dict[str, Any]) -> Any:
    raw: Any = data
    if isinstance(data, (str, bytes)):
        try:
            raw = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"bad {kind}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(raw, dict):
        raise ProtocolError(f"bad {kind}: expected a JSON object, got {type(raw).__name__}")
    if "type" not in raw:
        raise ProtocolError(f"bad {kind}: {kind} has no 'type' field")
    classes = _KINDS[kind]
    tag = raw["type"]
    cls = classes.get(tag) if isinstance(tag, str) else None
    if cls is None:
        expected = ", ".join(repr(t) for t in classes)
        raise ProtocolError(f"bad {kind}: unknown {kind} type {tag!r} (expected one of: {expected})")
    try:
        return decode(cls, raw, (tag,))
    except DecodeError as exc:
        raise ProtocolError(f"bad {kind}: {exc}") from None


def decode_submission(data: str | bytes | dict[str, Any]) -> Any:
    return _decode("submission", data)


def decode_event(data: str | bytes | dict[str, Any]) -> Any:
    return _decode("event", data)


def encode(message: Record) -> str:
    """One line of JSON for a Submission or Event (no trailing newline)."""
    return to_json(message)


def encode_scrubbed(message: Record) -> tuple[str, bool]:
    """:func:`encode` with every string value scrubbed of secret shapes first (``policy.redact``),
    and whether anything was. Values, not the encoded line: a line-level scrub misses a secret
    right after an escaped newline and lets an unterminated PEM block eat the closing quotes.
    The common case costs :func:`encode` plus a few substring checks on the line."""
    line = to_json(message)
    if not suspect(line):
        return line, False
    data, changed = scrub_data(to_plain(message, exclude_none=True))
    return (json_any(data), True) if changed else (line, False)


def to_dict(message: Record) -> dict[str, Any]:
    return to_plain(message, exclude_none=True)
