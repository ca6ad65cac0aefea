"""Replace secret-shaped strings with «redacted» in what leaves the session.

Everything cox persists or prints outside the session (rollout lines, ``cox run`` output) passes
:func:`scrub`. Model input never does: a task may legitimately handle keys. The five shapes of
the spec, each a little wider where the provider uses sibling prefixes for the same kind of
secret:

- API keys ``sk-…`` (OpenAI ``sk-``/``sk-proj-``, Anthropic ``sk-ant-…``), 20+ key characters;
- ``Bearer <token>`` (16+ token characters; the word ``Bearer`` stays, so the log still says an
  Authorization header was there);
- AWS access key ids ``AKIA…`` (and the temporary ``ASIA…``), 16 upper-case characters after;
- GitHub tokens ``ghp_…`` (and ``gho_``/``ghu_``/``ghs_``/``ghr_``, ``github_pat_…``);
- PEM blocks from ``-----BEGIN …-----`` through their ``-----END …-----`` line; a block whose
  END is missing (cut off, or split across streamed deltas) is redacted to the end of the text.

It runs on every streamed delta, so the common case (no secret) is a few substring checks.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "scrub"]

REDACTED = "«redacted»"

# Cheap prefilter: every shape contains one of these literally. Case matters except for "bearer".
_MARKERS = ("sk-", "earer", "AKIA", "ASIA", "gh", "-----BEGIN")

_SECRET = re.compile(
    r"-----BEGIN[ A-Z0-9]*-----(?:.*?-----END[ A-Z0-9]*-----|.*\Z)"
    r"|(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}"
    r"|(?<=[Bb]earer )[ \t]*[A-Za-z0-9\-._~+/]{16,}=*"
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"
    r"|(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
    re.DOTALL,
)


def scrub(text: str) -> tuple[str, bool]:
    """``(text with every secret shape replaced by «redacted», whether anything changed)``."""
    for marker in _MARKERS:
        if marker in text:
            break
    else:
        return text, False
    out, n = _SECRET.subn(REDACTED, text)
    return (out, True) if n else (text, False)
