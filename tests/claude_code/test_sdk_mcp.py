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


def test_mcp_toggle_takes_a_servers_tools_away_and_gives_them_back(cox_sdk):
    """``toggle_mcp_server(name, False)``: the server is ``disabled`` in ``mcp_status``, its tool
    is gone from the next request (and from system/init), a call of it never reaches the server;
    switched on again, the tool is back and works. An unknown server is an error."""
    import json

    import pytest
    from claude_agent_sdk import ClaudeSDKClient, SystemMessage, create_sdk_mcp_server, tool

    calls: list[dict[str, Any]] = []

    @tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"sum is {args['a'] + args['b']}"}]}

    def call(i: int) -> dict[str, Any]:
        return {"tool_calls": [{"id": f"m{i}", "name": "mcp__calc__add", "input": {"a": i, "b": 1}}]}

    dump = cox_sdk.home / "dump.json"
    cox_sdk.replies([call(1), {"text": "one"}, call(2), {"text": "two"}, call(3), {"text": "three"}])
    options = cox_sdk.options(mcp_servers={"calc": create_sdk_mcp_server("calc", tools=[add])},
                              permission_mode="bypassPermissions")
    options.env["COX_SCRIPTED_DUMP"] = str(dump)

    async def main() -> tuple[list[list[Any]], list[Any], str]:
        async with ClaudeSDKClient(options) as client:
            turns = [await turn(client, "add")]
            await client.toggle_mcp_server("calc", enabled=False)
            status = [await client.get_mcp_status()]
            turns.append(await turn(client, "add again"))
            await client.toggle_mcp_server("calc", enabled=True)
            turns.append(await turn(client, "and again"))
            status.append(await client.get_mcp_status())
            with pytest.raises(Exception) as unknown:
                await client.toggle_mcp_server("nope", enabled=False)
            return turns, status, str(unknown.value)

    turns, status, unknown = run(main)
    assert calls == [{"a": 1, "b": 1}, {"a": 3, "b": 1}]  # the call made while it was off never reached it
    results = [tool_results(t)[0] for t in turns]
    assert "sum is 2" in str(results[0].content) and "sum is 4" in str(results[2].content)
    assert results[1].is_error and "unknown tool" in str(results[1].content)
    assert [s["mcpServers"][0]["status"] for s in status] == ["disabled", "connected"]
    inits = [next(m for m in t if isinstance(m, SystemMessage) and m.subtype == "init") for t in turns]
    assert ["mcp__calc__add" in i.data["tools"] for i in inits] == [True, False, True]
    offered = ["mcp__calc__add" in r["tools"] for r in json.loads(dump.read_text())]
    assert offered == [True, True, False, False, True, True]  # two requests per turn
    assert "nope" in unknown
