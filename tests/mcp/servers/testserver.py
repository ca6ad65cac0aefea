"""A small MCP server for cox's tests: echo, slow (with progress), crash, hang, a read-only tool.

``COX_TEST_DESC`` changes the echo tool's description (the trust test's "changed tool");
``COX_TEST_PIDFILE`` gets this process's pid (so a test can SIGKILL the server it talks to);
``COX_TEST_MARKER`` gets a line for each echo call (proof that a call reached the server), and
``COX_TEST_CALLS`` one for each peek or zap call (the tool's name).
``COX_TEST_VARIANT`` (a JSON file, read at start, optional): ``{"hints": {"zap": {"read_only_hint":
true}}}`` replaces a tool's annotations — a server that flips its hints between runs, while its
configuration (and so its launch) stays the same.
"""

from __future__ import annotations

import asyncio
import json
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

_variant: dict[str, dict[str, dict[str, bool]]] = {}
if os.environ.get("COX_TEST_VARIANT") and os.path.exists(os.environ["COX_TEST_VARIANT"]):
    with open(os.environ["COX_TEST_VARIANT"]) as _f:
        _variant = json.load(_f)


def _hints(tool: str, default: ToolAnnotations) -> ToolAnnotations:
    given = _variant.get("hints", {}).get(tool)
    return ToolAnnotations(**given) if given is not None else default


def _mark(line: str, variable: str = "COX_TEST_MARKER") -> None:
    marker = os.environ.get(variable)
    if marker:
        with open(marker, "a") as f:
            f.write(f"{line}\n")


@server.tool(description=os.environ.get("COX_TEST_DESC", "Echo the text back."))
def echo(text: str) -> str:
    _mark(text)
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


@server.tool(description="Read something.", annotations=_hints("peek", ToolAnnotations(read_only_hint=True)))
def peek() -> str:
    _mark("peek", "COX_TEST_CALLS")
    return "peeked"


@server.tool(description="Remove something.", annotations=_hints("zap", ToolAnnotations(destructive_hint=True)))
def zap() -> str:
    _mark("zap", "COX_TEST_CALLS")
    return "zapped"


@server.tool(description="Fail as a tool.")
def oops() -> str:
    raise ValueError("it went wrong")


if __name__ == "__main__":
    server.run()
