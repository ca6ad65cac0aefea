"""The SDK's plain ``query()`` against cox: it failed after 60 s with ``Control request timeout:
initialize`` when cox read only its own Submissions."""

from __future__ import annotations

from tests.claude_code.conftest import collect, kinds, run


def test_plain_query_gets_init_the_answer_and_one_result(cox_sdk):
    from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, TextBlock

    cox_sdk.replies([{"text": "Hello from cox."}])
    messages = run(lambda: collect("say hello", cox_sdk.options()))
    assert kinds(messages) == ["SystemMessage", "AssistantMessage", "ResultMessage"]
    init, answer, result = messages
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert init.data["cwd"] == str(cox_sdk.ws) and "Bash" in init.data["tools"] and "Read" in init.data["tools"]
    assert isinstance(answer, AssistantMessage) and answer.model == "scripted"
    assert [b.text for b in answer.content if isinstance(b, TextBlock)] == ["Hello from cox."]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error, result.result, result.num_turns) == ("success", False, "Hello from cox.", 1)
    assert result.session_id == init.data["session_id"] and len(result.session_id) == 36  # a UUID
    assert result.stop_reason == "end_turn" and result.terminal_reason == "completed"
    assert "scripted" in (result.model_usage or {}) and result.permission_denials == []


def test_query_with_a_tool_call_shows_claude_code_names_and_the_result(cox_sdk):
    from claude_agent_sdk import AssistantMessage, ResultMessage, ToolResultBlock, ToolUseBlock, UserMessage

    cox_sdk.replies([{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
                     {"text": "It says alpha."}])
    messages = run(lambda: collect("read a.txt", cox_sdk.options()))
    uses = [b for m in messages if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, ToolUseBlock)]
    assert [(u.id, u.name, u.input) for u in uses] == [("r1", "Read", {"file_path": str(cox_sdk.ws / "a.txt")})]
    results = [(m, b) for m in messages if isinstance(m, UserMessage) for b in m.content
               if isinstance(b, ToolResultBlock)]
    assert len(results) == 1
    message, block = results[0]
    assert block.tool_use_id == "r1" and "alpha" in str(block.content) and not block.is_error
    assert message.tool_use_result is not None
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "It says alpha." and result.num_turns == 2
