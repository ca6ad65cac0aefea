"""What an exit code and a stdout mean (Claude Code's contract), and which hooks a matcher takes:
pure functions, no process."""

from __future__ import annotations

import json

import pytest

from cox.hooks.answer import interpret, merge
from cox.hooks.run import Outcome
from cox.hooks.spec import HookSpec, parse_hooks


def spec(event: str, matcher: str = "") -> HookSpec:
    return HookSpec(event, matcher, "./h.sh", 60.0, "test")


def ok(answer: object) -> Outcome:
    return Outcome(0, json.dumps(answer).encode())


@pytest.mark.parametrize(("event", "key"), [
    ("PreToolUse", "deny"), ("PermissionRequest", "deny"), ("UserPromptSubmit", "block"), ("Stop", "continue"),
    ("PostToolUse", "context"), ("PostToolUseFailure", "context"),
])
def test_exit_2_blocks_with_stderr(event: str, key: str) -> None:
    assert interpret(spec(event), Outcome(2, b"ignored stdout", b"why not\n")) == {key: "why not"}


@pytest.mark.parametrize("event", ["SessionStart", "SessionEnd", "Notification", "PreCompact"])
def test_exit_2_on_an_event_that_cannot_block_is_a_warning(event: str) -> None:
    assert "cannot block" in interpret(spec(event), Outcome(2, b"", b"no"))["warnings"][0]


def test_other_exits_and_timeouts_are_warnings_and_no_answer() -> None:
    for outcome in (Outcome(1, b'{"decision": "block"}', b"boom"), Outcome(None, timed_out=True),
                    Outcome(None, error="could not start: no bash")):
        answer = interpret(spec("PreToolUse"), outcome)
        assert list(answer) == ["warnings"]


def test_json_fields() -> None:
    pre = spec("PreToolUse")
    assert interpret(pre, ok({"decision": "block", "reason": "r"})) == {"deny": "r"}
    assert interpret(pre, ok({"continue": False, "stopReason": "halt"})) == {"deny": "halt"}
    assert interpret(pre, ok({"hookSpecificOutput": {"permissionDecision": "ask"}})) == {}
    assert interpret(pre, ok({"hookSpecificOutput": {"permissionDecision": "deny", "updatedInput": {"a": 1}}})) \
        == {"deny": "denied by a PreToolUse hook"}
    assert interpret(pre, ok({"hookSpecificOutput": {"updatedInput": {"a": 1}}})) == {"input": {"a": 1}}
    assert interpret(spec("Stop"), ok({"decision": "block", "reason": "more"})) == {"continue": "more"}
    assert interpret(spec("Stop"), ok({"continue": False, "decision": "block", "reason": "x"})) == {}
    assert interpret(spec("UserPromptSubmit"), ok({"systemMessage": "hi"})) == {"notices": ["hi"]}
    assert interpret(spec("UserPromptSubmit"), Outcome(0, b"plain text\n")) == {"context": "plain text"}
    assert interpret(spec("PreToolUse"), Outcome(0, b"plain text\n")) == {}


def test_merge_a_deny_wins_and_texts_join() -> None:
    assert merge([{"input": {"a": 1}}, {"deny": "no"}, {"deny": "never"}]) == {"deny": "no\nnever"}
    assert merge([{"context": "a"}, {}, {"context": "b", "warnings": ["w"]}]) == {"context": "a\nb", "warnings": ["w"]}
    assert merge([{}, {}]) is None


@pytest.mark.parametrize(("matcher", "names", "hit"), [
    ("", ("bash",), True), ("*", ("x",), True), ("Bash", ("Bash", "bash"), True), ("bash", ("Bash", "bash"), True),
    ("Edit|Write", ("Write", "write"), True), ("mcp__gh__.*", ("mcp__gh__issue",), True),
    ("Bash", ("BashOutput",), False), ("Write", ("Edit", "edit"), False), ("(", ("(",), True),
])
def test_matchers(matcher: str, names: tuple[str, ...], hit: bool) -> None:
    assert spec("PreToolUse", matcher).matches(names) is hit


def test_parse_skips_what_it_cannot_run_and_says_where() -> None:
    specs, warnings = parse_hooks({
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "a", "timeout": 5},
                                                     {"type": "http", "url": "x"}, {"command": ""}]}],
        "Nope": [], "Stop": {"hooks": []}, "sandbox": False,
    }, "f.json")
    assert [(s.event, s.matcher, s.command, s.timeout_s) for s in specs] == [("PreToolUse", "Bash", "a", 5.0)]
    assert len(warnings) == 4 and all(w.startswith("f.json: ") for w in warnings)
    assert parse_hooks([], "g") == ([], ["g: hooks is not an object (event name → list of matchers); its hooks are skipped"])
