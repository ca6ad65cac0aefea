"""``cox mcp login <server>`` / ``cox mcp logout <server>``, and the login offered when an
interactive session starts with an HTTP server that needs one.

``login`` runs the OAuth flow of ``cox.actors.mcp.auth`` outside any session: it prints the login
URL, opens the browser (``webbrowser``, which honours ``BROWSER``), takes the redirect on
127.0.0.1, checks the new token against the server and files it (the OS keyring as
``cox/mcp/<name>``, else ``$COX_HOME/mcp-auth/<name>.json``). Exit codes: 0 logged in (or the
server asked for no login), 1 the login failed (the message says what to do), 2 bad usage.

``logout`` revokes the server's token at its authorization server when that advertises a
``revocation_endpoint`` (RFC 7009; best effort, every wait bounded) and always forgets it here
(and its client registration). Exit 0 either way.
"""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["login", "login_at_start", "logout"]


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def login(servers: dict[str, Any], args: Any) -> int:
    from cox.actors.mcp.auth import DEFAULT_LOGIN_TIMEOUT_S, LoginFailed, describe_where
    from cox.actors.mcp.auth import login as run_login
    from cox.actors.mcp.tokens import TokenStore
    from cox.actors.store.layout import cox_home

    from . import logs

    logs.setup(cox_home() / "logs")  # the SDK's tracebacks go to the log file, not the terminal
    name = args.server
    spec = servers.get(name)
    if spec is None:
        known = ", ".join(n for n, s in servers.items() if s.url) or "none configured"
        _err(f"cox mcp login: no mcp server named {name!r} (HTTP servers: {known})")
        return 2
    if not spec.url:
        _err(f"cox mcp login: mcp server '{name}' is a stdio server; only HTTP servers log in")
        return 2
    timeout = args.timeout if getattr(args, "timeout", None) else DEFAULT_LOGIN_TIMEOUT_S
    store = TokenStore()
    try:
        result = run_login(spec, store=store, timeout=timeout)
    except LoginFailed as err:
        _err(f"cox mcp login: {err}")
        return 1
    except KeyboardInterrupt:
        _err(f"cox mcp login: interrupted; nothing was filed; run `cox mcp login {name}` again")
        return 1
    if result.where is None:
        print(f"mcp server '{name}' did not ask for a login ({result.tools} tools); nothing was filed")
        return 0
    print(f"logged in to mcp server '{name}' ({result.tools} tools); the token is filed "
          f"{describe_where(name, result.where, store)}")
    return 0


def logout(servers: dict[str, Any], args: Any) -> int:
    from cox.actors.mcp.tokens import TokenStore

    name = args.server
    store = TokenStore()
    record = store.load(name)
    why_not: str | None = "there was no token to revoke"
    if record is not None and record.get("tokens"):
        from cox.actors.mcp.auth import revoke

        try:
            why_not = revoke(record)
        except Exception as err:  # noqa: BLE001 - best effort: the local copy goes regardless
            why_not = str(err) or type(err).__name__
    if not store.delete(name) and record is None:
        print(f"no login stored for mcp server '{name}'")
        return 0
    if why_not is None:
        print(f"logged out of mcp server '{name}': its authorization server revoked the token, and it is "
              "forgotten here")
    else:
        print(f"logged out of mcp server '{name}': its token is forgotten here (not revoked at the "
              f"authorization server: {why_not})")
    return 0


def login_at_start(manager: Any, *, wait_s: float = 30.0) -> None:
    """For an interactive session (a person at a terminal, before the TUI takes the screen):
    each HTTP server that was skipped for want of a login gets the browser flow now; once it
    succeeds the server is started again. Ctrl-C skips a server; a failure is a warning."""
    from cox.actors.mcp.auth import LoginFailed, describe_where, login_hint
    from cox.actors.mcp.auth import login as run_login
    from cox.actors.mcp.tokens import TokenStore

    store = TokenStore()
    for row in manager.state():
        name = str(row["name"])
        spec = manager.servers.get(name)
        if spec is None or not spec.url or login_hint(name) not in str(row.get("status", "")):
            continue
        _err(f"cox: mcp server '{name}' needs a login (Ctrl-C skips it)")
        try:
            result = run_login(spec, store=store)
        except LoginFailed as err:
            _err(f"cox: warning: mcp server '{name}': {err}")
            continue
        except KeyboardInterrupt:
            _err(f"cox: mcp server '{name}' skipped; {login_hint(name)} to use it")
            continue
        _err(f"cox: logged in to mcp server '{name}'; the token is filed {describe_where(name, result.where, store)}")
        try:
            manager.reconnect(name)
        except Exception as err:  # noqa: BLE001 - the server stays skipped, said so below
            _err(f"cox: warning: mcp server '{name}' could not be started again: {err}")
            continue
        try:
            manager.connection(name, timeout=wait_s)
        except Exception as err:  # noqa: BLE001 - reported with the other failed servers
            _err(f"cox: warning: mcp server '{name}' did not come back after the login: {err}")
            continue
        deadline = time.monotonic() + 2.0  # the tool list is published just after the connection
        while manager.board.get(name).phase != "ready" and time.monotonic() < deadline:
            time.sleep(0.01)
