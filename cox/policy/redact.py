"""Replace secret-shaped strings with «redacted» in what leaves the session.

Everything cox persists or prints outside the session (rollout lines, ``cox run`` output,
provider error messages) passes :func:`scrub`. Model input never does: a task may legitimately
handle keys. The five shapes of the spec, each a little wider where the provider uses sibling
prefixes for the same kind of secret:

- API keys ``sk-…`` (OpenAI ``sk-``/``sk-proj-``, Anthropic ``sk-ant-…``), 20+ key characters;
- ``Bearer <token>`` (16+ token characters; the word ``Bearer`` stays, so the log still says an
  Authorization header was there);
- AWS access key ids ``AKIA…`` (and the temporary ``ASIA…``), 16 upper-case characters after;
- GitHub tokens ``ghp_…`` (and ``gho_``/``ghu_``/``ghs_``/``ghr_``, ``github_pat_…``);
- PEM blocks from ``-----BEGIN …-----`` through their ``-----END …-----`` line; a block whose
  END is missing (cut off) is redacted to the end of the text.

The scrub works on *values*, never on an encoded line: in JSON a secret on its own line follows
the letter ``n`` of ``\\n`` (which defeats the look-behinds below), and an unterminated PEM block
would eat the rest of the line, closing quotes and braces included. :func:`scrub_data` walks the
strings of decoded JSON data; the encoder calls it before writing (``protocol.messages``).

Streamed text is cut into deltas anywhere, a secret too. :class:`Carry` holds back the tail of a
delta that could be the start of a secret shape until the next delta shows whether it is one, so
every released piece can be scrubbed on its own; ordinary text holds back nothing, or a letter.

It runs on every streamed delta, so the common case (no secret) is a few substring checks.
"""

from __future__ import annotations

import re
from typing import Any

from cox import lazyre

__all__ = ["MAX_HELD", "REDACTED", "Carry", "hold_from", "scrub", "scrub_data", "suspect"]

REDACTED = "«redacted»"

# Cheap prefilter: every shape contains one of these literally. Case matters except for "bearer".
_MARKERS = ("sk-", "earer", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "-----BEGIN")

_PEM_BEGIN = "-----BEGIN"
_PEM = r"-----BEGIN[ A-Z0-9]*-----.*?-----END[ A-Z0-9]*-----"
_SECRET = lazyre.compile(
    _PEM + r"|-----BEGIN[ A-Z0-9]*-----.*\Z"
    r"|(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}"
    r"|(?<=[Bb]earer )[ \t]*[A-Za-z0-9\-._~+/]{16,}=*"
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"
    r"|(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
    re.DOTALL,
)
_PEM_DONE = lazyre.compile(_PEM, re.DOTALL)


def suspect(text: str) -> bool:
    """Whether ``text`` may hold a secret shape (a few substring checks; no false negatives).
    True of any text whose JSON encoding is suspect too: the markers have nothing to escape."""
    return any(marker in text for marker in _MARKERS)


def scrub(text: str) -> tuple[str, bool]:
    """``(text with every secret shape replaced by «redacted», whether anything changed)``."""
    if not suspect(text):
        return text, False
    out, n = _SECRET.subn(REDACTED, text)
    return (out, True) if n else (text, False)


def scrub_data(value: Any) -> tuple[Any, bool]:
    """``value`` (decoded JSON: dicts, lists, strings, numbers) with every string scrubbed, and
    whether anything changed. Unchanged containers are returned as they are, not copied; keys
    stay as they are (two keys must never become one)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        items = [(k, *scrub_data(v)) for k, v in value.items()]
        if any(c for _, _, c in items):
            return {k: v for k, v, _ in items}, True
        return value, False
    if isinstance(value, list | tuple):
        pairs = [scrub_data(v) for v in value]
        if any(c for _, c in pairs):
            return [v for v, _ in pairs], True
        return value, False
    return value, False


# ------------------------------------------------------------------ streamed text


def _prefixes(literal: str, body: str) -> str:
    """A pattern for any non-empty start of ``literal`` followed, once it is whole, by ``body``."""
    starts = [re.escape(literal[:i]) for i in range(1, len(literal))]
    return "(?:" + "|".join([*starts, re.escape(literal) + body]) + ")"


# A start of a secret shape running to the end of the text: what a later delta may complete (or
# lengthen: a key already 20 characters long may go on). Same look-behinds as _SECRET.
_OPEN = lazyre.compile(
    "(?=[sAgBb-])(?:"  # the first characters of the shapes, checked first: most positions fail here
    r"(?<![A-Za-z0-9_-])" + _prefixes("sk-", "[A-Za-z0-9_-]*")
    + r"|(?<![A-Za-z0-9])(?:" + _prefixes("AKIA", "[0-9A-Z]*") + "|" + _prefixes("ASIA", "[0-9A-Z]*") + ")"
    + r"|(?<![A-Za-z0-9_])(?:" + "|".join(_prefixes(f"gh{c}_", "[A-Za-z0-9]*") for c in "pousr")
    + "|" + _prefixes("github_pat_", "[A-Za-z0-9_]*") + ")"
    + "|" + _prefixes("Bearer ", r"[ \t]*[A-Za-z0-9\-._~+/]*=*")
    + "|" + _prefixes("bearer ", r"[ \t]*[A-Za-z0-9\-._~+/]*=*")
    + "|" + _prefixes(_PEM_BEGIN, "")
    + r")\Z"
)
# The characters of a shape's body: an open start lies in the text's last run of them, or (Bearer)
# in the word "Bearer" and the blanks before that run.
_RUN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.~+/="


def hold_from(text: str) -> int:
    """Where the part of ``text`` that could be the start of a secret begins (``len(text)`` if
    none can): a PEM block begun but not ended, or a shape's start running to the end."""
    i = text.find(_PEM_BEGIN)
    while i != -1:
        done = _PEM_DONE.match(text, i)
        if done is None:
            return i
        i = text.find(_PEM_BEGIN, done.end())
    start = len(text.rstrip(_RUN_CHARS))
    word = len(text[:start].rstrip(" \t"))
    if word < start and text.endswith("earer", 0, word):  # "Bearer", blanks, then the run
        start = max(word - 6, 0)
    if start == len(text):
        return start
    found = _OPEN.search(text, start)
    return found.start() if found else len(text)


MAX_HELD = 4096
"""The most a shape other than a PEM block is held back: no real key or token is longer, and
beyond it the held text (already a whole secret shape) goes out and is scrubbed as one."""


class Carry:
    """The carry-over window of one text block's deltas: :meth:`feed` returns what may go out
    now, holding back a tail that could be the start of a secret; :meth:`flush` (at the end of
    the block) returns the rest. Every character comes out exactly once and in order, and no
    secret is ever split between two released pieces, so scrubbing each piece catches it."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = ""

    def feed(self, text: str) -> str:
        held = self.held
        if not held:
            cut = hold_from(text)
            if cut == len(text):
                return text
            self.held = text[cut:]
            return text[:cut]
        buf = held + text
        if held.startswith(_PEM_BEGIN) and "-----" not in held[-4:] + text:
            self.held = buf  # an open PEM block ends only with a delta that brings "-----"
            return ""
        cut = hold_from(buf)
        if len(buf) - cut > MAX_HELD and not buf.startswith(_PEM_BEGIN, cut):
            cut = len(buf)
        self.held = buf[cut:]
        return buf[:cut]

    def flush(self) -> str:
        rest, self.held = self.held, ""
        return rest
