"""``stop_task`` through the real SDK: a background subagent (a ``Task`` call with
``run_in_background``), named by the agent id its call's result gives, is closed as
``agent_close`` closes it; an id that names no agent is an error the SDK raises."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.claude_code.conftest import run


def test_stop_task_closes_a_background_agent(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, ToolResultBlock, UserMessage

    session = str(uuid.uuid4())
    agent = f"{session}-a1"
    task = {"description": "sleeper", "prompt": "SLEEPER: wait a long time", "run_in_background": True}
    cox_sdk.replies([{"tool_calls": [{"id": "t1", "name": "Task", "input": task}]}, {"text": "started it"},
                     {"tool_calls": [{"id": "w1", "name": "agent_wait", "input": {"ids": [agent], "timeout": 60}}]},
                     {"text": "collected"}],
                    agents={"SLEEPER": [{"tool_calls": [{"id": "s1", "name": "bash", "input": {"command": "sleep 300"}}]},
                                        {"text": "woke up"}]})
    options = cox_sdk.options(permission_mode="bypassPermissions", extra_args={"session-id": session})

    async def main() -> tuple[list[Any], list[Any], str]:
        async with ClaudeSDKClient(options) as client:
            await client.query("start a sleeper")
            first = [message async for message in client.receive_response()]
            await client.stop_task(agent)
            with pytest.raises(Exception) as unknown:
                await client.stop_task(f"{session}-a9")
            await client.query("collect it")
            second = [message async for message in client.receive_response()]
            return first, second, str(unknown.value)

    first, second, unknown = run(main)  # well before the child's 300 s sleep
    results = [b for m in first + second if isinstance(m, UserMessage) and isinstance(m.content, list)
               for b in m.content if isinstance(b, ToolResultBlock) and m.parent_tool_use_id is None]
    started = str(results[0].content)
    assert re.search(rf"agent {re.escape(agent)} started in the background", started), started
    waited = str(results[1].content)
    assert re.search(rf"## {re.escape(agent)}: (interrupted|error)", waited), waited  # stopped, not "still running"
    assert "woke up" not in waited
    assert "there is no agent" in unknown and "-a9" in unknown
    assert second[-1].subtype == "success"
