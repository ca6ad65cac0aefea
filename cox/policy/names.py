"""Which cox tools a rule name covers.

Rules use Claude Code's tool names so a team's rules read the same in both; cox's tools have
lower-case names. As in Claude Code, an ``Edit`` rule covers every tool that edits a file and a
``Read`` rule every tool that reads one.
"""

from __future__ import annotations

__all__ = ["AGENT_RULES", "CLOUD_AGENT", "PATH_RULES", "RULE_TOOLS", "grant_name", "is_mcp", "rule_names_for"]

CLOUD_AGENT = "cloud_agent"

_EDITS = frozenset({"edit", "write", "apply_patch", "rename_symbol"})

RULE_TOOLS: dict[str, frozenset[str]] = {
    "Read": frozenset({"read", "grep", "glob", "ls", "diagnostics", "definition", "references"}),
    "Grep": frozenset({"grep"}),
    "Glob": frozenset({"glob"}),
    "LS": frozenset({"ls"}),
    # Read-only (it never asks), but a deny rule written for Claude Code keeps the model off it.
    "TodoWrite": frozenset({"todo_write"}),
    "Edit": _EDITS,
    "MultiEdit": _EDITS,
    "NotebookEdit": _EDITS,
    "Write": frozenset({"write"}),
    "Bash": frozenset({"bash"}),
    "WebFetch": frozenset({"web_fetch"}),
    "WebSearch": frozenset({"web_search"}),
    "CloudAgent": frozenset({CLOUD_AGENT}),
    "Agent": frozenset({"agent"}),
    "Task": frozenset({"agent"}),
    "Skill": frozenset({"skill"}),  # the subject is the skill's name: Skill(deploy)
    # MCP resources (Claude Code's names); the subject is ``<server>`` / ``<server> <uri>``.
    "ListMcpResourcesTool": frozenset({"list_mcp_resources"}),
    "ReadMcpResourceTool": frozenset({"read_mcp_resource"}),
}

# Rule names whose specifier is a path glob (``Read(~/.ssh/**)``).
PATH_RULES = frozenset({"Read", "Grep", "Glob", "LS", "Edit", "MultiEdit", "NotebookEdit", "Write"})

# Rule names whose specifier is an agent type (``Task(Explore)``), compared with the call's
# ``subagent_type`` (the part of the agent tool's subject before ": ").
AGENT_RULES = frozenset({"Task", "Agent"})

_BY_TOOL: dict[str, frozenset[str]] = {}
for _rule, _tools in RULE_TOOLS.items():
    for _tool in _tools:
        _BY_TOOL[_tool] = _BY_TOOL.get(_tool, frozenset()) | {_rule}

# The rule name a session grant is recorded under: the narrowest that names the tool.
_GRANT = {"read": "Read", "grep": "Grep", "glob": "Glob", "edit": "Edit", "write": "Edit",
          "apply_patch": "Edit", "rename_symbol": "Edit", "diagnostics": "Read", "definition": "Read",
          "references": "Read", "bash": "Bash", "web_fetch": "WebFetch", "web_search": "WebSearch",
          "agent": "Agent", "skill": "Skill", "list_mcp_resources": "ListMcpResourcesTool", "read_mcp_resource": "ReadMcpResourceTool"}


def is_mcp(tool: str) -> bool:
    return tool.startswith("mcp__")


def rule_names_for(tool: str) -> frozenset[str]:
    """The rule names that cover cox tool ``tool`` (empty for an unknown tool)."""
    return _BY_TOOL.get(tool, frozenset())


def grant_name(tool: str) -> str | None:
    return _GRANT.get(tool)
