"""The MCP servers an ACP client passes in ``session/new`` / ``session/load``, as cox's server specs.

They connect for that session only, under the trust rules of a project's ``.mcp.json`` servers
(``cox.actors.mcp.config``): an editor's settings can live in the repository (``.zed/``), so a
server named there is treated as one a repository brought along — always inside the sandbox,
never started before its exact launch was accepted (``launch.py``; the person accepts it with
``cox mcp trust``), its tools pending until trusted, and every call of its tools judged by the
permission engine like any other (``mcp__server__tool`` asks unless a rule allows it). Stdio,
HTTP and SSE servers are taken; a name cox cannot use in a tool name is skipped with a warning.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from cox.actors.mcp.config import McpServerSpec, Origin

__all__ = ["SOURCE", "client_servers"]

log = logging.getLogger(__name__)

SOURCE = "the ACP client (session/new mcpServers)"


def client_servers(servers: list[Any], cwd: Path) -> dict[str, McpServerSpec]:
    out: dict[str, McpServerSpec] = {}
    for server in servers:
        name = getattr(server, "name", "")
        if not name or "/" in name or "__" in name:
            log.warning("%s: mcp server %r skipped: the name cannot be part of a tool name", SOURCE, name)
            continue
        url = getattr(server, "url", None)
        headers = {h.name: h.value for h in getattr(server, "headers", None) or []}
        if url:
            out[name] = McpServerSpec(name=name, origin=Origin.PROJECT, url=url, headers=headers, sandbox=True,
                                      source=SOURCE, sse=getattr(server, "type", None) == "sse")
            continue
        command = getattr(server, "command", None)
        if not command:
            log.warning("%s: mcp server %r skipped: neither command nor url", SOURCE, name)
            continue
        env = {e.name: e.value for e in getattr(server, "env", None) or []}
        out[name] = McpServerSpec(name=name, origin=Origin.PROJECT, command=command,
                                  args=tuple(getattr(server, "args", None) or ()), env=env, cwd=str(cwd),
                                  sandbox=True, source=SOURCE)
    return out



def untrusted(specs: dict[str, McpServerSpec], cwd: Path) -> dict[str, McpServerSpec]:
    """The client's servers whose launch nobody accepted yet (they were not started)."""
    from cox.actors.mcp.trust import TrustStore

    store = TrustStore.default()
    return {n: s for n, s in specs.items() if not store.launch_trusted(s, cwd)}


async def offer_trust(conn: Any, session_id: str, config: Any, cwd: Path, specs: dict[str, McpServerSpec]) -> None:
    """Ask the person, in the editor, what ``cox mcp trust NAME`` asks on a terminal: the launch
    is shown whole; a yes does what ``cox mcp trust --yes`` does (accept this launch, start the
    server once to list its tools, trust them), and the server connects from the next session."""
    import asyncio

    from acp import helpers as h
    from acp.schema import PermissionOption, ToolCallUpdate

    from cox.actors.mcp.launch import describe
    from cox.actors.mcp.trust import TrustStore
    from cox.surfaces.mcp_cli import _trust_servers

    options = [PermissionOption(option_id="trust", name="Trust and start it from the next session",
                                kind="allow_always"),
               PermissionOption(option_id="decline", name="Do not start it", kind="reject_once")]
    for name, spec in specs.items():
        shown = "\n".join(describe(spec, cwd))
        call = ToolCallUpdate(tool_call_id=f"mcp-trust:{name}", title=f"trust mcp server {name!r} from the editor?",
                              kind="execute", status="pending",
                              content=[h.tool_content(h.text_block(shown))])
        try:
            got = await conn.request_permission(session_id, call, options)
        except Exception as exc:
            log.warning("trust request for mcp server %r failed: %s", name, exc)
            continue
        outcome = got.outcome
        if getattr(outcome, "outcome", None) != "selected" or getattr(outcome, "option_id", None) != "trust":
            continue
        code = await asyncio.to_thread(_trust_servers, config, {name: spec}, cwd, TrustStore.default(), name,
                                       yes=True)
        if code != 0:
            log.warning("trusting mcp server %r failed (exit %s)", name, code)
