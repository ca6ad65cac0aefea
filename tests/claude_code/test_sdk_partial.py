"""``include_partial_messages``: the model's output as it streams (``stream_event`` lines in the
Messages API's raw event shapes), then the whole assistant message with the same id."""

from __future__ import annotations

from tests.claude_code.conftest import collect, run


def test_partial_messages_stream_the_text_before_the_assistant_message(cox_sdk):
    from claude_agent_sdk import AssistantMessage, ResultMessage, StreamEvent

    cox_sdk.replies([{"text": "streamed in pieces", "chunk": 4}])
    messages = run(lambda: collect("stream", cox_sdk.options(include_partial_messages=True)))
    events = [m.event for m in messages if isinstance(m, StreamEvent)]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[1] == "content_block_start" and kinds[-1] == "message_stop"
    deltas = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert len(deltas) > 1 and "".join(deltas) == "streamed in pieces"
    first_assistant = next(i for i, m in enumerate(messages) if isinstance(m, AssistantMessage))
    last_event = max(i for i, m in enumerate(messages) if isinstance(m, StreamEvent))
    assert last_event < first_assistant
    assistant = messages[first_assistant]
    assert assistant.message_id == events[0]["message"]["id"]
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "streamed in pieces"


def test_without_the_option_no_stream_events(cox_sdk):
    from claude_agent_sdk import StreamEvent

    cox_sdk.replies([{"text": "whole", "chunk": 2}])
    messages = run(lambda: collect("stream", cox_sdk.options()))
    assert not any(isinstance(m, StreamEvent) for m in messages)
