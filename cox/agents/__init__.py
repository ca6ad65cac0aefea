"""Subagents: their definitions (``defs``), the runner a parent session gives its tools
(``runner``), and work graphs of agent tasks (``graph``). Imported only when an agent is used."""
