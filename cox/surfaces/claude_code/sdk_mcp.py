"""In-process SDK MCP servers: an ``--mcp-config`` entry ``{"type": "sdk", "name": …}`` names a
server that lives inside the client (the SDK's ``create_sdk_mcp_server``). cox's MCP client
talks to it as to any server — same supervisor, timeouts, trust and tool names
(``mcp__<server>__<tool>``) — through a transport that carries each JSON-RPC message as one
``mcp_message`` control request and feeds the ``mcp_response`` back.

Only ``type: "sdk"`` entries are read here (the rest of ``--mcp-config`` belongs to its own
parser). A client that stops answering costs each call its MCP timeout; stdin closing fails the
calls in flight with a JSON-RPC error, never a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator
from typing import Any

from .outgoing import Outgoing


class SdkRelay:
    def __init__(self, name: str, outgoing: Outgoing) -> None:
        self.name = name
        self.outgoing = outgoing

    @contextlib.asynccontextmanager
    async def transport(self, closed: asyncio.Event) -> AsyncIterator[Any]:
        import anyio
        from mcp import types as mcp_types
        from mcp.shared.message import SessionMessage

        loop = asyncio.get_running_loop()
        read_writer, read_stream = anyio.create_memory_object_stream[Any](math.inf)
        write_stream, write_reader = anyio.create_memory_object_stream[Any](0)

        def deliver(obj: dict[str, Any]) -> None:  # on the stdin thread
            try:
                message: Any = SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(obj, by_name=False))
            except ValueError as exc:  # the session reads it as a bad message, as a stdio server's
                message = exc

            def put() -> None:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    read_writer.send_nowait(message)

            with contextlib.suppress(RuntimeError):  # the loop is closed: the connection is gone
                loop.call_soon_threadsafe(put)

        async def writer() -> None:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
                    self._send(data, deliver)

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()
                tg.cancel_scope.cancel()

    def _send(self, data: dict[str, Any], deliver: Any) -> None:
        ident = data.get("id")
        is_request = "method" in data and ident is not None

        def answer(payload: dict[str, Any] | None, why: str | None) -> None:
            if not is_request:
                return  # a notification (or our reply to the server): the client's ack carries nothing
            response = (payload or {}).get("mcp_response") if why is None else None
            if not isinstance(response, dict) or "id" not in response:
                why = why or "the client's mcp_response is not a JSON-RPC response"
                response = {"jsonrpc": "2.0", "id": ident,
                            "error": {"code": -32603, "message": f"sdk mcp server '{self.name}': {why}"}}
            deliver(response)

        self.outgoing.send({"subtype": "mcp_message", "server_name": self.name, "message": data}, answer)


def sdk_servers(entries: dict[str, dict[str, Any]], outgoing: Outgoing) -> dict[str, Any]:
    """The ``type: "sdk"`` servers ``--mcp-config`` named (``config_flags.ConfigFlags.sdk_servers``,
    read and checked there with the other servers) as ``McpServerSpec``s relayed to the client."""
    from cox.actors.mcp.config import McpServerSpec, Origin

    return {name: McpServerSpec(name=name, origin=Origin.USER, sandbox=False, source="--mcp-config (the SDK client)",
                                relay=SdkRelay(name, outgoing)) for name in entries}
