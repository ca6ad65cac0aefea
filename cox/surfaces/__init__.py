"""Surfaces: the cox command, headless runs, the demo (and later the TUI, ACP and MCP servers)."""
