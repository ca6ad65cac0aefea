"""The vocabulary every part of cox shares: risks, decisions, modes, tool calls and results.

These are records (slotted dataclasses, see ``record.py``): decoding rejects unknown fields and
wrong types with a message that names the field, so a malformed message from a script or an
editor is refused instead of being half-understood.
"""

from __future__ import annotations

import os
import time
from enum import StrEnum
from typing import Any, Literal

from .record import Record, field, record

_ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_ulid() -> str:
    """A ULID (time-sortable id): 48 bits of milliseconds then 80 random bits, Crockford base32."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    out = []
    for _ in range(26):
        out.append(_ULID_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


class Risk(StrEnum):
    """How much a tool call can change: decides the default of the permission engine."""

    READ_ONLY = "read_only"
    WRITE = "write"
    EXEC = "exec"
    DESTRUCTIVE = "destructive"


class Decision(StrEnum):
    """A person's (or script's) answer to an approval request."""

    ALLOW = "allow"
    ALLOW_FOR_SESSION = "allow_for_session"
    DENY = "deny"
    EDIT = "edit"


class PermissionMode(StrEnum):
    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    BYPASS = "bypassPermissions"
    DONT_ASK = "dontAsk"
    """Claude Code's: a call that would ask is denied instead (as the approval policy ``never``)."""


class ApprovalPolicy(StrEnum):
    """What happens to a call the engine would ask about: ``never`` denies it (headless default)."""

    NEVER = "never"
    ON_REQUEST = "on-request"


class SandboxMode(StrEnum):
    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    DANGER_FULL_ACCESS = "danger-full-access"


class StopReason(StrEnum):
    END_TURN = "end_turn"
    INTERRUPTED = "interrupted"
    DENIED = "denied"
    BUDGET = "budget"
    ERROR = "error"
    MAX_TURNS = "max_turns"
    MAX_TOKENS = "max_tokens"
    """The reply was cut at the output token limit with no tool call: the answer may be incomplete."""


class ToolStatus(StrEnum):
    OK = "ok"
    ERROR = "error"
    DENIED = "denied"
    ABORTED = "aborted"


@record
class ToolCall(Record):
    """One call the model asked for, with what the permission engine needs to judge it.

    ``subject`` is the confined path, the command line, the URL or ``mcp__server__tool``;
    ``segments`` is filled by bash only: the simple commands of the line (see ``policy.bash``).
    """

    id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    risk: Risk = Risk.EXEC
    subject: str = ""
    segments: list[str] | None = None
    opaque: bool = False


@record
class ToolResult(Record):
    """What a tool call produced. ``visible`` is what the model reads (capped); the full output
    lives in the archive under ``archive_id`` when it was too big to show whole."""

    status: ToolStatus = ToolStatus.OK
    visible: str = ""
    archive_id: str | None = None
    total_bytes: int | None = None
    exit_code: int | None = None
    images: list[dict[str, Any]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is ToolStatus.OK

    @classmethod
    def error(cls, message: str, **meta: Any) -> ToolResult:
        return cls(status=ToolStatus.ERROR, visible=message, meta=meta)

    @classmethod
    def denied(cls, reason: str) -> ToolResult:
        return cls(status=ToolStatus.DENIED, visible=reason)

    @classmethod
    def aborted(cls, why: str = "aborted: the turn was interrupted before this call finished") -> ToolResult:
        return cls(status=ToolStatus.ABORTED, visible=why)


@record
class Usage(Record):
    """Tokens and cost of one model request (or a sum of them)."""

    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            model=self.model or other.model,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )


NoticeLevel = Literal["info", "warning", "security", "error"]
RewindWhat = Literal["code", "conversation", "both"]
QuestionCloseReason = Literal["withdrawn", "interrupted", "turn_ended", "session_closed"]
"""Why an open question ended without the person's answer (``QuestionClosed.reason``)."""
