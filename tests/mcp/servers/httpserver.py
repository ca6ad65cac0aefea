"""A small streamable-HTTP MCP server for cox's tests, optionally behind OAuth.

Usage: ``python httpserver.py PORT [AUTH_SERVER_URL]``. It serves ``http://127.0.0.1:PORT/mcp``.

With ``AUTH_SERVER_URL`` the endpoint is a protected resource (RFC 9728): a request without a
valid bearer token gets 401 and a ``WWW-Authenticate`` challenge naming
``/.well-known/oauth-protected-resource/mcp``, which names the authorization server. Tokens are
checked by asking the authorization server's ``/introspect`` endpoint (RFC 7662), so the test's
authorization server alone decides which tokens are valid (and when they expire).

``COX_TEST_SSE`` (set) serves the older HTTP+SSE transport at ``/sse`` instead.
``COX_TEST_PIDFILE`` gets this process's pid (so a test can SIGKILL it); ``COX_TEST_MARKER``
gets a line per echo call.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

import httpx
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer

PORT = int(sys.argv[1])
AUTH = sys.argv[2].rstrip("/") if len(sys.argv) > 2 else None
URL = f"http://127.0.0.1:{PORT}/mcp"

pidfile = os.environ.get("COX_TEST_PIDFILE")
if pidfile:
    with open(pidfile, "a") as f:
        f.write(f"{os.getpid()}\n")


class IntrospectingVerifier:
    """Ask the authorization server whether a token is active (RFC 7662)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        assert AUTH is not None
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.post(f"{AUTH}/introspect", data={"token": token})
        if response.status_code != 200:
            return None
        body = response.json()
        if not body.get("active"):
            return None
        return AccessToken(token=token, client_id=body.get("client_id", ""), scopes=body.get("scope", "").split(),
                           expires_at=body.get("exp"), resource=body.get("aud"))


kwargs: dict[str, Any] = {}
if AUTH:
    kwargs = {"auth": AuthSettings(issuer_url=AUTH, resource_server_url=URL, required_scopes=["mcp"],
                                   validate_token_resource=False),
              "token_verifier": IntrospectingVerifier()}
server = MCPServer("cox-http-test", log_level="WARNING", **kwargs)


@server.tool(description="Echo the text back.")
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


if __name__ == "__main__":
    if os.environ.get("COX_TEST_SSE"):  # the older HTTP+SSE transport, at /sse
        server.run("sse", host="127.0.0.1", port=PORT)
    else:
        server.run("streamable-http", host="127.0.0.1", port=PORT)
