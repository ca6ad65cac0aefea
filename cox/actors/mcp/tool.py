"""``McpTool``: one tool of one MCP server, as the model and the permission engine see it.

It holds the server's *name* and the manager, never a ref or a connection: each call resolves
the server at call time, so a call after a restart reaches the new process. A call never raises:
a crashed, hung or absent server is an error result naming the server, which the model reads and
the turn goes on.

Its definition (a :class:`ToolDef`) may come from the cached listing (``cache.py``) while the
server is still starting: a call then waits for the server (bounded by ``startup_timeout_s``,
cancelled with the turn) and runs only if the live definition is the one the model saw. A tool
that changed is refused (the pending/changed-trust sentence when the new definition is not
trusted), one that vanished is an error; either way the session is told once with a warning
notice (``meta["notice"]``) that its tool list changes from the next session. This module does
not import the mcp SDK: tools can be built before it is loaded.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from cox.actors.tools.base import BaseTool, ToolEnv
from cox.protocol.types import Risk, ToolCall, ToolResult, ToolStatus

from .cache import ToolDef
from .state import McpCallCancelled, McpCallError

if TYPE_CHECKING:
    import mcp_types

    from .supervisor import McpManager

__all__ = ["McpTool", "pending_sentence", "render_result", "tool_name"]

FAILED_GRACE_S = 2.0
"""How long a call waits for a server that failed to start (it is being restarted with backoff)."""


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


class McpTool(BaseTool):
    parallel = True

    def __init__(self, manager: McpManager, server: str, tool: ToolDef | mcp_types.Tool, *,
                 trusted: bool = True) -> None:
        self.manager = manager
        self.server = server
        self.tool = ToolDef.of(tool)
        self.trusted = trusted
        self.name = tool_name(server, self.tool.name)
        self.description = (self.tool.description or "") if trusted else pending_sentence(server)
        self.input_schema = dict(self.tool.input_schema) if trusted else {"type": "object", "properties": {}}

    def risk(self, call_input: dict[str, Any]) -> Risk:
        if not self.trusted or self.tool.annotations is None:
            return Risk.WRITE
        if self.tool.hint("destructiveHint"):
            return Risk.DESTRUCTIVE
        if self.tool.hint("readOnlyHint"):
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

        def progress(done: float, total: float | None, message: str | None) -> None:
            shown = f"{done:g}/{total:g}" if total else f"{done:g}"
            env.output(f"[{shown}] {message}\n" if message else f"[{shown}]\n")

        try:
            conn = self.manager.connection(self.server, timeout=settings.startup_timeout_s, cancel=env.cancel,
                                           failed_grace=min(FAILED_GRACE_S, settings.startup_timeout_s))
            if env.cancel.cancelled:
                return ToolResult.aborted()
            refused = self._against_live(conn)
            if refused is not None:
                return refused
            result = conn.call_tool(self.tool.name, dict(call.input), timeout=settings.timeout_s,
                                    cancel=env.cancel, progress=progress, ask=env.services.ask)
        except McpCallCancelled:
            return ToolResult.aborted()
        except McpCallError as err:
            if env.cancel.cancelled:
                return ToolResult.aborted()
            return ToolResult.error(str(err), server=self.server)
        except Exception as err:  # noqa: BLE001 - a tool never raises into the turn
            return ToolResult.error(f"mcp server '{self.server}' failed the call: {err}", server=self.server)
        return render_result(result, self.server)

    def _against_live(self, conn: Any) -> ToolResult | None:
        """``None`` when the server's live definition is the one the model saw; else the refusal
        (the call never reaches the server), with a notice for the session the first time."""
        live = self.manager.live_definitions(self.server, conn).get(self.tool.name)
        if live == self.tool:
            return None
        server, tool = self.server, self.tool.name
        later = "this session's tool list changes only from the next session"
        if live is None:
            note = (f"mcp server '{server}' no longer offers the tool '{tool}' (this session's tools came from "
                    f"its cached listing); {later}")
            return ToolResult.error(f"mcp server '{server}' no longer offers the tool '{tool}'; {later}",
                                    server=server, **self.manager.notice_once(server, tool, note))
        trusted = self.manager.trust.trusted(self.manager.servers[server], [live])[tool]
        note = (f"mcp server '{server}' changed the tool '{tool}' since its listing was cached; the call was "
                f"refused and the new definition is cached; {later}"
                + ("" if trusted else f" (and only after: cox mcp trust {server})"))
        if not trusted:
            return ToolResult.error(pending_sentence(server), server=server,
                                    **self.manager.notice_once(server, tool, note))
        return ToolResult.error(f"mcp server '{server}' changed the tool '{tool}' since this session started; "
                                f"the call was not run; {later}", server=server,
                                **self.manager.notice_once(server, tool, note))


def pending_sentence(server: str) -> str:
    return f"pending trust for mcp server '{server}'; run: cox mcp trust {server}"


def render_result(result: mcp_types.CallToolResult, server: str = "") -> ToolResult:
    """A ``CallToolResult`` as a ToolResult: text joined, images as ``images``, resource links,
    embedded resources and structured content rendered as text; ``isError`` → an error result."""
    import mcp_types

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
