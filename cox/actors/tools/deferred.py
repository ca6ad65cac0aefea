"""``tool_search``: how deferred tools join the session.

Every tool spec in the request costs tokens and sits in the cache prefix, so rarely used tools
(LSP navigation, most MCP tools) are left out and listed only by name and description in
``env.services.deferred_tools``. The model searches that catalog by words; the tool never
changes the session: the names it enabled travel back in its result (``meta["activated"]``,
see :func:`activated`), and the session adds their specs to the next request (and emits the
Notice that the cache prefix changed). ``select:a,b`` picks tools by exact name. Which tools
are deferred is ``deferral.py``'s choice.
"""

from __future__ import annotations

import re
from typing import Any

from cox.protocol.types import Risk, ToolCall, ToolResult

from .base import BaseTool, ToolEnv, ToolInputError
from .catalog import TOOL_SEARCH, tool_search_description

DEFAULT_LIMIT = 5


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "s", "ed"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def score(query: str, name: str, description: str) -> float:
    """How well a tool fits the query: a whole-name match first, then name words, then words
    of the description (a prefix or a plural counts too)."""
    q = query.strip().lower()
    if not q:
        return 0.0
    if q == name.lower():
        return 100.0
    name_words = {_stem(w) for w in _words(name)}
    desc_words = {_stem(w) for w in _words(description)}
    total = 0.0
    for word in {_stem(w) for w in _words(q)}:
        if word in name_words:
            total += 5
        elif any(w.startswith(word) for w in name_words) and len(word) >= 3:
            total += 3
        elif word in desc_words:
            total += 1.5
        elif len(word) >= 4 and any(w.startswith(word) for w in desc_words):
            total += 0.75
    return total


def catalog(env: ToolEnv) -> list[dict[str, str]]:
    return [{"name": t.name, "description": t.description} for t in env.services.deferred_tools]


def activated(result: ToolResult) -> list[str]:
    """The tool names a ``tool_search`` result enabled (the session adds them to its tools)."""
    names = result.meta.get("activated") if result.ok else None
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


class ToolSearchTool(BaseTool):
    spec = TOOL_SEARCH

    def __init__(self, waiting: str = "") -> None:
        """``waiting`` names what this session deferred (``deferral.summary``), so the model knows
        a tool it misses may be one search away; it is fixed for the session (the cache prefix)."""
        self.description = tool_search_description(waiting)

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        query = call.input.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolInputError("'query' must be a non-empty string")
        limit = call.input.get("max_results", DEFAULT_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ToolInputError("'max_results' must be a positive integer")
        tools = catalog(env)
        if not tools:
            return ToolResult(visible="no deferred tools in this session: every tool is already loaded",
                              meta={"matches": 0})
        by_name = {t["name"]: t for t in tools}
        query = query.strip()
        if query.lower().startswith("select:"):
            wanted = [w.strip() for w in query[len("select:") :].split(",") if w.strip()]
            unknown = [w for w in wanted if w not in by_name]
            found = [by_name[w] for w in dict.fromkeys(wanted) if w in by_name]
            if unknown and not found:
                return ToolResult.error(f"no deferred tool named {', '.join(unknown)}; "
                                        f"the deferred tools are: {', '.join(sorted(by_name))}")
        else:
            unknown = []
            ranked = sorted(((score(query, t["name"], t["description"]), t["name"]) for t in tools),
                            key=lambda x: (-x[0], x[1]))
            found = [by_name[n] for s, n in ranked if s > 0][:limit]
        if not found:
            return ToolResult(visible=f"no deferred tool matches {query!r}; try other words, or one of: "
                              f"{', '.join(sorted(by_name))}", meta={"matches": 0})
        new = [t["name"] for t in found if t["name"] not in env.services.loaded]
        lines = [f"{t['name']}: {t['description']}" if t["description"] else t["name"] for t in found]
        if new:
            lines.append(f"enabled: {', '.join(new)} (callable from your next step)")
        already = [t["name"] for t in found if t["name"] not in new]
        if already:
            lines.append(f"already enabled: {', '.join(already)}")
        if unknown:
            lines.append(f"unknown: {', '.join(unknown)}")
        return ToolResult(visible="\n".join(lines), meta={"matches": len(found), "activated": new})
