"""``stop_task`` through the real SDK: a background subagent (a ``Task`` call with
``run_in_background``), named by the agent id its call's result gives, is closed as
``agent_close`` closes it; an id that names no agent is an error the SDK raises. Subagents,
foreground and background, are Claude Code's tasks on the wire (``task_started`` …)."""

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

    from claude_agent_sdk.types import TaskNotificationMessage, TaskStartedMessage

    first, second, unknown = run(main)  # well before the child's 300 s sleep
    started = [m for m in first if isinstance(m, TaskStartedMessage)]
    assert [(m.task_id, m.description, m.tool_use_id) for m in started] == [(agent, "sleeper", "t1")]
    done = [m for m in first + second if isinstance(m, TaskNotificationMessage)]
    assert [(m.task_id, m.status) for m in done] == [(agent, "stopped")]
    results = [b for m in first + second if isinstance(m, UserMessage) and isinstance(m.content, list)
               for b in m.content if isinstance(b, ToolResultBlock) and m.parent_tool_use_id is None]
    started = str(results[0].content)
    assert re.search(rf"agent {re.escape(agent)} started in the background", started), started
    waited = str(results[1].content)
    assert re.search(rf"## {re.escape(agent)}: (interrupted|error)", waited), waited  # stopped, not "still running"
    assert "woke up" not in waited
    assert "there is no agent" in unknown and "-a9" in unknown
    assert second[-1].subtype == "success"


def test_a_foreground_subagent_is_a_task_started_progressed_and_notified(cox_sdk):
    """Claude Code's task frames, read by the real SDK: started with the ``Task`` call's id and
    description, a progress after the child's tool call (its Claude Code name), and a completed
    notification whose summary is the child's answer; the ids are the agent's (stop_task's)."""
    from claude_agent_sdk import ClaudeSDKClient
    from claude_agent_sdk.types import TaskNotificationMessage, TaskProgressMessage, TaskStartedMessage

    session = str(uuid.uuid4())
    task = {"description": "count files", "prompt": "COUNTER: count the files"}
    cox_sdk.replies([{"tool_calls": [{"id": "t1", "name": "Task", "input": task}]}, {"text": "it counted"}],
                    agents={"COUNTER": [{"tool_calls": [{"id": "c1", "name": "bash", "input": {"command": "ls"}}]},
                                        {"text": "two files"}]})
    options = cox_sdk.options(permission_mode="bypassPermissions", extra_args={"session-id": session})

    async def main() -> list[Any]:
        async with ClaudeSDKClient(options) as client:
            await client.query("count")
            return [message async for message in client.receive_response()]

    got = run(main)
    tasks = [m for m in got if isinstance(m, TaskStartedMessage | TaskProgressMessage | TaskNotificationMessage)]
    assert [type(m).__name__ for m in tasks] == ["TaskStartedMessage", "TaskProgressMessage", "TaskNotificationMessage"]
    started, progress, done = tasks
    agent = f"{session}-a1"
    assert {m.task_id for m in tasks} == {agent} and {m.tool_use_id for m in tasks} == {"t1"}
    assert started.description == "count files" and started.session_id == session
    assert progress.last_tool_name == "Bash" and progress.usage["tool_uses"] == 1
    assert done.status == "completed" and done.summary == "two files" and done.usage["tool_uses"] == 1
    assert got[-1].subtype == "success"
