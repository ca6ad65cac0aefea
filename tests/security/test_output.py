"""Attacks on what leaves the session (issue 11, class 8): secrets that must not reach stdout,
stderr or the rollout, and escape sequences that must not reach a terminal.

The workspace, the model and the provider are hostile: a file holds keys on their own lines and
an unterminated PEM block (the old line-level scrub missed a key after an escaped newline, and
the PEM ate the rest of the JSON line); the model's reply repeats a key cut into 3-character
deltas and carries OSC 52, CSI and bidi controls; a tool name carries escapes; the provider's
error message echoes a key back.
"""

from __future__ import annotations

import json
from pathlib import Path

SK = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
AWS = "AKIAIOSFODNN7EXAMPLE"
GHP = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
PEM_BODY = "MIIEowIBAAKCAQEAsecretbodyline"
CREDS = (f"# deploy settings\n{SK}\n\t{AWS}\n{GHP}\n{PAT}\n"
         f"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.tokenbody\n"
         f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nQUFBQQ==\n")  # no END line: cut off
NEEDLES = [SK, AWS, GHP, PAT, "eyJhbGciOiJIUzI1NiJ9.tokenbody", PEM_BODY, "QUFBQQ=="]
# Escape sequences a hostile reply or tool name carries: clipboard, hyperlink, clear screen, 8-bit
# CSI, bidi override.
HOSTILE = "\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\\x1b[2J\x1b[31m\x9b1m\u202eexe.txt"
ESCAPES = ["\x1b", "\x9b", "\x9d", "\u202e", "\x07"]


def stored(cox_home: Path) -> str:
    """Every rollout line and log line cox wrote (not the lossless tool-output archive)."""
    files = [*cox_home.rglob("*.jsonl"), *cox_home.rglob("*.log")]
    assert any(f.suffix == ".jsonl" for f in files), f"no rollout under {cox_home}"
    return "\n".join(f.read_text(errors="replace") for f in files)


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for needle in NEEDLES:
            assert needle not in text, f"{needle!r} leaked:\n{text[-3000:]}"


def test_secrets_read_from_the_workspace_never_leave_the_session(attack):
    attack.file("deploy/notes.txt", CREDS)
    reply = f"The key is {SK} and the token is {GHP}; done."
    out = attack.run([{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "deploy/notes.txt"}}]},
                      {"text": reply, "chunk": 3}])
    assert out.result["subtype"] == "success", out.proc.stderr
    visible = out.results()[0]["visible"]
    assert visible.count("«redacted»") >= 6 and "# deploy settings" in visible  # the rest stays
    assert any(e["level"] == "security" for e in out.events("notice"))
    # every stdout line parsed (the fixture decodes each one); the deltas still spell the reply
    deltas = "".join(e["text"] for e in out.events("text_delta"))
    assert deltas == "The key is «redacted» and the token is «redacted»; done."
    assert out.result["result"] == deltas
    rollout = stored(attack.cox_home)
    for line in rollout.splitlines():
        if line.strip() and line.lstrip().startswith("{"):
            json.loads(line)  # the rollout stays valid JSON too
    assert_no_secret(out.proc.stdout, out.proc.stderr, rollout)


def test_a_provider_error_echoing_the_key_is_redacted_everywhere(attack):
    leak = f"invalid x-api-key: {SK} (Bearer eyJhbGciOiJIUzI1NiJ9.tokenbody)"
    replies = [{"events": [{"error": {"message": f"overloaded for {SK}", "status": 529, "retryable": True,
                                      "retry_after": 0}}]},
               {"error": {"message": leak, "status": 401}}]
    out = attack.run(replies)
    assert out.result["is_error"] and "invalid x-api-key: «redacted»" in out.result["result"]
    assert any("retry 1 of" in e["message"] for e in out.events("notice"))
    assert_no_secret(out.proc.stdout, out.proc.stderr, stored(attack.cox_home))
    text = attack.run(replies, output_format="text")  # the error line on stderr, the result on stdout
    assert "cox: error: model request failed" in text.proc.stderr and "«redacted»" in text.proc.stderr
    assert_no_secret(text.proc.stdout, text.proc.stderr)


def test_escape_sequences_in_a_reply_and_a_tool_name_never_reach_the_text_output(attack):
    replies = [{"tool_calls": [{"id": "t1", "name": f"re{HOSTILE}ad", "input": {"path": f"x{HOSTILE}"}}]},
               {"text": f"Here you go: {HOSTILE} and\x1b[1A\rthe end"}]
    out = attack.run(replies, output_format="text", args=("--verbose",))
    assert out.proc.returncode == 0, out.proc.stderr
    assert "Here you go:" in out.proc.stdout and "exe.txt" in out.proc.stdout and "the end" in out.proc.stdout
    assert "● re" in out.proc.stderr  # --verbose names the call, cleaned
    for stream in (out.proc.stdout, out.proc.stderr):
        for esc in ESCAPES:
            assert esc not in stream, f"{esc!r} reached the terminal:\n{stream!r}"
    # stream-json stays lossless: the escapes are there, escaped by the JSON encoder
    raw = attack.run(replies)
    assert "\\u001b]52" in raw.proc.stdout and raw.events("tool_call_requested")[0]["call"]["name"] == f"re{HOSTILE}ad"
