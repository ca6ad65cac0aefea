"""MCP resources for the model: ``list_mcp_resources`` and ``read_mcp_resource``.

As in Claude Code (ListMcpResourcesTool, ReadMcpResourceTool): two read-only tools over every
connected server, present when at least one server is configured. They resolve servers through
the manager at call time like :class:`McpTool`, so a restarted server is reached, and they never
raise: an absent or failing server is a line (list) or an error result (read) naming it.

Trust applies as for tools: a server whose tools are pending (a project server before
``cox mcp trust``) or changed is not listed and cannot be read. What the server returns goes
the way of any tool output: the ToolCall actor archives a big text whole and shows the capped
form; text and JSON blobs are decoded, PNG/JPEG/GIF/WebP blobs become images (capped like
``read``), and any other binary blob is archived whole and named by its archive id.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from cox.actors.tools.base import BaseTool, ToolEnv, ToolInputError
from cox.actors.tools.images import MAX_IMAGE_BYTES, sniff_image
from cox.actors.tools.visible import human_size
from cox.protocol.types import Risk, ToolCall, ToolResult

from .state import McpCallCancelled, McpCallError
from .trust import TRUSTED_ON_FIRST_CONNECT

if TYPE_CHECKING:
    import mcp_types

    from .supervisor import McpManager

__all__ = ["ListMcpResourcesTool", "ReadMcpResourceTool", "resource_tools", "server_trusted"]

LIST, READ = "list_mcp_resources", "read_mcp_resource"
_TEXT_TYPES = ("application/json", "application/xml", "application/yaml", "application/x-yaml",
               "application/javascript", "application/toml", "application/x-sh", "application/sql")


def resource_tools(manager: McpManager) -> dict[str, BaseTool]:
    """The two resource tools, or none when no server is configured (or none may be started:
    a project server whose launch is not trusted has nothing to list)."""
    if not set(manager.servers) - manager.untrusted:
        return {}
    return {LIST: ListMcpResourcesTool(manager), READ: ReadMcpResourceTool(manager)}


def server_trusted(manager: McpManager, server: str) -> bool:
    """A server's resources are usable when its tools would be: a user-configured server (or
    one trusted with ``cox mcp trust``) whose tool definitions have not changed since."""
    spec = manager.servers[server]
    if server in manager.untrusted:
        return False
    if spec.origin not in TRUSTED_ON_FIRST_CONNECT and manager.trust.stored(server) is None:
        return False
    return all(manager.trust.trusted(spec, manager.listing(server)).values())


class _ResourceTool(BaseTool):
    parallel = True

    def __init__(self, manager: McpManager) -> None:
        self.manager = manager

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def _conn(self, server: str, env: ToolEnv) -> Any:
        """The server's started connection; its trust is checked again against what it listed
        now (before, it was judged on the listing the session started with, maybe the cache)."""
        settings = self.manager.settings
        conn = self.manager.connection(server, timeout=settings.startup_timeout_s, cancel=env.cancel,
                                       failed_grace=min(2.0, settings.startup_timeout_s))
        live = self.manager.live_definitions(server, conn).values()
        if not all(self.manager.trust.trusted(self.manager.servers[server], live).values()):
            raise McpCallError(f"pending trust for mcp server '{server}'; run: cox mcp trust {server}")
        return conn


class ListMcpResourcesTool(_ResourceTool):
    name = LIST
    description = ("List the resources (documents, files, data) the connected MCP servers offer: each with "
                   "its server, URI, name, media type and description, plus URI templates. Read one with "
                   "read_mcp_resource. Give `server` to list only that server's.")
    input_schema = {"type": "object", "properties": {
        "server": {"type": "string", "description": "Only this MCP server (default: every connected server)."}},
        "additionalProperties": False}

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return str(call_input.get("server") or "")

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        wanted = call.input.get("server")
        names = list(self.manager.servers)
        if wanted:
            if wanted not in self.manager.servers:
                return ToolResult.error(f"no mcp server named {wanted!r}; configured: {', '.join(names) or 'none'}")
            names = [str(wanted)]
        out: list[str] = []
        total = 0
        for server in names:
            if env.cancel.cancelled:
                return ToolResult.aborted()
            if not server_trusted(self.manager, server):
                out.append(f"{server}: pending trust; run: cox mcp trust {server}")
                continue
            try:
                resources, templates = self._conn(server, env).list_resources(
                    timeout=self.manager.settings.timeout_s, cancel=env.cancel)
            except McpCallCancelled:
                return ToolResult.aborted()
            except Exception as err:  # noqa: BLE001 - one failing server is a line, not a failed call
                out.append(f"{server}: not available ({err})")
                continue
            if not resources and not templates:
                out.append(f"{server}: no resources")
                continue
            total += len(resources) + len(templates)
            out.append(f"{server}: {len(resources)} resource(s)" + (f", {len(templates)} template(s)" if templates else ""))
            out += [_resource_line(r) for r in resources]
            out += [_template_line(t) for t in templates]
        if not out:
            return ToolResult(visible="no mcp servers")
        return ToolResult(visible="\n".join(out), meta={"resources": total})


def _resource_line(r: mcp_types.Resource) -> str:
    line = f"  {r.uri}  {r.name}"
    if r.mime_type:
        line += f"  ({r.mime_type})"
    if r.description:
        line += f" — {_one_line(r.description)}"
    return line


def _template_line(t: mcp_types.ResourceTemplate) -> str:
    line = f"  template {t.uri_template}  {t.name}"
    if t.mime_type:
        line += f"  ({t.mime_type})"
    if t.description:
        line += f" — {_one_line(t.description)}"
    return line


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ReadMcpResourceTool(_ResourceTool):
    name = READ
    description = ("Read one resource of a connected MCP server by its URI (from list_mcp_resources, a URI "
                   "template filled in, or a resource link in a tool result). Text comes back as text, images "
                   "as images; other binary content is archived and named by its archive id.")
    input_schema = {"type": "object", "properties": {
        "server": {"type": "string", "description": "The MCP server's name."},
        "uri": {"type": "string", "description": "The resource's URI."}},
        "required": ["server", "uri"], "additionalProperties": False}
    required = ("server", "uri")

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return f"{call_input.get('server', '')} {call_input.get('uri', '')}".strip()

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        server, uri = str(call.input["server"]), str(call.input["uri"])
        if server not in self.manager.servers:
            known = ", ".join(self.manager.servers) or "none"
            raise ToolInputError(f"no mcp server named {server!r}; configured: {known}")
        if not server_trusted(self.manager, server):
            return ToolResult.error(f"pending trust for mcp server '{server}'; run: cox mcp trust {server}")
        try:
            result = self._conn(server, env).read_resource(uri, timeout=self.manager.settings.timeout_s,
                                                           cancel=env.cancel)
        except McpCallCancelled:
            return ToolResult.aborted()
        except McpCallError as err:
            return ToolResult.error(str(err), server=server)
        except Exception as err:  # noqa: BLE001 - a tool never raises into the turn
            return ToolResult.error(f"mcp server '{server}' failed to read {uri}: {err}", server=server)
        return render_contents(result.contents, server, env)


def render_contents(contents: list[Any], server: str, env: ToolEnv) -> ToolResult:
    import mcp_types

    parts: list[str] = []
    images: list[dict[str, Any]] = []
    many = len(contents) > 1
    for item in contents:
        mime = item.mime_type or ""
        head = f"[{item.uri}" + (f" ({mime})" if mime else "") + "]"
        if isinstance(item, mcp_types.TextResourceContents):
            parts.append(f"{head}\n{item.text}" if many else item.text)
            continue
        try:
            data = base64.b64decode(item.blob, validate=True)
        except (binascii.Error, ValueError):
            parts.append(f"{head} a blob that is not valid base64")
            continue
        parts.append(_blob(head, data, mime, images, env))
    if not contents:
        parts.append("(the resource is empty)")
    meta: dict[str, Any] = {"server": server}
    return ToolResult(visible="\n".join(parts), images=images or None, meta=meta)


def _textual(mime: str) -> bool:
    base = mime.split(";")[0].strip().lower()
    return base.startswith("text/") or base in _TEXT_TYPES or base.endswith(("+json", "+xml"))


def _blob(head: str, data: bytes, mime: str, images: list[dict[str, Any]], env: ToolEnv) -> str:
    image = sniff_image(data[:16])
    if image is not None:
        if len(data) > MAX_IMAGE_BYTES:
            return (f"{head} too_large: {image}, {human_size(len(data))}; one image may be at most "
                    f"{MAX_IMAGE_BYTES:,} bytes")
        images.append({"media_type": image, "data": base64.b64encode(data).decode("ascii")})
        return f"{head} {image}, {human_size(len(data))}"
    if _textual(mime) or (not mime and b"\0" not in data[:4096]):
        try:
            return f"{head} blob, decoded as UTF-8:\n{data.decode('utf-8')}"
        except UnicodeDecodeError:
            pass
    archive = env.services.archive
    label = f"{head} binary, {mime or 'unknown type'}, {human_size(len(data))}"
    if archive is None:
        return f"{label}; not shown"
    try:
        archive_id = archive(data)
    except Exception as exc:  # noqa: BLE001 - say so rather than lose it silently
        return f"{label}; not shown (archive failed: {exc})"
    return f"{label}; archived whole as #{archive_id} (`cox expand {archive_id} > file` saves it)"
