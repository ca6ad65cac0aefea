"""Questions the session asks the person for an MCP server (elicitation), one step at a time.

An MCP server may ask for input during a tool call (``elicitation/create``): a form (a flat JSON
Schema of primitive fields) or a URL to open. The McpServer actor hands the request to the
session that made the call; the session turns it into a *dialogue* (below) and every step of the
dialogue is one ``Question`` event. The surface answers each with ``Answer{question_id}``; the
final outcome (accept with content, decline, cancel) goes back to the waiting server request and
nowhere else: answers never enter the history, the rollout or the model's context.

Why one Question per field, driven here, and not one form Question that each surface walks
field by field:

- The questions are events and land in the rollout; the answers do not. A re-ask ("must be at
  most 100; try again"), the review step ("send name, email to mcp:x?") and an edit round are
  then visible steps of the record, and none of them needs to repeat what was typed — which a
  single form Question answered with a whole dict could not show without storing the values.
- Validation (types, ranges, formats, choices), defaults, the review step and "Enter keeps the
  last answer" are written once, here, as a pure state machine with unit tests, instead of once
  per surface (TUI, --plain, and whatever speaks the protocol next: a web page, stream-json).
- A surface stays small: it renders one prompt with one field (choices, yes/no or free text),
  sends what the person typed, and knows only two more things: Esc (or an empty line in
  --plain) is ``Answer{declined: true}`` and cancels the whole request; an empty answer (Enter
  on an empty field) means "keep / default / skip" and the dialogue decides which.

A question that ends without the surface's answer — the server withdrew its request (or the call
or connection it came from ended first), the turn was interrupted or ended, the session closed —
is closed with a ``QuestionClosed{question_id, reason}`` event, so every surface stops asking it
(the TUI drops its modal, ``--plain`` its prompt); an ``Answer`` to it that was already on its
way is ignored.

The Question's ``schema`` is a flat JSON Schema object with exactly one property (the field
being asked, as the server wrote it, or ``action`` for the review and URL steps) plus an
``x-cox`` object: ``{"step": "field" | "review" | "url", "keep": bool, "index": i, "count": n}``.
``keep`` says an empty answer keeps the last one (edit rounds).
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

__all__ = ["Ask", "Dialogue", "Done", "FormDialogue", "UrlDialogue", "UrlRefused", "check_url", "dialogue_for"]

SEND, EDIT, DECLINE, OPEN = "send", "edit", "decline", "open"


@dataclass
class Ask:
    """One question to put to the person (one ``Question`` event)."""

    prompt: str
    schema: dict[str, Any]
    url: str | None = None


@dataclass
class Done:
    """The dialogue's outcome, for the server: ``accept`` (with ``content`` for a form),
    ``decline`` or ``cancel``. ``open_url`` asks the session to open the browser (URL mode,
    on accept only); ``note`` is said to the person (why a request was declined unasked)."""

    action: str
    content: dict[str, Any] | None = None
    open_url: str | None = None
    note: str | None = None

    def reply(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        if self.action == "accept" and self.content is not None:
            out["content"] = self.content
        return out


Step = Ask | Done


class Dialogue(ABC):
    """A state machine: ``start()`` gives the first step, ``answer()`` the next one."""

    source: str

    @abstractmethod
    def start(self) -> Step: ...

    @abstractmethod
    def answer(self, value: Any, cancelled: bool = False) -> Step: ...


def dialogue_for(request: dict[str, Any]) -> Dialogue:
    """The dialogue for one elicitation request: ``{"server", "mode", "message", "schema", "url"}``."""
    server = str(request.get("server") or "?")
    message = str(request.get("message") or "")
    if request.get("mode") == "url":
        return UrlDialogue(server, message, str(request.get("url") or ""))
    schema = request.get("schema")
    return FormDialogue(server, message, schema if isinstance(schema, dict) else {})


# ---------------------------------------------------------------- choices


def _action(options: list[tuple[str, str]]) -> dict[str, Any]:
    return {"type": "string", "oneOf": [{"const": value, "title": title} for value, title in options]}


def options_of(prop: dict[str, Any]) -> list[tuple[str, str]] | None:
    """The ``(value, label)`` choices of an enum field (``enum`` with optional ``enumNames``,
    ``oneOf``/``anyOf`` of ``const``+``title``), or of a multi-select's ``items``; None otherwise."""
    source = prop.get("items") if prop.get("type") == "array" else prop
    if not isinstance(source, dict):
        return None
    enum = source.get("enum")
    if isinstance(enum, list) and enum:
        names = source.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(enum) else enum
        return [(str(v), str(n)) for v, n in zip(enum, labels, strict=True)]
    for key in ("oneOf", "anyOf"):
        items = source.get(key)
        if isinstance(items, list) and items and all(isinstance(i, dict) and "const" in i for i in items):
            return [(str(i["const"]), str(i.get("title") or i["const"])) for i in items]
    return None


