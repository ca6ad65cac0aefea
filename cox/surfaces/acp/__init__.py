"""``cox acp``: cox as an Agent Client Protocol agent over stdio, for Zed, JetBrains and any ACP
client (docs/acp.md). Imported only when ``cox acp`` runs: the ``acp`` package (pydantic) is not
on ``cox run -p``'s path.

- ``main``: the process — protocol on private descriptors, the asyncio loop, teardown;
- ``agent``: the JSON-RPC methods (initialize, authenticate, session/new|load|prompt|cancel|set_mode);
- ``session``: one session's event relay and its prompt, cancel and mode;
- ``updates``: cox's Events → ``session/update`` payloads (live and replayed);
- ``permission``: ``approval_required`` ↔ ``session/request_permission`` and its four answers;
- ``content``: a prompt's content blocks → ``UserTurn``;
- ``bridge``: the client's ``fs/*`` used by the file tools;
- ``mcp``: the MCP servers the client passes in ``session/new``.
"""
