"""What a request to ``cox serve`` must look like, checked before any session or model call.

A malformed request is HTTP 422 with ``{"error": sentence}``: an unknown field, model, effort,
thinking display, mode or answer; a history that does not start and end with a user message;
empty content or an empty prompt; a body over 8 MB or not a JSON object. The sentence names the
field and the values it accepts, so the page (or a script) can say what to change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cox.protocol.types import Decision

MAX_BODY = 8 * 1024 * 1024
EFFORTS = ("low", "medium", "high")
THINKING_BUDGET = {"low": 2048, "medium": 8192, "high": 24000}
"""Tokens of extended thinking per effort level (a provider without thinking ignores them)."""
THINKING_DISPLAYS = ("summarized", "omitted")
MODES = {"default": "default", "accept-edits": "acceptEdits"}
"""The page's session modes and the permission mode each one is."""
ANSWERS = {"yes": Decision.ALLOW, "no": Decision.DENY, "always": Decision.ALLOW_FOR_SESSION}
"""An approval's answers: ``always`` is the session grant, as the TUI's "allow for session"."""


class Invalid(Exception):
    """A request the server will not run; ``str()`` is the sentence for the 422."""


@dataclass
class Offer:
    """The models this server can run (the configured one first) and their default effort."""

    models: list[str]
    provider: str

    def default_effort(self, model: str) -> str:
        """The design's rule: medium on the Opus and Haiku families, high otherwise."""
        return "medium" if any(k in model for k in ("opus", "haiku")) else "high"

    def config(self) -> dict[str, Any]:
        return {"models": self.models, "default_model": self.models[0], "efforts": list(EFFORTS),
                "default_effort": {m: self.default_effort(m) for m in self.models},
                "thinking_displays": list(THINKING_DISPLAYS), "modes": list(MODES), "provider": self.provider}


def parse_body(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_BODY:
        raise Invalid(f"the request body is over {MAX_BODY // (1024 * 1024)} MB; send less")
    try:
        data = json.loads(raw) if raw.strip() else {}
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Invalid(f"the request body is not JSON ({exc}); send one JSON object") from None
    if not isinstance(data, dict):
        raise Invalid(f"the request body must be a JSON object, not {type(data).__name__}")
    return data


def _known(data: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise Invalid(f"unknown field {unknown[0]!r} (known: {', '.join(allowed)})")


def _choice(data: dict[str, Any], key: str, choices: tuple[str, ...] | list[str], default: str) -> str:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, str) or value not in choices:
        raise Invalid(f"{key} {value!r} is not one of: {', '.join(choices)}")
    return value


@dataclass
class Settings:
    """The model settings of a session or a chat request."""

    model: str
    effort: str
    thinking_display: str
    mode: str = "default"
    messages: list[dict[str, Any]] = field(default_factory=list)


def _settings(data: dict[str, Any], offer: Offer) -> Settings:
    model = _choice(data, "model", offer.models, offer.models[0])
    effort = _choice(data, "effort", EFFORTS, offer.default_effort(model))
    shown = _choice(data, "thinking_display", THINKING_DISPLAYS, "summarized")
    return Settings(model, effort, shown)


def session_request(data: dict[str, Any], offer: Offer) -> Settings:
    """``POST /api/agent/sessions``: {model, effort, thinking_display, mode}, all optional."""
    _known(data, ("model", "effort", "thinking_display", "mode"))
    s = _settings(data, offer)
    s.mode = MODES[_choice(data, "mode", tuple(MODES), "default")]
    return s


def turn_request(data: dict[str, Any]) -> tuple[str, str | None]:
    """``POST …/turns``: {prompt, effort}: the prompt, and the effort asked (None: the session's)."""
    _known(data, ("prompt", "effort"))
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise Invalid("prompt must be a non-empty string (what to ask)")
    effort = data.get("effort")
    if effort is not None:
        effort = _choice(data, "effort", EFFORTS, "")
    return prompt, effort


def approval_answer(data: dict[str, Any]) -> Decision:
    """``POST …/approvals/{id}``: {answer: yes | no | always}."""
    _known(data, ("answer",))
    answer = data.get("answer")
    if not isinstance(answer, str) or answer not in ANSWERS:
        raise Invalid(f"answer {answer!r} is not one of: yes, no, always")
    return ANSWERS[answer]


def _empty(content: Any) -> bool:
    if isinstance(content, str):
        return not content.strip()
    if not isinstance(content, list) or not content:
        return True
    for block in content:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise Invalid("each content block must be an object with a string 'type'")
    return all(b["type"] == "text" and not str(b.get("text") or "").strip() for b in content)


def chat_request(data: dict[str, Any], offer: Offer) -> Settings:
    """``POST /api/chat``: {model, effort, thinking_display, messages}; the history must start
    and end with a user message, and no message may be empty."""
    _known(data, ("model", "effort", "thinking_display", "messages"))
    s = _settings(data, offer)
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Invalid("messages must be a non-empty list of {role, content} objects")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or set(msg) - {"role", "content"}:
            raise Invalid(f"message {i} must be an object with only 'role' and 'content'")
        if msg.get("role") not in ("user", "assistant"):
            raise Invalid(f"message {i} has role {msg.get('role')!r}; use 'user' or 'assistant'")
        if _empty(msg.get("content")):
            raise Invalid(f"message {i} has empty content; write something, or leave the message out")
    if messages[0]["role"] != "user" or messages[-1]["role"] != "user":
        raise Invalid("the history must start and end with a user message")
    s.messages = messages
    return s
