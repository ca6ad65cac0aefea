"""The built-in tools by name, and their specs for the model (sorted by name, byte-stable)."""

from __future__ import annotations

from cox.protocol.model import ToolSpec

from .apply_patch import ApplyPatchTool
from .base import BaseTool
from .bash import BashTool
from .deferred import ToolSearchTool
from .diagnostics import DiagnosticsTool
from .edit import EditTool
from .files import ReadTool, WriteTool
from .search import GlobTool, GrepTool, LsTool
from .todo import TodoWriteTool
from .web import WebFetchTool


def builtin_tools() -> dict[str, BaseTool]:
    tools: list[BaseTool] = [ReadTool(), WriteTool(), EditTool(), ApplyPatchTool(), BashTool(), GrepTool(),
                             GlobTool(), LsTool(), WebFetchTool(), TodoWriteTool(), ToolSearchTool(), DiagnosticsTool()]
    return {t.name: t for t in tools}


def specs(tools: dict[str, BaseTool]) -> list[ToolSpec]:
    return [ToolSpec(t.name, t.description, t.input_schema) for t in sorted(tools.values(), key=lambda t: t.name)]


def deferred_builtin_tools() -> dict[str, BaseTool]:
    """Built-in tools that wait behind ``tool_search`` (imported only when a session asks)."""
    from .navigate import DefinitionTool, ReferencesTool
    from .rename_symbol import RenameSymbolTool
    from .work_graph import WorkGraphTool

    tools: list[BaseTool] = [WorkGraphTool(), DefinitionTool(), ReferencesTool(), RenameSymbolTool()]
    return {t.name: t for t in tools}
