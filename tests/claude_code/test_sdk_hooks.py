"""Hooks the SDK registers at ``initialize`` run at cox's hook points (``hook_callback``): a
PreToolUse callback that blocks keeps the call from running, and the model reads why."""

from __future__ import annotations

from typing import Any

from tests.claude_code.conftest import collect, run
from tests.claude_code.test_sdk_client import bash, tool_results, turn


def test_a_blocking_pre_tool_use_callback_keeps_the_marker_from_appearing(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, HookMatcher

    cox_sdk.replies([bash("touch marker.txt"), {"text": "blocked, fine"}])
    seen: list[dict[str, Any]] = []

    async def guard(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append(data)
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "markers are not allowed here"}}

    options = cox_sdk.options(permission_mode="bypassPermissions",  # nothing else would stop the call
                              hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[guard])]})

    async def main() -> list[Any]:
        async with ClaudeSDKClient(options) as client:
            return await turn(client, "make the marker")

    messages = run(main)
    assert not (cox_sdk.ws / "marker.txt").exists()
    assert [(d["hook_event_name"], d["tool_name"], d["tool_input"]) for d in seen] == \
        [("PreToolUse", "Bash", {"command": "touch marker.txt"})]
    assert seen[0]["tool_use_id"] == "b1" and seen[0]["cwd"] == str(cox_sdk.ws)
    (block,) = tool_results(messages)
    assert block.is_error and "markers are not allowed here" in str(block.content)
    assert messages[-1].subtype == "success"


def test_a_callback_for_another_tool_is_not_asked_and_the_call_runs(cox_sdk):
    from claude_agent_sdk import HookMatcher

    cox_sdk.replies([bash("touch marker.txt"), {"text": "made"}])
    asked: list[str] = []

    async def guard(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        asked.append(data["tool_name"])
        return {"decision": "block", "reason": "no"}

    async def prompts() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": "make it"}}

    options = cox_sdk.options(permission_mode="bypassPermissions",
                              hooks={"PreToolUse": [HookMatcher(matcher="Write|Edit", hooks=[guard])]})
    messages = run(lambda: collect(prompts(), options))
    assert asked == [] and (cox_sdk.ws / "marker.txt").exists()
    assert messages[-1].subtype == "success"


def test_a_pre_tool_use_callback_may_rewrite_the_input_in_claude_codes_fields(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, HookMatcher

    (cox_sdk.ws / "b.txt").write_text("beta\n")
    cox_sdk.replies([{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]}, {"text": "ok"}])

    async def redirect(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "updatedInput": {"file_path": str(cox_sdk.ws / "b.txt")}}}

    options = cox_sdk.options(hooks={"PreToolUse": [HookMatcher(matcher="Read", hooks=[redirect])]})

    async def main() -> list[Any]:
        async with ClaudeSDKClient(options) as client:
            return await turn(client, "read a")

    (block,) = tool_results(run(main))
    assert "beta" in str(block.content) and "alpha" not in str(block.content)


def test_a_failing_callback_with_on_failure_block_denies_the_call(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, HookMatcher

    cox_sdk.replies([bash("touch marker.txt"), {"text": "blocked"}])

    async def broken(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        raise RuntimeError("the guard crashed")

    options = cox_sdk.options(permission_mode="bypassPermissions",
                              hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[broken], on_failure="block")]})

    async def main() -> list[Any]:
        async with ClaudeSDKClient(options) as client:
            return await turn(client, "make the marker")

    messages = run(main)
    assert not (cox_sdk.ws / "marker.txt").exists()
    (block,) = tool_results(messages)
    assert block.is_error and "the guard crashed" in str(block.content)


def test_a_stop_callback_that_always_continues_cannot_loop_the_model_forever(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, HookMatcher

    cox_sdk.replies([{"text": f"answer {i}"} for i in range(10)])
    stops: list[bool] = []

    async def again(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        stops.append(data["stop_hook_active"])
        return {"decision": "block", "reason": "keep going"}

    options = cox_sdk.options(hooks={"Stop": [HookMatcher(hooks=[again])]})

    async def main() -> list[Any]:
        async with ClaudeSDKClient(options) as client:
            return await turn(client, "answer")

    messages = run(main)
    assert messages[-1].subtype == "success" and messages[-1].result == "answer 5"
    assert stops == [False, True, True, True, True, True]


def test_a_user_prompt_submit_callback_that_blocks_keeps_the_prompt_from_the_model(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, HookMatcher

    cox_sdk.replies([{"text": "the first reply the model gives"}])

    async def screen(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if "password" in data["prompt"]:
            return {"decision": "block", "reason": "no passwords in prompts"}
        return {}

    options = cox_sdk.options(hooks={"UserPromptSubmit": [HookMatcher(hooks=[screen])]})

    async def main() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(options) as client:
            return await turn(client, "my password is hunter2"), await turn(client, "hello")

    blocked, allowed = run(main)
    result = blocked[-1]
    assert result.is_error and result.terminal_reason == "hook_stopped"
    assert any("no passwords in prompts" in e for e in result.errors or [])
    assert allowed[-1].result == "the first reply the model gives"  # the blocked prompt took no reply
