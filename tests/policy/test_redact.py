"""Redaction (issue 3, item 5): the five secret shapes of the spec become «redacted»."""

from __future__ import annotations

import pytest

from cox.policy.redact import REDACTED, scrub

PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA\n-----END OPENSSH PRIVATE KEY-----"


@pytest.mark.parametrize(("text", "secret"), [
    ("key=sk-proj-abcdefghijklmnopqrstuvwx1234", "sk-proj-abcdefghijklmnopqrstuvwx1234"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv-wxyz_0123", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv-wxyz_0123"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc"),
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789 ok", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    (f"before\n{PEM}\nafter", PEM),
])
def test_each_shape_is_redacted(text: str, secret: str) -> None:
    out, changed = scrub(text)
    assert changed and secret not in out and REDACTED in out


def test_pem_keeps_text_around_it() -> None:
    out, _ = scrub(f"before\n{PEM}\nafter")
    assert out == f"before\n{REDACTED}\nafter"


def test_bearer_word_stays() -> None:
    out, _ = scrub("Authorization: Bearer abcdefghijklmnop1234")
    assert out == f"Authorization: Bearer {REDACTED}"


def test_unterminated_pem_is_redacted_to_the_end() -> None:
    out, changed = scrub("x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow")
    assert changed and "MIIEow" not in out and out.startswith("x\n")


@pytest.mark.parametrize("text", [
    "", "plain text with no secrets", "use scikit-learn and sk-learn", "Bearer tokens are described in RFC 6750",
    "the word AKIA alone", "ghp_short", "sk-" + "a" * 10, "task-abcdefghijklmnopqrstuvwxyz",
    "XAKIAIOSFODNN7EXAMPLE1",
])
def test_harmless_text_is_unchanged(text: str) -> None:
    assert scrub(text) == (text, False)


def test_unchanged_text_is_the_same_object() -> None:
    t = "hello world " * 10
    assert scrub(t)[0] is t
