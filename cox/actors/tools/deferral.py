"""Which MCP tools wait behind ``tool_search`` (``mcp.max_loaded_tools``).

Every tool spec sits in every request and in its cache prefix: a session with a few MCP
servers can spend tens of thousands of tokens on tool definitions before it reads a word. As
Codex and Claude Code do, MCP tools past a count are *deferred*: the first request carries the
built-in tools, the first ``max_loaded`` MCP tools (in the servers' configured order, then each
server's listing order) and ``tool_search``, whose description names how many tools wait and on
which servers, so the model knows to look. ``tool_search`` finds them by words or
``select:name``, and the session adds their specs to the next request (``deferred.py``).
Built-in tools and the two MCP resource tools are never deferred; a tool pending trust takes a
loaded place only after every trusted one. A resumed session loads again the deferred tools its
history called (``used_in``), so the model can go on calling them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .base import BaseTool
from .catalog import TOOL_SEARCH
from .registry import tool_search

MCP_PREFIX = "mcp__"


def split_deferred(tools: Mapping[str, BaseTool], max_loaded: int) -> tuple[dict[str, BaseTool], dict[str, BaseTool]]:
    """``(loaded, deferred)``: the MCP tools past the first ``max_loaded`` go to ``deferred``;
    with any deferred, ``loaded["tool_search"]`` is one that says what waits. Under the count
    nothing changes (the same dict, so the request stays byte-identical)."""
    mcp = [name for name in tools if name.startswith(MCP_PREFIX)]
    # a tool pending trust answers only "not trusted yet": it takes a loaded place last
    mcp.sort(key=lambda name: not tools[name].trusted)
    if len(mcp) <= max_loaded:
        return dict(tools), {}
    later = set(mcp[max(max_loaded, 0):])
    loaded = {name: tool for name, tool in tools.items() if name not in later}
    deferred = {name: tools[name] for name in mcp if name in later}
    loaded[TOOL_SEARCH.name] = tool_search(summary(deferred))
    return loaded, deferred


def summary(deferred: Mapping[str, BaseTool]) -> str:
    """``31 more MCP tools are deferred (github: 25, jira: 6)``: the servers by how many wait."""
    servers = Counter((tool.server or name.split("__")[1]) for name, tool in deferred.items())
    parts = ", ".join(f"{server}: {n}" for server, n in sorted(servers.items(), key=lambda kv: (-kv[1], kv[0])))
    count = len(deferred)
    return f"{count} more MCP tool{'s' if count != 1 else ''} {'are' if count != 1 else 'is'} deferred ({parts})"


def used_in(history: Iterable[dict[str, Any]], deferred: Mapping[str, BaseTool]) -> list[str]:
    """The deferred tools a (resumed) conversation already called, in first-call order."""
    seen: dict[str, None] = {}
    for message in history:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") in deferred:
                seen.setdefault(str(block["name"]), None)
    return list(seen)
