"""Terminal sanitising (issue 3, item 6)."""

from __future__ import annotations

import pytest

from cox.policy.sanitize import sanitize


@pytest.mark.parametrize(("text", "clean"), [
    ("\x1b[31mred\x1b[0m", "red"),  # CSI (SGR)
    ("a\x1b[2J\x1b[Hb", "ab"),  # clear screen, cursor home
    ("\x1b[?1049h", ""),  # private CSI
    ("\x9b31mred", "31mred"),  # 8-bit CSI: the introducer goes, the rest is plain text
    ("\x1b]0;evil title\x07text", "text"),  # OSC with BEL
    ("\x1b]52;c;ZXZpbA==\x1b\\text", "text"),  # OSC 52 clipboard, ST
    ("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "link"),  # hyperlink
    ("\x1bPq#0;2;0;0;0\x1b\\x", "x"),  # DCS (sixel)
    ("\x1b_APC payload\x1b\\x", "x"), ("\x1b^PM\x1b\\x", "x"), ("\x1bXSOS\x1b\\x", "x"),
    ("\x1b]0;unterminated title", ""),
    ("\x1bcreset", "reset"), ("\x1b(Bx", "x"), ("\x1b7x\x1b8", "x"), ("lone\x1b", "lone"),
    ("bell\x07 back\x08space nul\x00 del\x7f", "bell backspace nul del"),
    ("c1\x85\x90x\x9d0;t\x9c", "c1x0;t"),
    ("keep\ttabs\nand newlines", "keep\ttabs\nand newlines"),
    ("crlf\r\nline", "crlf\nline"), ("over\rwrite", "overwrite"),
    ("if (a \u202e}{ \u2066x\u2069 \u200f", "if (a }{ x "),  # bidi override, isolate, mark
    ("\u202a\u202b\u202c\u202d\u2067\u2068\u061c\u200e", ""),
])
def test_strips(text: str, clean: str) -> None:
    assert sanitize(text) == clean


@pytest.mark.parametrize("text", ["", "plain", "unicode ✓ café 日本語 🙂", "tabs\tand\nnewlines", "é\u0301"])
def test_plain_text_is_untouched(text: str) -> None:
    assert sanitize(text) is text


def test_sanitize_is_idempotent_on_mixed_input() -> None:
    t = "\x1b[1m\x1b]0;t\x07hi\u202e\x00\r\n"
    assert sanitize(sanitize(t)) == sanitize(t) == "hi\n"


def test_a_sanitized_stream_cleans_every_write_and_passes_the_rest_through() -> None:
    import io

    from cox.policy.sanitize import SanitizedStream

    raw = io.StringIO()
    err = SanitizedStream(raw)
    print("cox: error: \x1b]52;c;ZXZpbA==\x07bad key \x1b[2J\u202egnp.exe", file=err)  # type: ignore[arg-type]
    assert raw.getvalue() == "cox: error: bad key gnp.exe\n"
    assert err.write("x\x1b") == 2  # what the caller wrote, as a stream answers
    assert err.getvalue() == raw.getvalue() and err.isatty() is False  # anything else is the stream's
