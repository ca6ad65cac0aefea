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


# ---------------------------------------------------------------- values, not encoded lines (issue 11, class 8)

import json  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cox.policy.redact import MAX_HELD, Carry, hold_from, scrub_data  # noqa: E402
from cox.protocol import messages as m  # noqa: E402
from cox.protocol.types import ToolResult  # noqa: E402

SECRETS = [
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv-wxyz_0123",
    "sk-proj-abcdefghijklmnopqrstuvwx1234",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\nabcd==\n-----END RSA PRIVATE KEY-----",
]
# What must never survive of each: the part a scrub replaces (for Bearer, the token after the word).
BODIES = {s: s.split("\n")[1] if s.startswith("-----") else s for s in SECRETS}
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"
BEARER_BODY = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"

# Around a secret: what a file, a JSON value or a shell line puts there (never a key character,
# which would make it a different word and no secret by the spec's shapes).
BEFORE = st.sampled_from(["", "\n", "\t", '"', "'", " ", "=", "(", "\\", "\r\n", "\n\n\t"])
AFTER = st.sampled_from(["", "\n", "\t", '"', "'", " ", ")", ",", "\r\n"])
NOISE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


def placed(noise_a: str, before: str, secret: str, after: str, noise_b: str) -> str:
    # a noise character touching the secret would change what the secret is; keep a separator
    a = noise_a + (before or ("\n" if noise_a else ""))
    b = (after or ("\n" if noise_b else "")) + noise_b
    return a + secret + b


def test_github_pat_alone_is_caught() -> None:
    # the old prefilter looked for "gh", which "github_pat_" does not contain
    assert scrub("token " + SECRETS[4])[1]


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("sep", ["\n", "\t", '"', "\r\n"])
def test_a_secret_on_its_own_line_of_a_tool_result_is_redacted(secret: str, sep: str) -> None:
    # what a ``read`` of a .env file returns: every secret after a newline or a tab
    text = f"first line{sep}{secret}{sep}last line\n"
    event = m.ToolCallDone(call_id="c1", result=ToolResult(visible=text), duration_ms=3.0)
    line, changed = m.encode_scrubbed(event)
    assert changed and BODIES[secret] not in line
    back = m.decode_event(line)
    assert back.result.visible == f"first line{sep}{REDACTED}{sep}last line\n"
    assert back.call_id == "c1" and back.duration_ms == 3.0


def test_an_unterminated_pem_block_stops_at_the_end_of_its_value() -> None:
    text = "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA"
    event = m.ToolCallDone(call_id="c1", result=ToolResult(visible=text, exit_code=0, meta={"path": "id_rsa"}),
                           duration_ms=1.5)
    line, changed = m.encode_scrubbed(event)
    data = json.loads(line)  # the old line-level scrub ate the quotes and braces after it
    assert changed and data["result"]["visible"] == f"key:\n{REDACTED}"
    assert data["result"]["meta"] == {"path": "id_rsa"} and data["duration_ms"] == 1.5
    assert "b3BlbnNzaC1" not in line


def test_an_unchanged_event_encodes_as_before() -> None:
    event = m.ToolCallDone(call_id="c1", result=ToolResult(visible="high light, though\n"), duration_ms=2.0)
    assert m.encode_scrubbed(event) == (m.encode(event), False)


def test_scrub_data_walks_nested_values_and_leaves_keys() -> None:
    data = {"a": [1, 2.5, None, True, {"b": "x\n" + SECRETS[0]}], "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv": "ok"}
    out, changed = scrub_data(data)
    assert changed and out["a"][4]["b"] == "x\n" + REDACTED and out["a"][:4] == [1, 2.5, None, True]
    assert out["sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"] == "ok"
    same = {"a": ["plain"], "b": 1}
    assert scrub_data(same) == (same, False) and scrub_data(same)[0] is same


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(noise_a=NOISE, before=BEFORE, secret=st.sampled_from([*SECRETS, BEARER]), after=AFTER, noise_b=NOISE,
       kind=st.sampled_from(["tool_call_done", "text_delta", "tool_call_output", "error", "assistant_message"]))
