"""``McpTool``: one tool of one MCP server, as the model and the permission engine see it.

It holds the server's *name* and the manager, never a ref or a connection: each call resolves
the server at call time, so a call after a restart reaches the new process. A call never raises:
a crashed, hung or absent server is an error result naming the server, which the model reads and
the turn goes on.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import mcp_types

from cox.actors.tools.base import BaseTool, ToolEnv
from cox.protocol.types import Risk, ToolCall, ToolResult, ToolStatus

from .server import McpCallCancelled, McpCallError

if TYPE_CHECKING:
    from .supervisor import McpManager

__all__ = ["McpTool", "render_result", "tool_name"]


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


class McpTool(BaseTool):
    parallel = True

    def __init__(self, manager: McpManager, server: str, tool: mcp_types.Tool, *, trusted: bool = True) -> None:
        self.manager = manager
        self.server = server
        self.tool = tool
        self.trusted = trusted
        self.name = tool_name(server, tool.name)
        self.description = (tool.description or "") if trusted else pending_sentence(server)
        self.input_schema = dict(tool.input_schema) if trusted else {"type": "object", "properties": {}}

    def risk(self, call_input: dict[str, Any]) -> Risk:
        hints = self.tool.annotations
        if not self.trusted or hints is None:
            return Risk.WRITE
        if hints.destructive_hint:
            return Risk.DESTRUCTIVE
        if hints.read_only_hint:
            return Risk.READ_ONLY
        return Risk.WRITE

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return self.name

    def writes(self, call: ToolCall, env: ToolEnv) -> None:
        return None  # an MCP server may change anything: snapshot around the call

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        if not self.trusted:
            return ToolResult.error(pending_sentence(self.server))
        settings = self.manager.settings
        status = self.manager.board.get(self.server)
        wait = min(2.0, settings.startup_timeout_s) if status.phase == "failed" else settings.startup_timeout_s

        def progress(done: float, total: float | None, message: str | None) -> None:
            shown = f"{done:g}/{total:g}" if total else f"{done:g}"
            env.output(f"[{shown}] {message}\n" if message else f"[{shown}]\n")

        try:
            conn = self.manager.connection(self.server, timeout=wait, cancel=env.cancel)
            if env.cancel.cancelled:
                return ToolResult.aborted()
            result = conn.call_tool(self.tool.name, dict(call.input), timeout=settings.timeout_s,
                                    cancel=env.cancel, progress=progress, ask=env.extra.get("ask"))
        except McpCallCancelled:
            return ToolResult.aborted()
        except McpCallError as err:
            return ToolResult.error(str(err), server=self.server)
        except Exception as err:  # noqa: BLE001 - a tool never raises into the turn
            return ToolResult.error(f"mcp server '{self.server}' failed the call: {err}", server=self.server)
        return render_result(result, self.server)


def pending_sentence(server: str) -> str:
    return f"pending trust for mcp server '{server}'; run: cox mcp trust {server}"


def render_result(result: mcp_types.CallToolResult, server: str = "") -> ToolResult:
    """A ``CallToolResult`` as a ToolResult: text joined, images as ``images``, resource links,
    embedded resources and structured content rendered as text; ``isError`` → an error result."""
    parts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            images.append({"media_type": block.mime_type, "data": block.data})
            parts.append(f"[image {block.mime_type}]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource {block.name}: {block.uri}]" + (f" {block.description}" if block.description else ""))
        elif isinstance(block, mcp_types.EmbeddedResource):
            res = block.resource
            text = getattr(res, "text", None)
            parts.append(f"[resource {res.uri}]\n{text}" if text is not None else f"[resource {res.uri} (binary)]")
        elif isinstance(block, mcp_types.AudioContent):
            parts.append(f"[audio {block.mime_type}]")
        else:
            parts.append(str(block))
    if result.structured_content is not None and not parts:
        # Servers should mirror structured content in a text block; render it only when absent,
        # so the model does not read everything twice.
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    status = ToolStatus.ERROR if result.is_error else ToolStatus.OK
    meta: dict[str, Any] = {"server": server} if server else {}
    return ToolResult(status=status, visible="\n".join(parts), images=images or None, meta=meta)
