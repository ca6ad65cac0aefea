"""Language servers as supervised actors, and what the LSP tools need of them (issue 17).

``rpc.py`` (JSON-RPC over stdio), ``server.py`` (one server: documents, diagnostics, requests;
its actor), ``settle.py`` (when pushed diagnostics are complete), ``pool.py`` (a session's servers
under the ``lsp`` supervisor), ``servers.py`` (languages and default servers), ``report.py``
(diagnostic lines), ``after_edit.py`` (the edit hook), ``edits.py`` (a rename's WorkspaceEdit,
judged and applied), ``access.py`` (what every LSP tool does first). Nothing here is imported on
``cox run -p``'s path until a tool needs it.
"""