def test_property_a_secret_anywhere_in_any_value_never_survives_and_the_line_is_json(
        noise_a: str, before: str, secret: str, after: str, noise_b: str, kind: str) -> None:
    text = placed(noise_a, before, secret, after, noise_b)
    event: m.Record = {
        "tool_call_done": lambda: m.ToolCallDone(call_id="c", result=ToolResult(visible=text)),
        "text_delta": lambda: m.TextDelta(text=text),
        "tool_call_output": lambda: m.ToolCallOutput(call_id="c", chunk=text),
        "error": lambda: m.ErrorEvent(message=text),
        "assistant_message": lambda: m.AssistantMessage(turn=1, content=[{"type": "text", "text": text}]),
    }[kind]()
    line, changed = m.encode_scrubbed(event)
    body = BEARER_BODY if secret == BEARER else BODIES[secret]
    assert changed and body not in line and body not in json.dumps(json.loads(line), ensure_ascii=False)
    assert m.decode_event(line).type == kind  # valid JSON, and still a valid event


# ---------------------------------------------------------------- streamed deltas


def release(pieces: list[str]) -> list[str]:
    carry = Carry()
    out = [carry.feed(p) for p in pieces]
    out.append(carry.flush())
    return [p for p in out if p]


@st.composite
def split_text(draw: st.DrawFn) -> tuple[str, list[str], str]:
    secret = draw(st.sampled_from([*SECRETS, BEARER]))
    text = placed(draw(NOISE), draw(BEFORE), secret, draw(AFTER), draw(NOISE))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=12))))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return text, [p for p in pieces if p], secret


@settings(max_examples=400, deadline=None)
@given(split_text())
def test_property_a_secret_split_across_deltas_is_caught_and_every_character_comes_out_once(
        case: tuple[str, list[str], str]) -> None:
    text, pieces, secret = case
    released = release(pieces)
    assert "".join(released) == text  # every character exactly once, in order
    shown = "".join(scrub(p)[0] for p in released)  # what the rollout and stream-json carry
    assert (BEARER_BODY if secret == BEARER else BODIES[secret]) not in shown


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["the", "tasks", "ask", "high", "light", "Bear", "bearing", "As", "a", "-", "- item",
                                 "sorting", "ghost", "git", "AK", "\n", " ", ".", "github"]), max_size=40))
def test_property_ordinary_text_holds_back_at_most_a_word(words: list[str]) -> None:
    carry = Carry()
    for w in words:
        carry.feed(w)
        assert len(carry.held) <= len("github_pat_")


def test_ordinary_text_goes_out_at_once() -> None:
    assert hold_from("Here is the plan.") == len("Here is the plan.")
    assert release(["Hello", " world", "\n"]) == ["Hello", " world", "\n"]


def test_a_held_tail_waits_only_for_the_next_delta() -> None:
    carry = Carry()
    assert carry.feed("use s") == "use "
    assert carry.feed("o it goes") == "so it goes"
    assert carry.held == ""


def test_an_open_pem_block_is_held_to_its_end_or_the_end_of_the_block() -> None:
    carry = Carry()
    assert carry.feed("key: -----BEGIN RSA PRIV") == "key: "
    assert carry.feed("ATE KEY-----\nMIIE\n") == ""
    assert carry.feed("-----END RSA PRIVATE KEY--") == ""
    assert carry.feed("---\nnext") == "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nnext"
    carry.feed("-----BEGIN EC PRIVATE KEY-----\nabc")
    assert scrub(carry.flush())[0] == REDACTED  # cut off: redacted to the end of the block


def test_a_token_longer_than_any_secret_is_not_held_forever() -> None:
    carry = Carry()
    out = carry.feed("sk-" + "a" * 100)
    for _ in range(MAX_HELD // 100 + 2):
        out += carry.feed("a" * 100)
    assert out and len(carry.held) <= MAX_HELD + 100


def test_a_scrubbed_event_is_written_as_the_encoder_writes_it() -> None:
    from cox.protocol.types import StopReason

    for make in (lambda s: m.TurnDone(turn=2, stop=StopReason.ERROR, reason=f"bad key\n{s}"),
                 lambda s: m.ToolCallDone(call_id="c", result=ToolResult(visible=f"\t{s}", meta={"x": 1e-05}),
                                          duration_ms=0.5)):
        assert m.encode_scrubbed(make(SECRETS[0])) == (m.encode(make(REDACTED)), True)
