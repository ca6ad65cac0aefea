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
    assert pre["tool_input"] == {"file_path": str(rig.ws / "a.txt")}  # Claude Code's fields only
    assert pre["cox_tool_input"] == {"path": "a.txt"}  # cox's, beside them
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


# -- Claude Code's fields, both ways (cox.actors.tools.spelling) -------------------------------------


def _uses(run) -> list[dict]:  # type: ignore[no-untyped-def]
    """The tool_use blocks of the last request: the model's own history."""
    return [b for m in run.requests[-1]["messages"] if m["role"] == "assistant" for b in m["content"]
            if b.get("type") == "tool_use"]


def test_bash_timeouts_are_milliseconds_both_ways(rig: Rig) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                     "updatedInput": {"command": f"touch {rig.ws}/rewritten", "timeout": 2000}}}
    rig.hooks({"PreToolUse": one(rig.logger("pre", f"echo '{json.dumps(answer)}'"), "Bash")})
    run = rig.run([{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "touch marker", "timeout": 30}}]},
                   {"text": "ok"}])
    [pre] = rig.seen("pre")
    assert pre["tool_name"] == "Bash" and pre["tool_input"] == {"command": "touch marker", "timeout": 30000}
    assert (rig.ws / "rewritten").exists() and not (rig.ws / "marker").exists()
    # the model called cox's bash: its history shows the hook's change in seconds, as it spells it
    assert [u["input"] for u in _uses(run)] == [{"command": f"touch {rig.ws}/rewritten", "timeout": 2}]


def test_grep_todo_and_multiedit_reach_a_hook_in_claude_codes_fields(rig: Rig) -> None:
    rig.hooks({"PreToolUse": one(rig.logger("pre"))})
    rig.run([{"tool_calls": [
        {"id": "g1", "name": "grep", "input": {"pattern": "alp", "case_insensitive": True, "context": 1}},
        {"id": "g2", "name": "grep", "input": {"pattern": "alp", "count": True, "max_results": 3}},
        {"id": "t1", "name": "todo_write", "input": {"todos": [{"content": "Run the tests", "status": "pending"}]}},
        {"id": "m1", "name": "edit", "input": {"path": "a.txt", "edits": [{"old_string": "alpha", "new_string": "beta"},
                                                                         {"old_string": "beta", "new_string": "gamma"}]}},
    ]}, {"text": "ok"}])
    seen = {p["tool_use_id"]: p for p in rig.seen("pre")}
    assert (seen["g1"]["tool_name"], seen["g1"]["tool_input"]) == (
        "Grep", {"pattern": "alp", "-i": True, "-C": 1, "output_mode": "content"})
    assert seen["g2"]["tool_input"] == {"pattern": "alp", "output_mode": "count", "head_limit": 3}
    assert seen["t1"]["tool_input"] == {"todos": [{"content": "Run the tests", "status": "pending",
                                                   "activeForm": "Run the tests"}]}
    assert seen["m1"]["tool_name"] == "MultiEdit" and seen["m1"]["cox_tool_name"] == "edit"
    assert seen["m1"]["tool_input"]["file_path"] == str(rig.ws / "a.txt")
    assert (rig.ws / "a.txt").read_text() == "gamma\n"


@pytest.mark.parametrize(("matcher", "fires"), [("MultiEdit", True), ("Edit", True), ("edit", True),
                                                 ("Write", False)])
def test_a_multiedit_matches_both_edit_names(rig: Rig, matcher: str, fires: bool) -> None:
    rig.hooks({"PreToolUse": one(rig.script("guard.sh", "exit 2"), matcher)})
    rig.run([{"tool_calls": [{"id": "m1", "name": "MultiEdit", "input": {"file_path": str(rig.ws / "a.txt"), "edits": [
        {"old_string": "alpha", "new_string": "beta"}]}}]}, {"text": "ok"}])
    assert ((rig.ws / "a.txt").read_text() == "alpha\n") is fires


def test_apply_patch_still_matches_edit_hooks(rig: Rig) -> None:
    rig.hooks({"PreToolUse": one(rig.logger("pre", "exit 2"), "Edit")})
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+patched\n*** End Patch\n"
    rig.run([{"tool_calls": [{"id": "p1", "name": "apply_patch", "input": {"patch": patch}}]}, {"text": "ok"}])
    [pre] = rig.seen("pre")
    assert pre["tool_name"] == "apply_patch" and pre["tool_input"] == {"patch": patch}
    assert (rig.ws / "a.txt").read_text() == "alpha\n"


def test_a_guard_written_for_claude_code_blocks_the_models_write_in_either_spelling(rig: Rig) -> None:
    """The hook of tests/hooks/test_claude_settings.py's kind: it reads tool_input.file_path."""
    guard = ("python3 -c \"import json, sys; d = json.load(sys.stdin); "
             "sys.exit(2 if d['tool_input'].get('file_path', '').endswith('.env') else 0)\"")
    rig.hooks({"PreToolUse": one(guard, "Write|Edit|MultiEdit")})
    run = rig.run([{"tool_calls": [
        {"id": "w1", "name": "Write", "input": {"file_path": str(rig.ws / ".env"), "content": "K=1\n"}},
        {"id": "w2", "name": "write", "input": {"path": ".env", "content": "K=2\n"}},
        {"id": "w3", "name": "Write", "input": {"file_path": "ok.txt", "content": "fine\n"}}]}, {"text": "ok"}])
    done = {e["call_id"]: e["result"]["status"] for e in run.of("tool_call_done")}
    assert done == {"w1": "denied", "w2": "denied", "w3": "ok"}
    assert not (rig.ws / ".env").exists() and (rig.ws / "ok.txt").read_text() == "fine\n"


def test_updated_input_in_claude_codes_fields_for_a_claude_code_call(rig: Rig) -> None:
    """The model called Write; the hook moves it with file_path: the write lands there, and the
    model's history shows its own Write with the new file_path."""
    jq = ('jq -c \'{hookSpecificOutput: {hookEventName: "PreToolUse", '
          'updatedInput: (.tool_input + {file_path: (.cwd + "/moved.txt")})}}\'')
    rig.hooks({"PreToolUse": one(rig.script("move.sh", jq), "Write")})
    run = rig.run([{"tool_calls": [{"id": "w1", "name": "Write", "input": {"file_path": "n.txt", "content": "new\n"}}]},
                   {"text": "ok"}])
    assert (rig.ws / "moved.txt").read_text() == "new\n" and not (rig.ws / "n.txt").exists()
    assert [(u["name"], u["input"]) for u in _uses(run)] == [
        ("Write", {"file_path": str(rig.ws / "moved.txt"), "content": "new\n"})]
