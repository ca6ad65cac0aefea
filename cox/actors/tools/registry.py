"""The built-in tools by name, and their specs for the model (sorted by name, byte-stable).

A session's built-in tools are :class:`LazyTool` entries: each carries its catalog spec
(``catalog.py``), which is all the first request needs, and imports and makes the tool itself
the first time a call needs more — its ``check``, ``risk``, ``subject``, ``writes`` or
``describe`` when the call is admitted, or ``call``. So ``cox run -p`` sends its first request
without importing any tool's implementation (``tests/provider/test_startup_imports.py``), and a
session pays for a tool's module only once it calls that tool.
"""

from __future__ import annotations

import threading
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.protocol.model import ToolSpec

from . import catalog
from .base import BaseTool, ToolEnv

if TYPE_CHECKING:
    from cox.agents.skills import Skills
    from cox.protocol.types import Risk, ToolCall, ToolResult

    from .catalog import Spec

__all__ = ["LazyTool", "agent_tools", "builtin_tools", "deferred_builtin_tools", "skill_tools", "specs",
           "tool_search"]


class LazyTool(BaseTool):
    """A built-in tool known by its spec until a call needs the tool: then its class is imported
    and made with ``args`` once (thread-safe: a call is admitted on the session's thread and runs
    on its own), and every method and attribute is the tool's. ``description``: the session's own
    words for a tool whose description depends on it (the agent types, the skills, what waits for
    ``tool_search``); the tool made from ``args`` must say the same."""

    def __init__(self, entry: Spec, *args: Any, description: str | None = None) -> None:
        self.entry = entry
        self.name, self.input_schema = entry.name, entry.input_schema
        self.description = entry.description if description is None else description
        self.parallel, self.required = entry.parallel, entry.required
        self._args = args
        self._lock = threading.Lock()
        self._tool: BaseTool | None = None

    def resolve(self) -> BaseTool:
        """The tool itself (imported and made on the first need)."""
        tool = self._tool
        if tool is None:
            with self._lock:
                if self._tool is None:
                    module, _, name = self.entry.impl.partition(":")
                    made: BaseTool = getattr(import_module(f"{__package__}.{module}"), name)(*self._args)
                    if type(made).spec is not self.entry or made.description != self.description:
                        raise RuntimeError(f"{self.entry.impl} is not the tool the catalog's {self.name!r} names")
                    self._tool = made
                tool = self._tool
        return tool

    @property
    def resolved(self) -> bool:
        """Whether the tool itself has been made (its module imported)."""
        return self._tool is not None

    def check(self, call_input: dict[str, Any]) -> None:
        self.resolve().check(call_input)

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return self.resolve().risk(call_input)

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return self.resolve().subject(call_input, env)

    def writes(self, call: ToolCall, env: ToolEnv) -> list[Path] | None:
        return self.resolve().writes(call, env)

    def describe(self, call: ToolCall, env: ToolEnv) -> ToolCall:
        return self.resolve().describe(call, env)

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        return self.resolve().call(call, env)

    def __getattr__(self, name: str) -> Any:
        """Anything else is the tool's own (``cox acp``'s terminal runs bash's ``_prepare``)."""
        if name.startswith("__") or name in ("entry", "_args", "_lock", "_tool"):
            raise AttributeError(name)  # the protocols copy and pickle probe, or not made yet
        return getattr(self.resolve(), name)

    def __repr__(self) -> str:
        return f"LazyTool({self.entry.impl}{'' if self._tool is None else ', made'})"


def _lazy(*entries: Spec) -> dict[str, BaseTool]:
    return {entry.name: LazyTool(entry) for entry in entries}


def builtin_tools() -> dict[str, BaseTool]:
    c = catalog
    return _lazy(c.READ, c.WRITE, c.EDIT, c.APPLY_PATCH, c.BASH, c.GREP, c.GLOB, c.LS, c.WEB_FETCH, c.TODO_WRITE,
                 c.TOOL_SEARCH, c.DIAGNOSTICS)


def deferred_builtin_tools() -> dict[str, BaseTool]:
    """Built-in tools that wait behind ``tool_search`` (their code is imported only when called)."""
    c = catalog
    return _lazy(c.WORK_GRAPH, c.DEFINITION, c.REFERENCES, c.RENAME_SYMBOL)


def agent_tools(types: dict[str, str] | None = None) -> dict[str, BaseTool]:
    """The four subagent tools (``agent.py``), for a session that may start agents (``types``:
    name → what it is for; none: the built-in ones)."""
    c = catalog
    first = LazyTool(c.AGENT, types, description=c.agent_description(types))
    return {first.name: first, **_lazy(c.AGENT_WAIT, c.AGENT_SEND, c.AGENT_CLOSE)}


def skill_tools(skills: Skills) -> dict[str, BaseTool]:
    """``{"skill": tool}`` when there is a skill, else nothing (no skills, no tool, no list)."""
    if not skills.by_name:
        return {}
    from cox.agents.skills import listing

    return {catalog.SKILL.name: LazyTool(catalog.SKILL, skills,
                                         description=catalog.skill_description(listing(skills.listed())))}


def tool_search(waiting: str = "") -> BaseTool:
    """``tool_search``, saying what this session deferred (``deferral.summary``)."""
    return LazyTool(catalog.TOOL_SEARCH, waiting, description=catalog.tool_search_description(waiting))


def specs(tools: dict[str, BaseTool]) -> list[ToolSpec]:
    return [ToolSpec(t.name, t.description, t.input_schema) for t in sorted(tools.values(), key=lambda t: t.name)]
