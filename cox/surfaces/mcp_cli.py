"""``cox mcp …``: see which MCP servers cox would start, and accept their tool definitions.

``mcp list`` reads the configuration only (user config, ``~/.claude.json``, ``.mcp.json``) and
starts nothing, so it is safe to run in an untrusted checkout.

``mcp trust <server>`` starts that one server (under the configured sandbox, bounded by
``mcp.startup_timeout_s``), lists its tools and stores their hashes in ``$COX_HOME/mcp-trust.json``:
from then on the model sees them as the server describes them. ``mcp trust`` with no name starts
every configured server the same way and prints each tool still pending or changed, one per line
(``<server>\\t<pending|changed>\\t<tool>``). Exit codes: 0 ok, 1 a server could not be reached,
2 bad usage (such as an unknown server).

``mcp login <server>`` / ``mcp logout <server>``: OAuth for HTTP servers (``mcp_login.py``).
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``mcp list``, ``mcp trust [server]``, ``mcp login|logout <server>`` and
    ``mcp serve [--cwd DIR]`` on the CLI's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser("mcp", help="MCP servers: list, trust, login, serve")
    sub = parser.add_subparsers(dest="mcp_command", required=True)
    sub.add_parser("list", help="the configured MCP servers and their origin (user, claude, project)")
    trust = sub.add_parser("trust", help="accept a server's current tool definitions; "
                                         "with no server, list the pending and changed tools")
    trust.add_argument("server", nargs="?")
    login = sub.add_parser("login", help="log in to an HTTP server that asks for OAuth (opens the browser)")
    login.add_argument("server")
    login.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="how long to wait for the browser to come back (default 300)")
    logout = sub.add_parser("logout", help="forget the OAuth token of a server")
    logout.add_argument("server")
    from .mcp_serve import add_arguments

    add_arguments(sub.add_parser("serve", help="serve cox's built-in tools over MCP stdio, confined to the "
                                                "directory; calls that would need approval are refused"))
    return parser


def run(args: argparse.Namespace) -> int:
    if args.mcp_command == "serve":
        from .mcp_serve import run as serve

        return serve(args)
    from cox.actors.mcp.config import load_servers
    from cox.config.loader import load_config

    cwd = Path.cwd()
    config = load_config(cwd)
    servers = load_servers(config.mcp, cwd)
    if args.mcp_command == "trust":
        return _trust(config, servers, cwd, getattr(args, "server", None))
    if args.mcp_command in ("login", "logout"):
        from .mcp_login import login, logout

        return login(servers, args) if args.mcp_command == "login" else logout(servers, args)
    if not servers:
        print("no mcp servers configured")
        return 0
    for name, spec in servers.items():
        where = spec.url if spec.url else " ".join([spec.command or "", *spec.args])
        print(f"{name}\t{spec.origin}\t{spec.transport}\t{where}")
    return 0


def _fetch(config: Any, spec: Any, cwd: Path) -> Any:
    """The server's tool list, or the exception that kept it from answering."""
    from cox.actors.mcp.supervisor import fetch_tools
    from cox.policy.sandbox import SandboxPolicy

    box = config.sandbox
    sandbox = SandboxPolicy(box.mode, tuple([cwd, *(Path(p) for p in box.writable_roots)]), True)
    try:
        return fetch_tools(spec, startup_timeout_s=config.mcp.startup_timeout_s, cwd=cwd, sandbox=sandbox)
    except Exception as err:  # noqa: BLE001 - reported per server, exit 1
        return err


def _trust(config: Any, servers: dict[str, Any], cwd: Path, name: str | None) -> int:
    from cox.actors.mcp.trust import TrustState, TrustStore

    store = TrustStore.default()
    if name is not None:
        spec = servers.get(name)
        if spec is None:
            known = ", ".join(servers) or "none configured"
            print(f"cox mcp trust: no mcp server named {name!r} (servers: {known})", file=sys.stderr)
            return 2
        tools = _fetch(config, spec, cwd)
        if isinstance(tools, BaseException):
            print(f"cox mcp trust: mcp server '{name}' could not be reached: {tools}", file=sys.stderr)
            return 1
        before = store.stored(name) or {}
        stored = store.accept(name, tools)
        changed = sum(1 for t, h in stored.items() if before.get(t) != h)
        print(f"trusted mcp server '{name}': {len(stored)} tools ({changed} new or changed)")
        return 0
    if not servers:
        print("no mcp servers configured")
        return 0
    with ThreadPoolExecutor(max_workers=min(8, len(servers))) as pool:
        fetched = dict(zip(servers, pool.map(lambda s: _fetch(config, s, cwd), servers.values()), strict=True))
    code = 0
    waiting = 0
    for server, tools in fetched.items():
        if isinstance(tools, BaseException):
            print(f"cox mcp trust: mcp server '{server}' could not be reached: {tools}", file=sys.stderr)
            code = 1
            continue
        for tool, state in store.states(servers[server], tools).items():
            if state in (TrustState.PENDING, TrustState.CHANGED):
                print(f"{server}\t{state}\t{tool}")
                waiting += 1
    if waiting:
        names = sorted({s for s, t in fetched.items() if not isinstance(t, BaseException)
                        and any(v in (TrustState.PENDING, TrustState.CHANGED)
                                for v in store.states(servers[s], t).values())})
        print("run: " + "; ".join(f"cox mcp trust {n}" for n in names), file=sys.stderr)
    elif code == 0:
        print("every mcp tool is trusted")
    return code
