"""An in-process SDK MCP server (``@tool`` + ``create_sdk_mcp_server``): cox lists its tools and
the model calls one; every JSON-RPC message travels over the control channel (``mcp_message``)."""

from __future__ import annotations

from typing import Any

from tests.claude_code.conftest import run
from tests.claude_code.test_sdk_client import tool_results, turn


def test_the_model_calls_an_in_process_sdk_mcp_tool(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, SystemMessage, create_sdk_mcp_server, tool

    calls: list[dict[str, Any]] = []

    @tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"sum is {args['a'] + args['b']}"}]}

    server = create_sdk_mcp_server("calc", tools=[add])
    cox_sdk.replies([{"tool_calls": [{"id": "m1", "name": "mcp__calc__add", "input": {"a": 2, "b": 40}}]},
                     {"text": "It is 42."}])
    options = cox_sdk.options(mcp_servers={"calc": server}, permission_mode="bypassPermissions")

    async def main() -> tuple[list[Any], dict[str, Any]]:
        async with ClaudeSDKClient(options) as client:
            messages = await turn(client, "add 2 and 40")
            return messages, await client.get_mcp_status()

    messages, status = run(main)
    assert calls == [{"a": 2, "b": 40}]
    (block,) = tool_results(messages)
    assert "sum is 42" in str(block.content) and not block.is_error
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert "mcp__calc__add" in init.data["tools"]
    assert {"name": "calc", "status": "connected"} in [{"name": s["name"], "status": s["status"]}
                                                       for s in init.data["mcp_servers"]]
    assert [s["name"] for s in status["mcpServers"]] == ["calc"] and status["mcpServers"][0]["status"] == "connected"
    assert messages[-1].subtype == "success" and messages[-1].result == "It is 42."
