"""MCP client: every configured server is one ``McpServerActor`` under the ``mcp`` supervisor.

The lead's entry points::

    servers = load_servers(config.mcp, cwd)                   # user, ~/.claude.json, .mcp.json
    manager = start_mcp(app.root, servers, timeout_s=config.mcp.timeout_s,
                        startup_timeout_s=config.mcp.startup_timeout_s, cwd=cwd, sandbox=policy)
    manager.wait_settled()                                    # once, before the first turn
    tools = manager.tools()                                   # {"mcp__<server>__<tool>": McpTool}
    manager.state()                                           # for cox doctor / the TUI
    manager.pending()                                         # tools waiting for cox mcp trust

Trust (``trust.py``): tools of servers a repository brought, and changed definitions, are built
untrusted (pending sentence, Write, never called) until ``cox mcp trust <server>``.
"""

from .config import McpServerSpec, Origin, load_servers
from .server import McpServerActor
from .supervisor import McpManager, fetch_tools, start_mcp
from .tool import McpTool
from .trust import TrustState, TrustStore

__all__ = ["McpManager", "McpServerActor", "McpServerSpec", "McpTool", "Origin", "TrustState", "TrustStore",
           "fetch_tools", "load_servers", "start_mcp"]
