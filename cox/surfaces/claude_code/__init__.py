"""Claude Code's dialect of headless I/O: what ``claude -p … --output-format stream-json
--input-format stream-json`` reads and writes, so scripts and the Claude Agent SDK (which drives
that CLI over its control protocol) can sit on cox.

One idea per module:

- ``ids``: cox's session ids (ULIDs) as the UUIDs this dialect shows, and back;
- ``wire``: the one locked writer of stdout lines (several threads write: the driver, the stdin
  reader answering control requests, the session's hook thread, MCP calls);
- ``translate``: cox's Events → Claude Code's ``system`` / ``assistant`` / ``user`` /
  ``stream_event`` / ``result`` messages;
- ``outgoing``: cox's own control requests to the client (``can_use_tool``, ``hook_callback``,
  ``mcp_message``), each answered by a ``control_response`` read from stdin;
- ``permission``: ``--permission-prompt-tool stdio``: approvals asked as ``can_use_tool``;
- ``control``: the stdin side: user messages and the client's ``control_request``s;
- ``hooks``: hooks the client registered at ``initialize``, run at cox's hook points;
- ``sdk_mcp``: in-process SDK MCP servers (``type: "sdk"`` in ``--mcp-config``), reached over the
  control channel;
- ``commands``: the session's slash commands and skills as ``system/init`` and ``initialize``
  list them;
- ``flags``: the entry points (``cox -p …``, ``cox <flags>``) routed into ``cox run``;
- ``driver``: the pieces put together for one ``cox run --dialect claude``.

cox's own event dialect stays the default of ``cox run``; nothing here is imported unless the
dialect is asked for.
"""