def _pick(options: list[tuple[str, str]], text: str, prefix: bool = False) -> str | None:
    """The value a typed answer names: the value itself, its label (any case) or its number;
    with ``prefix`` (the review and URL steps) also a first letter or any unambiguous start."""
    t = text.strip()
    for value, _ in options:
        if t == value:
            return value
    low = t.lower()
    for value, label in options:
        if low in (label.lower(), value.lower()):
            return value
    if t.isdigit() and 1 <= int(t) <= len(options):
        return options[int(t) - 1][0]
    if prefix and low:
        hits = {value for value, label in options if value.lower().startswith(low) or label.lower().startswith(low)}
        if len(hits) == 1:
            return hits.pop()
    return None


# ---------------------------------------------------------------- fields

_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_YES = {"y", "yes", "true", "1", "on"}
_NO = {"n", "no", "false", "0", "off"}
SUPPORTED = {"string", "number", "integer", "boolean", "array"}


class Invalid(ValueError):
    """An answer a field cannot take; the message says why without repeating the answer."""


def supported(prop: Any) -> bool:
    if not isinstance(prop, dict):
        return False
    kind = prop.get("type")
    if kind is None and options_of(prop):
        return True
    if kind not in SUPPORTED:
        return False
    return kind != "array" or options_of(prop) is not None


def _number(prop: dict[str, Any], text: str, integer: bool) -> int | float:
    t = text.strip()
    try:
        value: int | float = int(t) if integer else float(t)
    except ValueError:
        raise Invalid("not a whole number" if integer else "not a number") from None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Invalid("not a finite number")
        if value.is_integer() and re.fullmatch(r"[+-]?\d+", t):
            value = int(value)
    low, high = prop.get("minimum"), prop.get("maximum")
    if isinstance(low, (int, float)) and value < low:
        raise Invalid(f"must be at least {low:g}")
    if isinstance(high, (int, float)) and value > high:
        raise Invalid(f"must be at most {high:g}")
    return value


def _string(prop: dict[str, Any], text: str) -> str:
    lo, hi = prop.get("minLength"), prop.get("maxLength")
    if isinstance(lo, int) and len(text) < lo:
        raise Invalid(f"must be at least {lo} characters long")
    if isinstance(hi, int) and len(text) > hi:
        raise Invalid(f"must be at most {hi} characters long")
    fmt = prop.get("format")
    if fmt == "email" and not _EMAIL.fullmatch(text):
        raise Invalid("not an email address (name@example.com)")
    if fmt == "uri":
        parts = urlsplit(text)
        if not parts.scheme or not (parts.netloc or parts.path):
            raise Invalid("not a URI (like https://example.com)")
    if fmt == "date":
        try:
            date.fromisoformat(text)
        except ValueError:
            raise Invalid("not a date (YYYY-MM-DD)") from None
    if fmt == "date-time":
        try:
            datetime.fromisoformat(text)
        except ValueError:
            raise Invalid("not a date and time (YYYY-MM-DDTHH:MM:SS)") from None
    return text


