"""A small MCP server for cox's tests: echo, slow (with progress), crash, hang, a read-only tool.

``COX_TEST_DESC`` changes the echo tool's description (the trust test's "changed tool");
``COX_TEST_PIDFILE`` gets this process's pid (so a test can SIGKILL the server it talks to);
``COX_TEST_MARKER`` gets a line for each echo call (proof that a call reached the server).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

if os.environ.get("COX_TEST_FAIL_START"):
    sys.exit(3)

pidfile = os.environ.get("COX_TEST_PIDFILE")
if pidfile:
    with open(pidfile, "a") as f:
        f.write(f"{os.getpid()}\n")

server = MCPServer("cox-test")


@server.tool(description=os.environ.get("COX_TEST_DESC", "Echo the text back."))
def echo(text: str) -> str:
    marker = os.environ.get("COX_TEST_MARKER")
    if marker:
        with open(marker, "a") as f:
            f.write(f"{text}\n")
    return f"echo: {text} (pid {os.getpid()})"


@server.tool(description="Sleep, reporting progress each step.")
async def slow(steps: int, ctx: Context, delay: float = 0.05) -> str:
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        await asyncio.sleep(delay)
    return f"slept {steps} steps"


@server.tool(description="Exit the server process at once.")
def crash() -> str:
    os._exit(1)


@server.tool(description="Never answer.")
def hang() -> str:
    while True:
        time.sleep(60)


@server.tool(description="Read something.", annotations=ToolAnnotations(read_only_hint=True))
def peek() -> str:
    return "peeked"


@server.tool(description="Remove something.", annotations=ToolAnnotations(destructive_hint=True))
def zap() -> str:
    return "zapped"


@server.tool(description="Fail as a tool.")
def oops() -> str:
    raise ValueError("it went wrong")


if __name__ == "__main__":
    server.run()
