"""Issue 11, class 1: a backslash-newline is deleted by bash before it splits words, so the
classifier joins the line the same way (or says it cannot) before it judges it."""

from __future__ import annotations

import subprocess

import pytest

from cox.policy.bash import classify, split
from cox.protocol.types import PermissionMode, Risk

from .helpers import engine, kind

DENY = engine(deny=["Bash(rm:*)", "Bash(git push:*)"])


@pytest.mark.parametrize("line", [
    "comm\\\nand rm -rf src", "r\\\nm -rf src", "rm\\\n -rf src", "\\\nrm -rf src", "command r\\\nm -rf src",
    "echo hi; r\\\nm x", "git pu\\\nsh origin", "git \\\n-C . pu\\\nsh", "sh -c 'r\\\nm x'", "eval \"r\\\nm x\"",
    "ti\\\nme rm x", "\"r\\\nm\" x", "r\\\n\\\nm x", "(r\\\nm x)", "echo $(r\\\nm x)",
])
def test_a_continuation_inside_a_word_never_hides_the_command_from_deny(line: str) -> None:
    assert kind(DENY, line, PermissionMode.BYPASS) == "deny", split(line)
    assert classify(line).risk is not Risk.READ_ONLY


@pytest.mark.parametrize(("line", "segments"), [
    ("comm\\\nand rm -rf src", ("rm -rf src",)),
    ("ls \\\n  -la", ("ls -la",)),
    ("git log \\\n --oneline", ("git log --oneline",)),
    ("ec\\\nho hi", ("echo hi",)),
])
def test_the_joined_line_is_what_is_judged(line: str, segments: tuple[str, ...]) -> None:
    assert split(line).segments == segments


def test_a_continuation_in_an_ordinary_multi_line_command_stays_read_only() -> None:
    c = classify("grep -rn foo \\\n  src \\\n  | head")
    assert c.risk is Risk.READ_ONLY and not c.opaque


@pytest.mark.parametrize(("line", "segments"), [
    ("echo 'a\\\nb'", ("echo 'a\\\nb'",)),  # single quotes keep it
    ("echo $'a\\\nb'", ("echo 'a\\\nb'",)),  # so does $'…' (bash keeps an escape it does not know)'
    ("cat <<'EOF'\na\\\nb\nEOF", ("cat <<'EOF'\na\\\nb\nEOF",)),  # and a quoted here-document
    ("echo a # c \\\nls", ("echo a", "ls")),  # a comment ends at the newline
])
def test_continuations_bash_keeps_are_kept(line: str, segments: tuple[str, ...]) -> None:
    s = split(line)
    assert not s.opaque, s
    assert s.segments == segments


def test_an_escaped_backslash_before_a_newline_is_not_a_continuation() -> None:
    # ``\\`` is one backslash; the newline after it ends the command
    assert split("echo a\\\\\nrm x").segments == ("echo 'a\\'", "rm x")


def test_a_continuation_inside_an_unquoted_here_document_makes_the_line_opaque() -> None:
    s = split("cat <<EOF\na\\\nb\nEOF")
    assert s.opaque and "here-document" in s.reasons[0]


def test_joining_matches_bash_word_for_word() -> None:
    line = "printf '[%s]' comm\\\nand a\\\n b \"c\\\nd\" 'e\\\nf'"
    out = subprocess.run(["bash", "-c", line], capture_output=True, text=True, check=True).stdout
    assert out == "[command][a][b][cd][e\\\nf]"
    assert split(line).segments == ("printf '[%s]' command a b cd 'e\\\nf'",)
