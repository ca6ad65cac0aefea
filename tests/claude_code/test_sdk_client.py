"""``ClaudeSDKClient`` against cox: several turns on one process, each with its result; the
client's control requests (interrupt, set_permission_mode) and cox's own (``can_use_tool``)."""

from __future__ import annotations

from typing import Any

from tests.claude_code.conftest import run


async def turn(client: Any, prompt: str | None = None) -> list[Any]:
    if prompt is not None:
        await client.query(prompt)
    return [message async for message in client.receive_response()]


def texts(messages: list[Any]) -> list[str]:
    from claude_agent_sdk import AssistantMessage, TextBlock

    return [b.text for m in messages if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)]


def tool_results(messages: list[Any]) -> list[Any]:
    from claude_agent_sdk import ToolResultBlock, UserMessage

    return [b for m in messages if isinstance(m, UserMessage) and isinstance(m.content, list) for b in m.content
            if isinstance(b, ToolResultBlock)]


def bash(command: str, call_id: str = "b1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "bash", "input": {"command": command}}]}


def test_multi_turn_client_gets_a_result_after_each_turn(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, ResultMessage

    cox_sdk.replies([{"text": "first answer"}, {"text": "second answer"}, {"text": "third answer"}])

    async def main() -> list[list[Any]]:
        async with ClaudeSDKClient(cox_sdk.options()) as client:
            return [await turn(client, "one"), await turn(client, "two"), await turn(client, "three")]

    turns = run(main)
    assert [texts(t) for t in turns] == [["first answer"], ["second answer"], ["third answer"]]
    results = [t[-1] for t in turns]
    assert all(isinstance(r, ResultMessage) and r.subtype == "success" for r in results)
    assert [sum(isinstance(m, ResultMessage) for m in t) for t in turns] == [1, 1, 1]
    assert len({r.session_id for r in results}) == 1


def test_can_use_tool_allow_runs_the_call(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, PermissionResultAllow

    cox_sdk.replies([bash("touch allowed.txt"), {"text": "done"}])
    asked: list[tuple[str, dict[str, Any]]] = []

    async def allow(name: str, given: dict[str, Any], context: Any) -> Any:
        asked.append((name, given))
        assert context.tool_use_id == "b1"
        return PermissionResultAllow()

    async def main() -> list[Any]:
        async with ClaudeSDKClient(cox_sdk.options(can_use_tool=allow)) as client:
            return await turn(client, "make a file")

    messages = run(main)
    assert asked == [("Bash", {"command": "touch allowed.txt"})]
    assert (cox_sdk.ws / "allowed.txt").exists()
    assert messages[-1].subtype == "success" and messages[-1].permission_denials == []


def test_can_use_tool_allow_with_updated_input_runs_the_new_input(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, PermissionResultAllow

    cox_sdk.replies([bash("touch asked.txt"), {"text": "done"}])

    async def rewrite(name: str, given: dict[str, Any], context: Any) -> Any:
        return PermissionResultAllow(updated_input={**given, "command": "touch instead.txt"})

    async def main() -> list[Any]:
        async with ClaudeSDKClient(cox_sdk.options(can_use_tool=rewrite)) as client:
            return await turn(client, "make a file")

    messages = run(main)
    assert (cox_sdk.ws / "instead.txt").exists() and not (cox_sdk.ws / "asked.txt").exists()
    assert messages[-1].subtype == "success"


def test_can_use_tool_deny_gives_the_message_to_the_model_and_the_turn_goes_on(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, PermissionResultDeny

    cox_sdk.replies([bash("touch denied.txt"), {"text": "I will not touch it."}])

    async def deny(name: str, given: dict[str, Any], context: Any) -> Any:
        return PermissionResultDeny(message="no files today, read instead")

    async def main() -> list[Any]:
        async with ClaudeSDKClient(cox_sdk.options(can_use_tool=deny)) as client:
            return await turn(client, "make a file")

    messages = run(main)
    assert not (cox_sdk.ws / "denied.txt").exists()
    (block,) = tool_results(messages)
    assert block.is_error and "no files today, read instead" in str(block.content)
    assert texts(messages) == ["I will not touch it."]  # the model was asked again: the turn went on
    result = messages[-1]
    assert result.subtype == "success" and not result.is_error
    assert result.permission_denials == [{"tool_name": "Bash", "tool_use_id": "b1",
                                          "tool_input": {"command": "touch denied.txt"}}]


def test_interrupt_during_a_running_sleep_ends_the_turn_and_the_next_one_runs(cox_sdk):
    from claude_agent_sdk import AssistantMessage, ClaudeSDKClient, ResultMessage, ToolUseBlock

    cox_sdk.replies([bash("sleep 300"), {"text": "after the interrupt"}])

    async def main() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(cox_sdk.options(permission_mode="bypassPermissions")) as client:
            await client.query("sleep a long time")
            first: list[Any] = []
            async for message in client.receive_response():
                first.append(message)
                if isinstance(message, AssistantMessage) and any(isinstance(b, ToolUseBlock) for b in message.content):
                    await client.interrupt()
            return first, await turn(client, "now answer")

    first, second = run(main)  # well before the sleep's 300 s: pytest-timeout fails a hang at 120
    result = first[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "error_during_execution" and result.is_error
    assert result.terminal_reason in ("aborted_tools", "aborted_streaming")
    assert texts(second) == ["after the interrupt"] and second[-1].subtype == "success"


def test_set_permission_mode_changes_what_the_next_call_may_do(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, SystemMessage

    cox_sdk.replies([bash("touch marker.txt"), {"text": "denied"}, bash("touch marker.txt", "b2"), {"text": "made"}])

    async def main() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(cox_sdk.options()) as client:
            before = await turn(client, "make it")
            await client.set_permission_mode("bypassPermissions")
            return before, await turn(client, "make it again")

    before, after = run(main)
    assert before[-1].permission_denials and before[-1].permission_denials[0]["tool_name"] == "Bash"
    assert before[-1].subtype == "success"  # a denial is not an error in Claude Code's dialect
    assert (cox_sdk.ws / "marker.txt").exists() and after[-1].permission_denials == []
    init = next(m for m in after if isinstance(m, SystemMessage) and m.subtype == "init")
    assert init.data["permissionMode"] == "bypassPermissions"


def test_rewind_files_puts_the_files_back_as_they_were_before_that_user_message(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, UserMessage

    def write(text: str, call_id: str) -> dict[str, Any]:
        return {"tool_calls": [{"id": call_id, "name": "write", "input": {"path": "b.txt", "content": text}}]}

    cox_sdk.replies([write("one\n", "w1"), {"text": "wrote one"}, write("two\n", "w2"), {"text": "wrote two"}])
    options = cox_sdk.options(permission_mode="acceptEdits", enable_file_checkpointing=True,
                              extra_args={"replay-user-messages": None})

    async def main() -> str:
        async with ClaudeSDKClient(options) as client:
            await turn(client, "write one")
            second = await turn(client, "write two")
            prompt = next(m for m in second if isinstance(m, UserMessage) and m.content == "write two")
            assert prompt.uuid and (cox_sdk.ws / "b.txt").read_text() == "two\n"
            await client.rewind_files(prompt.uuid)
            try:
                await client.rewind_files("00000000-0000-0000-0000-000000000000")
            except Exception as exc:  # the SDK raises the error response
                return str(exc)
            return ""

    error = run(main)
    assert (cox_sdk.ws / "b.txt").read_text() == "one\n"
    assert "no user message" in error


def test_a_can_use_tool_question_still_open_when_the_turn_is_interrupted_is_withdrawn(cox_sdk):
    import anyio
    from claude_agent_sdk import ClaudeSDKClient, PermissionResultAllow, ResultMessage

    cox_sdk.replies([bash("touch late.txt"), {"text": "next turn"}])
    asked = anyio.Event()

    withdrawn: list[bool] = []

    async def slow(name: str, given: dict[str, Any], context: Any) -> Any:
        asked.set()
        try:
            await anyio.sleep(3600)  # a person who never answers; cancelled by control_cancel_request
        except anyio.get_cancelled_exc_class():
            withdrawn.append(True)
            raise
        return PermissionResultAllow()

    async def main() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(cox_sdk.options(can_use_tool=slow)) as client:
            await client.query("make it")
            await asked.wait()
            await client.interrupt()
            first = [m async for m in client.receive_response()]
            second = await turn(client, "go on")
            assert withdrawn == [True]  # while the client is still connected: cox withdrew the question
            return first, second

    first, second = run(main)
    assert isinstance(first[-1], ResultMessage) and first[-1].subtype == "error_during_execution"
    assert texts(second) == ["next turn"] and not (cox_sdk.ws / "late.txt").exists()


def test_a_second_message_sent_while_a_turn_runs_waits_for_it(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, ResultMessage

    cox_sdk.replies([{"text": "slow answer", "delay_ms": 300}, {"text": "second answer"}])

    async def main() -> list[Any]:
        async with ClaudeSDKClient(cox_sdk.options()) as client:
            await client.query("first")
            await client.query("second")  # most likely while the first still runs: each gets its own turn
            first = [m async for m in client.receive_response()]
            return [first, [m async for m in client.receive_response()]]

    first, second = run(main)
    assert [texts(first), texts(second)] == [["slow answer"], ["second answer"]]
    assert all(isinstance(t[-1], ResultMessage) and t[-1].subtype == "success" for t in (first, second))
