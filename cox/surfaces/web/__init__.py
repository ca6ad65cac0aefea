"""``cox serve``: the web chat and the web agent mode (docs/web.md). Starlette and uvicorn are
imported by this package's ``app`` and ``cli.run`` only, so no other command pays for them."""