def coerce(prop: dict[str, Any], value: Any) -> Any:
    """The value to send for one answer to field ``prop``; raises :class:`Invalid`."""
    kind = prop.get("type")
    options = options_of(prop)
    if kind == "array":
        assert options is not None
        items = value if isinstance(value, list) else [p for p in re.split(r"[,\n]", str(value)) if p.strip()]
        picked: list[str] = []
        for item in items:
            found = _pick(options, str(item))
            if found is None:
                raise Invalid("not among the choices: " + ", ".join(label for _, label in options))
            if found not in picked:
                picked.append(found)
        lo, hi = prop.get("minItems"), prop.get("maxItems")
        if isinstance(lo, int) and len(picked) < lo:
            raise Invalid(f"choose at least {lo}")
        if isinstance(hi, int) and len(picked) > hi:
            raise Invalid(f"choose at most {hi}")
        return picked
    if options is not None:
        found = _pick(options, str(value))
        if found is None:
            raise Invalid("not one of the choices: " + ", ".join(label for _, label in options))
        return found
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in _YES:
            return True
        if word in _NO:
            return False
        raise Invalid("answer yes or no")
    if kind in ("integer", "number"):
        if isinstance(value, bool):
            raise Invalid("not a number")
        return _number(prop, str(value), kind == "integer")
    return _string(prop, str(value))


def _hints(prop: dict[str, Any], required: bool, keep: bool) -> list[str]:
    hints: list[str] = []
    kind = prop.get("type")
    low, high = prop.get("minimum"), prop.get("maximum")
    if kind in ("integer", "number"):
        what = "a whole number" if kind == "integer" else "a number"
        if isinstance(low, (int, float)) and isinstance(high, (int, float)):
            what += f" from {low:g} to {high:g}"
        elif isinstance(low, (int, float)):
            what += f", at least {low:g}"
        elif isinstance(high, (int, float)):
            what += f", at most {high:g}"
        hints.append(what)
    fmt = {"email": "an email address", "uri": "a URI", "date": "a date, YYYY-MM-DD",
           "date-time": "a date and time, YYYY-MM-DDTHH:MM:SS"}.get(str(prop.get("format")))
    if fmt:
        hints.append(fmt)
    if kind == "array":
        hints.append("one or more, separated by commas")
    if keep:
        hints.append("an empty answer keeps the last one")
    elif "default" in prop:
        default = prop["default"]
        shown = ", ".join(map(str, default)) if isinstance(default, list) else str(default)
        if isinstance(default, bool):
            shown = "yes" if default else "no"
        options = options_of(prop)
        if options:
            names = dict(options)
            shown = ", ".join(names.get(str(v), str(v)) for v in (default if isinstance(default, list) else [default]))
        hints.append(f"an empty answer takes the default: {shown}")
    elif not required:
        hints.append("optional: an empty answer skips it")
    return hints


# ---------------------------------------------------------------- form mode


