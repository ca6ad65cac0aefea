"""MCP client: every configured server is one ``McpServerActor`` under the ``mcp`` supervisor.

The lead's entry points::

    servers = load_servers(config.mcp, cwd)                   # user, ~/.claude.json, .mcp.json
    manager = start_mcp(app.root, servers, timeout_s=config.mcp.timeout_s,
                        startup_timeout_s=config.mcp.startup_timeout_s, cwd=cwd, sandbox=policy,
                        background=True)                      # returns before the SDK is imported
    manager.wait_settled(cached_ok=True)                      # only servers never listed before
    tools = manager.tools()                                   # {"mcp__<server>__<tool>": McpTool}
    manager.state()                                           # for cox doctor / the TUI
    manager.pending()                                         # tools waiting for cox mcp trust

Trust (``trust.py``, ``launch.py``): a server a repository brought is not started at all until
``cox mcp trust <server>`` showed its exact launch and the person agreed (and it always runs
sandboxed); its tools, and any changed definition (annotations included), are built untrusted
(pending sentence, Write, never called) until they are trusted too.

Listings (``cache.py``): each server's last tool list is cached under ``$COX_HOME``; a server with
a cached listing gives its tools at once and starts in the background, and every call checks the
live definition before it runs (a changed one is refused).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

# Lazy (PEP 562): ``cox.actors.mcp.config`` is read on every run to learn whether any server is
# configured, and importing this package must not import the mcp SDK (about 0.3 s) for that.
_WHERE = {"McpServerSpec": "config", "Origin": "config", "load_servers": "config",
          "McpServerActor": "server", "McpManager": "supervisor", "fetch_tools": "supervisor",
          "start_mcp": "supervisor", "McpTool": "tool", "TrustState": "trust", "TrustStore": "trust",
          "resource_tools": "resources", "ToolCache": "cache", "ToolDef": "cache"}

__all__ = sorted([*_WHERE, "server_files"])


def server_files(cwd: Path, home: Path) -> tuple[Path, Path]:
    """The files besides cox's config that may declare servers (``config.load_servers`` reads
    them): the project's ``.mcp.json`` and ``~/.claude.json``. Where neither exists and nothing
    else names a server, a session does not import ``config`` at all."""
    return Path(cwd) / ".mcp.json", home / ".claude.json"


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
