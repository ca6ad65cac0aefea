"""PreToolUse, PostToolUse and PostToolUseFailure as real command hooks through `cox run`."""

from __future__ import annotations

import json

import pytest

from .rig import Rig, bash, one, read


def test_exit_2_blocks_the_call_and_its_stderr_reaches_the_model(rig: Rig) -> None:
    rig.hooks({"PreToolUse": one(rig.script("guard.sh", "echo 'no touching today' >&2\nexit 2"), "Bash")})
    run = rig.run([bash("touch marker"), {"text": "ok"}])
    assert not (rig.ws / "marker").exists()
    done = run.of("tool_call_done")[0]["result"]
    assert done["status"] == "denied" and "no touching today" in done["visible"]
    assert "no touching today" in run.request_text(-1)  # the tool result the model read


@pytest.mark.parametrize(("matcher", "fires"), [
    ("Bash", True), ("bash", True), ("Edit|Bash", True), ("B.*", True), ("*", True), ("", True),
    ("Read", False), ("Bas", False), ("mcp__.*", False),
])
def test_matchers_see_cox_and_claude_code_names(rig: Rig, matcher: str, fires: bool) -> None:
    rig.hooks({"PreToolUse": one(rig.script("guard.sh", "exit 2"), matcher)})
    rig.run([bash("touch marker"), {"text": "ok"}])
    assert (rig.ws / "marker").exists() is not fires


def test_the_hook_gets_claude_codes_input_on_stdin(rig: Rig) -> None:
    rig.hooks({"PreToolUse": one(rig.logger("pre"), "Read"), "PostToolUse": one(rig.logger("post"), "Read")})
    run = rig.run([read("a.txt"), {"text": "ok"}])
    sid = run.of("session_started")[0]["session_id"]
    [pre], [post] = rig.seen("pre"), rig.seen("post")
    assert pre["hook_event_name"] == "PreToolUse" and pre["session_id"] == sid and pre["cwd"] == str(rig.ws)
    assert pre["tool_name"] == "Read" and pre["cox_tool_name"] == "read" and pre["tool_use_id"] == "r1"
    assert pre["tool_input"]["file_path"] == str(rig.ws / "a.txt") and pre["tool_input"]["path"] == "a.txt"
    assert pre["transcript_path"].endswith(f"{sid}.jsonl") and pre["permission_mode"] == "bypassPermissions"
    assert post["hook_event_name"] == "PostToolUse" and "alpha" in post["tool_response"]["output"]


def test_updated_input_rewrites_the_command(rig: Rig) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                     "updatedInput": {"command": "touch rewritten"}}}
    rig.hooks({"PreToolUse": one(rig.script("rewrite.sh", f"cat >/dev/null\necho '{json.dumps(answer)}'"), "Bash")})
    run = rig.run([bash("touch marker"), {"text": "ok"}])
    assert (rig.ws / "rewritten").exists() and not (rig.ws / "marker").exists()
    assert run.of("tool_call_done")[0]["result"]["status"] == "ok"


def test_updated_file_path_moves_a_write(rig: Rig) -> None:
    # Claude Code's file_path is cox's path: a hook that redirects a Write redirects cox's write.
    jq = ('jq -c \'{hookSpecificOutput: {hookEventName: "PreToolUse", '
          'updatedInput: (.tool_input + {file_path: (.cwd + "/moved.txt")})}}\'')
    rig.hooks({"PreToolUse": one(rig.script("move.sh", jq), "Write")})
    rig.run([{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "n.txt", "content": "new\n"}}]},
             {"text": "ok"}])
    assert (rig.ws / "moved.txt").read_text() == "new\n" and not (rig.ws / "n.txt").exists()


def test_json_deny_denies_and_allow_does_not_loosen(rig: Rig) -> None:
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "policy says no"}}
    rig.hooks({"PreToolUse": one(rig.script("deny.sh", f"echo '{json.dumps(deny)}'"), "Bash")})
    run = rig.run([bash("touch marker"), {"text": "ok"}])
    assert not (rig.ws / "marker").exists() and "policy says no" in run.of("tool_call_done")[0]["result"]["visible"]
    # "allow" from a hook never turns cox's own deny (headless: a command that would ask) into a run.
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    rig.hooks({"PreToolUse": one(rig.script("allow.sh", f"echo '{json.dumps(allow)}'"), "Bash")})
    run = rig.run([bash("rm -f a.txt"), {"text": "ok"}], mode="default")
    assert (rig.ws / "a.txt").exists() and run.of("tool_call_done")[0]["result"]["status"] == "denied"


def test_post_tool_use_context_reaches_the_model(rig: Rig) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "REMEMBER-42"}}
    rig.hooks({"PostToolUse": one(rig.script("ctx.sh", f"echo '{json.dumps(answer)}'"))})
    run = rig.run([read("a.txt"), {"text": "ok"}])
    assert "REMEMBER-42" in run.request_text(-1) and "REMEMBER-42" not in run.request_text(0)


def test_post_tool_use_exit_2_feeds_stderr_back(rig: Rig) -> None:
    rig.hooks({"PostToolUse": one(rig.script("lint.sh", "echo 'lint: 3 problems' >&2\nexit 2"), "Bash")})
    run = rig.run([bash("touch made"), {"text": "ok"}])
    assert (rig.ws / "made").exists() and "lint: 3 problems" in run.request_text(-1)


def test_a_failed_call_fires_post_tool_use_failure_only(rig: Rig) -> None:
    rig.hooks({"PostToolUse": one(rig.logger("ok")), "PostToolUseFailure": one(rig.logger("failed"))})
    rig.run([read("missing.txt"), {"text": "ok"}])
    [failed] = rig.seen("failed")
    assert failed["hook_event_name"] == "PostToolUseFailure" and failed["tool_name"] == "Read"
    assert "missing.txt" in failed["error"] and rig.seen("ok") == []