@dataclass
class FormDialogue(Dialogue):
    """Each field one question, then a review: send, edit (ask again; Enter keeps the last
    answer) or decline. A bad answer asks the same field again with the reason."""

    server: str
    message: str
    schema: dict[str, Any]
    fields: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    required: set[str] = field(default_factory=set)
    values: dict[str, Any] = field(default_factory=dict)
    index: int = 0
    keep: bool = False
    reviewing: bool = False

    def __post_init__(self) -> None:
        self.source = f"mcp:{self.server}"
        props = self.schema.get("properties")
        self.fields = list(props.items()) if isinstance(props, dict) else []
        req = self.schema.get("required")
        self.required = {str(r) for r in req} if isinstance(req, list) else set()

    def start(self) -> Step:
        if self.schema.get("type", "object") != "object" or not isinstance(self.schema.get("properties", {}), dict):
            return Done("decline", note=f"{self.source} sent a form cox cannot show (not a flat object); declined")
        bad = [name for name, prop in self.fields if not supported(prop)]
        if bad:
            return Done("decline", note=f"{self.source} sent a form with fields cox cannot ask for "
                                        f"({', '.join(bad)}: nested or untyped); declined without asking")
        if not self.fields:
            return self._review()
        return self._field()

    def _title(self, name: str, prop: dict[str, Any]) -> str:
        return str(prop.get("title") or name)

    def _field(self, problem: str | None = None) -> Ask:
        name, prop = self.fields[self.index]
        required = name in self.required
        lines = [f"✗ {problem}; try again"] if problem else []
        if self.message:
            lines.append(self.message)
        head = f"({self.index + 1}/{len(self.fields)}) {self._title(name, prop)}"
        if prop.get("description"):
            head += f" — {prop['description']}"
        lines.append(head)
        hints = _hints(prop, required, self.keep)
        if hints:
            lines.append("(" + "; ".join(hints) + ")")
        schema: dict[str, Any] = {"type": "object", "properties": {name: prop},
                                  "x-cox": {"step": "field", "keep": self.keep, "index": self.index,
                                            "count": len(self.fields)}}
        if required:
            schema["required"] = [name]
        return Ask("\n".join(lines), schema)

    def _review(self, problem: str | None = None) -> Ask:
        self.reviewing = True
        names = [self._title(n, p) for n, p in self.fields if n in self.values]
        what = ", ".join(names) if names else "an empty answer"
        lines = [f"✗ {problem}; try again"] if problem else []
        if self.message:
            lines.append(self.message)
        lines.append(f"send {what} to {self.source}?")
        options = [(SEND, "send"), (EDIT, "edit the answers"), (DECLINE, "decline")]
        schema = {"type": "object", "properties": {"action": _action(options)}, "required": ["action"],
                  "x-cox": {"step": "review", "keep": False}}
        return Ask("\n".join(lines), schema)

    def answer(self, value: Any, cancelled: bool = False) -> Step:
        if cancelled:
            return Done("cancel")
        if self.reviewing:
            choice = _pick([(SEND, "send"), (EDIT, "edit"), (DECLINE, "decline")], _scalar(value), prefix=True)
            if choice == SEND:
                return Done("accept", content=dict(self.values))
            if choice == DECLINE:
                return Done("decline")
            if choice == EDIT:
                if not self.fields:
                    return self._review()
                self.reviewing = False
                self.keep = True
                self.index = 0
                return self._field()
            return self._review("answer send, edit or decline")
        name, prop = self.fields[self.index]
        if isinstance(value, dict):
            value = value.get(name)
        empty = value is None or (isinstance(value, str) and not value.strip()) or value == []
        if empty:
            if self.keep:
                pass  # the last answer (or its absence) stays
            elif "default" in prop:
                try:
                    self.values[name] = coerce(prop, prop["default"])
                except Invalid:
                    self.values[name] = prop["default"]
            elif name in self.required:
                return self._field("an answer is required")
            else:
                self.values.pop(name, None)
        else:
            try:
                self.values[name] = coerce(prop, value if isinstance(value, (bool, list, int, float)) else str(value))
            except Invalid as why:
                return self._field(str(why))
        self.index += 1
        if self.index < len(self.fields):
            return self._field()
        return self._review()


