"""Make text a model or tool wrote safe to show in a terminal.

A model's reply, a tool's output or an MCP server's answer can carry escape sequences that move
the cursor, rewrite earlier lines, retitle the window, set the clipboard (OSC 52) or hide text, and
bidi controls that display code in a different order than it runs (Trojan Source). Everything
such a party wrote goes through :func:`sanitize` before a surface shows it, so what the person
reads is what is there. The ``cox`` command's stderr is a :class:`SanitizedStream`, so an error
line quoting a model, a tool, an MCP server, a config file or a provider cannot carry one either.
"""

from __future__ import annotations

from typing import IO, Any

from cox import lazyre

__all__ = ["SanitizedStream", "sanitize"]

# Any character that needs work. Checked first: plain text (the common case) costs one C scan.
_SUSPECT = lazyre.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

# Order matters: string-type sequences (which may contain anything up to their terminator) first,
# then CSI, then any other escape, then single control characters.
_STRIP = lazyre.compile(
    # OSC, DCS, SOS, PM, APC: ESC ] / P / X / ^ / _ up to BEL or ST (ESC \ or 0x9c); an
    # unterminated one runs to the end of the text, which is then dropped.
    "\x1b[\\]PX^_](?:[^\x07\x1b\x9c]|\x1b(?!\\\\))*(?:\x07|\x1b\\\\|\x9c|$)"
    # CSI: ESC [, parameter bytes, intermediate bytes, one final byte
    "|\x1b\\[[0-?]*[ -/]*[@-~]?"
    # other escape sequences: ESC, intermediates, a final byte (ESC c, ESC ( B, ESC 7 …); lone ESC
    "|\x1b[ -/]*[0-~]?"
    # C0 controls but \t and \n (CR can rewrite the visible line), DEL, C1 controls. The 8-bit
    # introducers (0x9b CSI, 0x9d OSC …) go alone: without them what follows is plain text, and
    # a stray one (mis-decoded cp1252) must not swallow the rest of the output.
    "|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
    # bidi controls: ALM, LRM, RLM, embeddings and overrides (LRE…RLO), isolates (LRI…PDI)
    "|[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def sanitize(text: str) -> str:
    """``text`` without terminal escape sequences, control characters (newline and tab stay)
    and bidi controls. A CR LF pair becomes a newline; a lone CR is dropped."""
    if not _SUSPECT.search(text):
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _STRIP.sub("", text)


class SanitizedStream:
    """A text stream whose every ``write`` passes :func:`sanitize` (anything else is the wrapped
    stream's). Only for text meant to be read: JSON and raw bytes must not go through it."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(sanitize(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
