"""A small MCP server that elicits, for cox's deterministic elicitation and resource tests.

Tools: ``signup`` (a form: name, age 1-120, colour from titled choices, newsletter yes/no),
``login`` (URL mode, the URL is the tool's argument), ``withdraw`` (asks, then gives up after
``COX_TEST_WITHDRAW_S`` seconds, so the client sees the request cancelled). A tool's result
names the action and the fields that came back, never their values (so a test can tell that the
answers reached the server and nothing else); ``COX_TEST_ANSWERS`` (a file) gets what reached
the server whole, one JSON line per answer, and ``cancelled`` when the call was cancelled while
it waited.

Resources: a text note, a template, a UTF-8 JSON blob, a PNG blob and an opaque binary blob.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("cox-elicit")

SIGNUP = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "your full name", "minLength": 2},
        "age": {"type": "integer", "title": "Age", "minimum": 1, "maximum": 120},
        "colour": {"type": "string", "title": "Colour",
                   "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"},
                             {"const": "b", "title": "Blue"}]},
        "news": {"type": "boolean", "title": "Newsletter", "default": False},
    },
    "required": ["name", "age"],
}

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def _write(line: str) -> None:
    path = os.environ.get("COX_TEST_ANSWERS")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def _record(result: dict[str, Any]) -> str:
    _write(json.dumps(result, sort_keys=True))
    fields = sorted(result.get("content") or {})
    return f"action={result['action']}" + (f" fields={','.join(fields)}" if fields else "")


async def _asking(request: Any) -> Any:
    try:
        return await request
    except anyio.get_cancelled_exc_class():
        _write("cancelled")
        raise


@server.tool(description="Sign the user up: asks for their name, age, favourite colour and newsletter choice.")
async def signup(ctx: Context) -> str:
    result = await _asking(ctx.request_context.session.elicit_form(
        "Sign-up for the demo service", SIGNUP, related_request_id=ctx.request_id))
    return _record(result.model_dump(exclude_none=True))


@server.tool(description="Ask the user to open a login page in the browser.")
async def login(ctx: Context, url: str) -> str:
    result = await _asking(ctx.request_context.session.elicit_url(
        "Log in to the demo service", url, str(uuid.uuid4()), related_request_id=ctx.request_id))
    return _record(result.model_dump(exclude_none=True))


@server.tool(description="Ask something, then give up waiting.")
async def withdraw(ctx: Context) -> str:
    wait = float(os.environ.get("COX_TEST_WITHDRAW_S", "1"))
    with anyio.move_on_after(wait):
        await ctx.request_context.session.elicit_form(
            "A question that expires", {"type": "object", "properties": {"x": {"type": "string"}}},
            related_request_id=ctx.request_id)
        return "answered"
    return "gave up waiting"


@server.resource("note://readme", name="readme", description="A short text note.", mime_type="text/plain")
def readme() -> str:
    return "hello from the resource"


@server.resource("note://items/{item}", name="item", description="One item by name.", mime_type="text/plain")
def item(item: str) -> str:
    return f"item {item}"


@server.resource("blob://data.json", name="data", mime_type="application/json")
def data() -> bytes:
    return json.dumps({"k": "vä"}).encode()


@server.resource("blob://pixel.png", name="pixel", mime_type="image/png")
def pixel() -> bytes:
    return PNG


@server.resource("blob://raw.bin", name="raw", mime_type="application/octet-stream")
def raw() -> bytes:
    return bytes(range(256)) * 4


if __name__ == "__main__":
    server.run()
