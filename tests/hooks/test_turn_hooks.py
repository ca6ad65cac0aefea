"""The turn's and session's edges as real command hooks through `cox run`: UserPromptSubmit,
Stop, SessionStart, SessionEnd, PermissionRequest, Notification and PreCompact."""

from __future__ import annotations

import json

from .rig import Rig, bash, one, start


def test_user_prompt_submit_stdout_is_context_for_the_model(rig: Rig) -> None:
    rig.hooks({"UserPromptSubmit": one(rig.script("ctx.sh", "cat >/dev/null\necho 'CTX-7: the build is red'"))})
    run = rig.run([{"text": "ok"}], "fix it")
    first = run.requests[0]["messages"][-1]
    assert [b["text"] for b in first["content"]] == ["fix it", "CTX-7: the build is red"]
    assert [e["text"] for e in run.of("user_message")] == ["fix it"]  # the person's words, unchanged


def test_user_prompt_submit_exit_2_blocks_the_prompt(rig: Rig) -> None:
    rig.hooks({"UserPromptSubmit": one(rig.script("block.sh", "echo 'no secrets in prompts' >&2\nexit 2"))})
    run = rig.run([{"text": "never sent"}], "my password is hunter2")
    assert run.requests == [] and run.result["subtype"] == "error_permission_denied"
    assert "no secrets in prompts" in run.result["result"]


def test_user_prompt_submit_json_block_and_context(rig: Rig) -> None:
    answer = {"decision": "block", "reason": "prompt blocked by policy"}
    rig.hooks({"UserPromptSubmit": one(rig.script("block.sh", f"echo '{json.dumps(answer)}'"))})
    run = rig.run([{"text": "never sent"}])
    assert run.requests == [] and "prompt blocked by policy" in run.result["result"]
    answer = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "JSON-CTX"}}
    rig.hooks({"UserPromptSubmit": one(rig.script("ctx.sh", f"echo '{json.dumps(answer)}'"))})
    run = rig.run([{"text": "ok"}])
    assert "JSON-CTX" in run.request_text(0)


def test_stop_exit_2_keeps_the_turn_going_once(rig: Rig) -> None:
    stop = rig.script("stop.sh", f"""jq -c . >> {rig.out}/stop.jsonl
if [ ! -e {rig.out}/stopped-once ]; then touch {rig.out}/stopped-once; echo 'also run the tests' >&2; exit 2; fi""")
    rig.hooks({"Stop": one(stop)})
    run = rig.run([{"text": "done"}, {"text": "tests pass"}])
    assert [e["text"] for e in run.of("user_message")] == ["go", "also run the tests"]
    assert "also run the tests" in run.request_text(1) and run.result["result"].endswith("tests pass")
    assert [s["stop_hook_active"] for s in rig.seen("stop")] == [False, True]


def test_a_stop_hook_that_always_blocks_cannot_loop_forever(rig: Rig) -> None:
    rig.hooks({"Stop": one(rig.script("stop.sh", "echo 'keep going' >&2\nexit 2"))})
    run = rig.run([{"text": f"reply {i}"} for i in range(10)])
    assert run.result["subtype"] == "success" and len(run.requests) == 6  # the first reply and 5 more
    assert any("asked to continue 5 times" in w for w in run.warnings())


def test_session_start_context_and_session_end(rig: Rig) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "SESSION-CTX"}}
    start = rig.script("start.sh", f"jq -c . >> {rig.out}/start.jsonl\necho '{json.dumps(answer)}'")
    rig.hooks({"SessionStart": one(start, "startup"), "SessionEnd": one(rig.logger("end"))})
    run = rig.run([{"text": "ok"}])
    assert "SESSION-CTX" in run.request_text(0)
    [started], [ended] = rig.seen("start"), rig.seen("end")
    assert started["source"] == "startup" and started["hook_event_name"] == "SessionStart"
    assert ended["hook_event_name"] == "SessionEnd" and ended["session_id"] == run.result["session_id"]


def test_session_start_matcher_on_source(rig: Rig) -> None:
    rig.hooks({"SessionStart": one(rig.logger("start"), "resume")})
    rig.run([{"text": "ok"}])
    assert rig.seen("start") == []


def test_permission_request_hook_denies_before_anyone_is_asked(rig: Rig) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                     "decision": {"behavior": "deny", "message": "not on my watch"}}}
    rig.hooks({"PermissionRequest": one(rig.script("perm.sh", f"jq -c . >> {rig.out}/perm.jsonl\n"
                                                             f"echo '{json.dumps(answer)}'"), "Bash")})
    run = rig.run([bash("touch marker"), {"text": "ok"}], "go", "--approve", "on-request", mode="default")
    assert not (rig.ws / "marker").exists() and run.of("approval_required") == []
    assert "not on my watch" in run.of("tool_call_done")[0]["result"]["visible"]
    assert rig.seen("perm")[0]["tool_input"] == {"command": "touch marker"}


def test_notification_when_approval_is_asked(rig: Rig) -> None:
    rig.hooks({"Notification": one(rig.logger("notify"), "permission_prompt")})
    live = start(rig, [bash("touch marker"), {"text": "ok"}], "--approve", "on-request")
    live.send({"type": "user_turn", "text": "touch it"})
    live.until("approval_required")
    live.send({"type": "approve", "call_id": "b1", "decision": "allow"})
    live.finish()
    [note] = rig.seen("notify")
    assert note["notification_type"] == "permission_prompt" and "bash" in note["message"]
    assert (rig.ws / "marker").exists()


def test_pre_compact_on_compact(rig: Rig) -> None:
    rig.hooks({"PreCompact": one(rig.logger("compact"), "manual")}, extra="")
    with (rig.cox_home / "config.toml").open("a") as f:
        f.write("[context]\nkeep_turns = 0\n")
    live = start(rig, [{"text": "first"}, {"text": "the summary"}])
    live.send({"type": "user_turn", "text": "one"})
    live.until("turn_done")
    live.send({"type": "compact"})
    live.until("compacted")
    live.finish()
    [seen] = rig.seen("compact")
    assert seen["hook_event_name"] == "PreCompact" and seen["trigger"] == "manual"
