"""Custom slash commands: prompt files a person keeps (``~/.cox/commands``, ``~/.claude/commands``)
or a repository ships (``.cox/commands``, ``.claude/commands``), and MCP servers' prompts.

``files`` finds and reads them, ``expand`` turns ``/name args`` into the user turn, ``bang``
runs their ``!`command``` parts through the permission engine like a model's bash call, and
``mcp_prompts`` makes ``/mcp__server__prompt`` commands of MCP prompts. ``init`` is the
built-in ``/init``. Nothing here imports a heavy module: ``cox run -p`` loads it on every run
whose prompt starts with ``/``.
"""