def _scalar(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("action", "")
    return "" if value is None else str(value)


# ---------------------------------------------------------------- URL mode


class UrlRefused(ValueError):
    """A URL cox will not open; the message says why."""


_ALLOWED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%")
_HOST = re.compile(r"[a-z0-9.-]+")


def _encode_non_ascii(part: str) -> str:
    return "".join(quote(ch, safe="") if ord(ch) > 127 else ch for ch in part)


def check_url(raw: str) -> tuple[str, str, list[str]]:
    """``(url as it will be opened, its host, warnings)``; raises :class:`UrlRefused`.

    The URL is normalised: scheme and host lower case, a non-ASCII host in punycode (IDNA), any
    other non-ASCII character percent-encoded. Refused: a scheme other than http(s), no host, and
    anything the opener would not pass on unchanged (spaces, control characters, quotes, angle
    brackets, backslashes, broken ``%`` escapes). Warned about: a punycode host (it may imitate
    another name), plain http, and a user name before the host."""
    text = raw.strip()
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise UrlRefused("it contains spaces or control characters")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused(f"it is not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UrlRefused(f"it is not an http(s) URL (scheme {scheme or 'missing'!r})")
    host = parts.hostname or ""
    if not host:
        raise UrlRefused("it names no host")
    ipv6 = ":" in host
    if not ipv6:
        try:
            host = host.encode("idna").decode("ascii") if not host.isascii() else host
        except UnicodeError:
            raise UrlRefused("its host cannot be written in ASCII (IDNA)") from None
        if not _HOST.fullmatch(host) or ".." in host:
            raise UrlRefused("its host has characters a host name cannot have")
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    netloc = (f"{userinfo}@" if userinfo else "") + (f"[{host}]" if ipv6 else host)
    if port is not None:
        netloc += f":{port}"
    path, query, fragment = (_encode_non_ascii(p) for p in (parts.path, parts.query, parts.fragment))
    url = urlunsplit((scheme, netloc, path, query, fragment))
    if not set(url) <= _ALLOWED:
        raise UrlRefused("it has characters the browser opener would not pass on unchanged")
    if re.search(r"%(?![0-9A-Fa-f]{2})", url):
        raise UrlRefused("it has a broken %-escape")
    warnings: list[str] = []
    if any(label.startswith("xn--") for label in host.split(".")):
        warnings.append("the host is punycode (xn--…): it may imitate another name, check it letter by letter")
    if scheme == "http":
        warnings.append("plain http: the page and anything typed there travel unencrypted")
    if userinfo:
        warnings.append("the URL carries a user name before the host; the host it opens is the one shown")
    return url, host, warnings


@dataclass
class UrlDialogue(Dialogue):
    """One question: the message, the URL as it will be opened, its host and any warnings;
    open or decline. A URL cox will not open is declined without asking."""

    server: str
    message: str
    raw_url: str
    url: str = ""
    host: str = ""
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.source = f"mcp:{self.server}"

    def start(self) -> Step:
        try:
            self.url, self.host, self.warnings = check_url(self.raw_url)
        except UrlRefused as why:
            return Done("decline", note=f"{self.source} asked to open a URL cox will not open ({why}); "
                                        "declined without asking")
        return self._ask()

    def _ask(self, problem: str | None = None) -> Ask:
        lines = [f"✗ {problem}; try again"] if problem else []
        if self.message:
            lines.append(self.message)
        lines += [f"open  {self.url}", f"host  {self.host}"]
        lines += [f"⚠ {w}" for w in self.warnings]
        options = [(OPEN, "open in the browser"), (DECLINE, "decline")]
        schema = {"type": "object", "properties": {"action": _action(options)}, "required": ["action"],
                  "x-cox": {"step": "url", "keep": False}}
        return Ask("\n".join(lines), schema, url=self.url)

    def answer(self, value: Any, cancelled: bool = False) -> Step:
        if cancelled:
            return Done("cancel")
        choice = _pick([(OPEN, "open"), (DECLINE, "decline")], _scalar(value), prefix=True)
        if choice == OPEN:
            return Done("accept", open_url=self.url)
        if choice == DECLINE:
            return Done("decline")
        return self._ask("answer open or decline")


def open_in_browser(url: str) -> str | None:
    """Open ``url`` in the system's browser; None when done, else why not.

    Only a graphical browser (or the one ``$BROWSER`` names): on a Linux terminal without
    ``DISPLAY``/``WAYLAND_DISPLAY`` Python's ``webbrowser`` would start a console browser (lynx,
    w3m) on the very terminal cox draws on, so cox says so instead and the person opens the URL."""
    import os
    import sys
    import webbrowser

    graphical = bool(os.environ.get("BROWSER") or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                     or sys.platform == "darwin" or sys.platform.startswith("win"))
    if not graphical:
        return "no graphical browser here (no DISPLAY)"
    try:
        opened = webbrowser.open(url, new=2)
    except webbrowser.Error as exc:
        return str(exc)
    return None if opened else "no browser could be started"
