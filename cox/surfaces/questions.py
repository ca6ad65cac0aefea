"""How a surface shows a ``Question`` event: who asks, the prompt, and what kind of answer.

The session asks an MCP server's form one field at a time (``cox/actors/mcp/questions.py``
says why): a Question's ``schema`` holds one property (a field, or ``action`` for the review and
URL steps) and an ``x-cox`` object whose ``keep`` says an empty answer keeps the last one. This
module turns that into a :class:`Shape` the TUI modal and ``--plain`` both render:

- ``choice``: pick one of ``options`` (enum labels, yes/no for a boolean, send/edit/decline,
  open/decline); the answer is the option's value;
- ``multi``: pick any of ``options``; the answer is a list of values;
- ``text``: free text; the answer is the text.

An empty answer (``""``, or ``[]`` for multi) means keep / default / skip: the session decides.
Cancelling the whole request is ``Answer{declined: true}`` (Esc; an empty line in --plain).
Everything the asker wrote is sanitized here, like any tool output.

A question can also end without an answer: ``QuestionClosed{question_id, reason}`` (the server
withdrew it, the turn was interrupted or ended, the session closed). A surface then stops asking
it and says so in one line, :func:`closed_text`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cox.actors.mcp.questions import options_of
from cox.policy.sanitize import sanitize

__all__ = ["Shape", "closed_text", "shape"]


@dataclass
class Shape:
    source: str
    prompt: str
    kind: str = "text"  # choice | multi | text
    options: list[tuple[str, str]] = field(default_factory=list)
    keep: bool = False
    step: str = ""  # field | review | url | "" (a plain yes/no or free question)
    url: str | None = None

    @property
    def label(self) -> str:
        """The modal's title, e.g. ``mcp:github asks:``."""
        return f"{self.source} asks:"


def _options(prop: dict[str, Any]) -> list[tuple[str, str]] | None:
    """The field's choices as the session reads them, with labels made safe to draw."""
    found = options_of(prop)
    return None if found is None else [(value, sanitize(label)) for value, label in found]


def shape(event: Any) -> Shape:
    """The Shape of a ``question`` event."""
    schema = event.schema
    source = sanitize(str(getattr(event, "source", None) or "cox"))
    out = Shape(source=source, prompt=sanitize(str(event.prompt)), url=getattr(event, "url", None))
    if not isinstance(schema, dict):
        if out.url:
            out.kind, out.options, out.step = "choice", [("open", "open in the browser"), ("decline", "decline")], "url"
        else:
            out.kind, out.options = "choice", [("yes", "yes"), ("no", "no")]
        return out
    raw_extra = schema.get("x-cox")
    extra: dict[str, Any] = raw_extra if isinstance(raw_extra, dict) else {}
    out.keep = bool(extra.get("keep"))
    out.step = str(extra.get("step") or "")
    props = schema.get("properties")
    prop: Any = next(iter(props.values()), {}) if isinstance(props, dict) and props else {}
    if not isinstance(prop, dict):
        prop = {}
    options = _options(prop)
    if prop.get("type") == "array" and options:
        out.kind, out.options = "multi", options
    elif options:
        out.kind, out.options = "choice", options
    elif prop.get("type") == "boolean":
        out.kind, out.options = "choice", [("yes", "yes"), ("no", "no")]
    return out


def closed_text(source: str | None, reason: str) -> str:
    """The one line a surface shows when a question closed without an answer
    (``QuestionClosed``), e.g. ``mcp:github withdrew its question``."""
    who = sanitize(source or "cox")
    if reason == "withdrawn":
        return f"{who} withdrew its question"
    why = {"interrupted": "the turn was interrupted", "turn_ended": "the turn ended",
           "session_closed": "the session is closing"}.get(reason, sanitize(reason))
    return f"{who}'s question was closed: {why}"
