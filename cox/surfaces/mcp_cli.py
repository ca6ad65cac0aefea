"""``cox mcp …``: see which MCP servers cox would start, and accept them.

``mcp list`` reads the configuration only (user config, ``~/.claude.json``, ``.mcp.json``) and
starts nothing, so it is safe to run in an untrusted checkout. One line per server:
``<name>\t<origin>\t<transport>\t<command line or URL>\t<trusted|not trusted>``.

``mcp trust <server>`` accepts a server in two steps (``cox.actors.mcp.trust``):

1. a server a repository brought (``.mcp.json``) whose exact launch was not accepted yet is shown
   first — the command line it would run, quoted and escaped for the terminal, the folder, the
   environment, the file it came from and the sandbox it gets — and nothing runs unless the
   person answers ``y`` on a terminal (without a terminal: only with ``--yes``);
2. then the server is started (under the sandbox, bounded by ``mcp.startup_timeout_s``), its
   tools are listed and their hashes stored in ``$COX_HOME/mcp-trust.json``: from then on the
   model sees them as the server describes them.

A server from the user's own config skips step 1. ``mcp trust`` with no name prints each tool
still pending or changed, one per line (``<server>\t<pending|changed>\t<tool>``), starting only
the servers whose launch is trusted; one that is not is listed as ``<server>\tuntrusted\t-``.
Exit codes: 0 ok, 1 a server could not be reached or the person said no, 2 bad usage (an
unknown server, or a launch to accept without a terminal and without ``--yes``).

``mcp login <server>`` / ``mcp logout <server>``: OAuth for HTTP servers (``mcp_login.py``); a
project server's login waits for its trust too (a login talks to the server).
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cox.actors.mcp.launch import show_arg, show_text
from cox.policy.sanitize import sanitize

__all__ = ["add_parser", "run", "session_sandbox"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``mcp list``, ``mcp trust [server]``, ``mcp login|logout <server>`` and
    ``mcp serve [--cwd DIR]`` on the CLI's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser("mcp", help="MCP servers: list, trust, login, serve")
    sub = parser.add_subparsers(dest="mcp_command", required=True)
    sub.add_parser("list", help="the configured MCP servers, their origin (user, claude, project) and trust")
    trust = sub.add_parser("trust", help="accept a server (a project's: its exact launch, asked first) and its "
                                         "current tool definitions; with no server, list what waits for trust")
    trust.add_argument("server", nargs="?", help="the server to accept (as `cox mcp list` names it)")
    trust.add_argument("--yes", action="store_true",
                       help="accept a project server's launch without asking (needed without a terminal)")
    login = sub.add_parser("login", help="log in to an HTTP server that asks for OAuth (opens the browser)")
    login.add_argument("server", help="the HTTP server to log in to")
    login.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="how long to wait for the browser to come back (default 300)")
    logout = sub.add_parser("logout", help="forget the OAuth token of a server")
    logout.add_argument("server", help="the server whose token to forget")
    from .mcp_serve import add_arguments

    add_arguments(sub.add_parser("serve", help="serve cox's built-in tools over MCP stdio, confined to the "
                                                "directory; calls that would need approval are refused"))
    return parser


def run(args: argparse.Namespace) -> int:
    if args.mcp_command == "serve":
        from .mcp_serve import run as serve

        return serve(args)
    from cox.actors.mcp.config import load_servers
    from cox.actors.mcp.trust import TrustStore
    from cox.config.loader import load_config

    cwd = Path.cwd()
    config = load_config(cwd)
    servers = load_servers(config.mcp, cwd)
    for spec in servers.values():
        for warning in spec.warnings:
            print(f"cox: warning: {sanitize(warning)}", file=sys.stderr)
    store = TrustStore.default()
    if args.mcp_command == "trust":
        return _trust(config, servers, cwd, store, getattr(args, "server", None), yes=getattr(args, "yes", False))
    if args.mcp_command in ("login", "logout"):
        from .mcp_login import login, logout

        if args.mcp_command == "logout":
            return logout(servers, args)
        wanted = servers.get(args.server)
        if wanted is not None and not store.launch_trusted(wanted, cwd):
            print(f"cox mcp login: mcp server {_q(wanted.name)} comes from {show_text(wanted.source)} and is "
                  f"not trusted yet; run: cox mcp trust {show_arg(wanted.name)}", file=sys.stderr)
            return 1
        return login(servers, args)
    if not servers:
        print("no mcp servers configured")
        return 0
    for name, spec in servers.items():
        trusted = "trusted" if store.launch_trusted(spec, cwd) else "not trusted"
        print(f"{show_text(name)}\t{spec.origin}\t{spec.transport}\t{_where(spec)}\t{trusted}")
    return 0


def _q(name: str) -> str:
    """A server's name in a sentence: quoted, escaped for the terminal (it may come from a repository)."""
    return f"'{show_text(name)}'"


def _where(spec: Any) -> str:
    if spec.url:
        return show_text(spec.url)
    return " ".join(show_arg(a) for a in [spec.command or "", *spec.args])


def session_sandbox(config: Any, cwd: Path) -> Any:
    """The sandbox a session in ``cwd`` would give its stdio servers (``cox doctor`` too); a
    project server gets at least ``workspace-write`` from it (``launch.sandbox_for``)."""
    from cox.policy.sandbox import SandboxPolicy

    box = config.sandbox
    return SandboxPolicy(box.mode, tuple([cwd, *(Path(p) for p in box.writable_roots)]), True)


def _fetch(config: Any, spec: Any, cwd: Path, store: Any) -> Any:
    """The server's tool list, or the exception that kept it from answering."""
    from cox.actors.mcp.supervisor import fetch_tools

    try:
        return fetch_tools(spec, startup_timeout_s=config.mcp.startup_timeout_s, cwd=cwd,
                           sandbox=session_sandbox(config, cwd), trust=store)
    except Exception as err:  # noqa: BLE001 - reported per server, exit 1
        return err


def _ask(question: str) -> bool:
    """``question [y/N]`` on the terminal; only ``y``/``yes`` is a yes (EOF is a no)."""
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = sys.stdin.readline()
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return False
    return answer.strip().lower() in ("y", "yes")


def _changes(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    return [key for key in ("transport", "command", "args", "cwd", "env", "env_values", "url", "headers")
            if before.get(key) != now.get(key)]


def _consent(config: Any, spec: Any, cwd: Path, store: Any, *, yes: bool) -> int | None:
    """Step 1 for a project server: show its launch and get the person's yes (``None``), or the
    exit code when the launch stays untrusted. Nothing has been started either way."""
    from cox.actors.mcp.launch import describe, launch_record, sandbox_for

    name = _q(spec.name)
    for line in describe(spec, cwd):
        print(line)
    if spec.transport == "stdio":
        box = sandbox_for(spec, session_sandbox(config, cwd), cwd)
        if box is None:
            print("  sandbox:     none")
        else:
            where = ", ".join(show_arg(str(r)) for r in box.writable_roots)
            print(f"  sandbox:     {box.mode}" + (f" (writable: {where})" if box.mode == "workspace-write" else ""))
    earlier = store.launches(spec.name)
    if earlier:
        changed = _changes(earlier[0], launch_record(spec, cwd))
        print(f"  changed since you trusted it: {', '.join(changed) or 'the launch'}")
    if not yes:
        if not sys.stdin.isatty():
            print(f"cox mcp trust: mcp server {name} comes from {show_text(spec.source)}, a file of the "
                  "repository; nothing was started. Run this on a terminal to answer, or pass --yes to "
                  "trust the launch shown above", file=sys.stderr)
            return 2
        if not _ask(f"start mcp server {name} as shown and trust it?"):
            print(f"mcp server {name} is not trusted; nothing was started", file=sys.stderr)
            return 1
    store.accept_launch(spec, cwd)
    return None


def _hints(tool: Any) -> str:
    from cox.actors.mcp.cache import ToolDef

    d = ToolDef.of(tool)
    marks = [label for key, label in (("readOnlyHint", "read-only"), ("destructiveHint", "destructive"),
                                      ("idempotentHint", "idempotent"), ("openWorldHint", "open-world"))
             if d.hint(key)]
    return f" [{', '.join(marks)}]" if marks else ""


def _trust(config: Any, servers: dict[str, Any], cwd: Path, store: Any, name: str | None, *,
           yes: bool = False) -> int:
    try:
        return _trust_servers(config, servers, cwd, store, name, yes=yes)
    except (OSError, ValueError) as err:  # the trust file: unwritable, or of a newer cox
        print(f"cox mcp trust: {sanitize(str(err))}", file=sys.stderr)
        return 1


def _trust_servers(config: Any, servers: dict[str, Any], cwd: Path, store: Any, name: str | None, *,
                   yes: bool = False) -> int:
    from cox.actors.mcp.trust import TrustState, tool_hash

    if name is not None:
        spec = servers.get(name)
        if spec is None:
            known = ", ".join(show_text(n) for n in servers) or "none configured"
            print(f"cox mcp trust: no mcp server named {_q(name)} (servers: {known})", file=sys.stderr)
            return 2
        if not store.launch_trusted(spec, cwd):
            refused = _consent(config, spec, cwd, store, yes=yes)
            if refused is not None:
                return refused
        tools = _fetch(config, spec, cwd, store)
        if isinstance(tools, BaseException):
            print(f"cox mcp trust: mcp server {_q(name)} could not be reached: {sanitize(str(tools))}",
                  file=sys.stderr)
            return 1
        before = store.stored(name) or {}
        stored = store.accept(name, tools)
        fresh = [t for t in tools if before.get(t.name) != tool_hash(t)]
        print(f"trusted mcp server {_q(name)}: {len(stored)} tools ({len(fresh)} new or changed)")
        for tool in fresh:
            print(f"  {show_text(tool.name)}{_hints(tool)}")
        return 0
    if not servers:
        print("no mcp servers configured")
        return 0
    startable = {n: s for n, s in servers.items() if store.launch_trusted(s, cwd)}
    fetched: dict[str, Any] = {}
    if startable:
        with ThreadPoolExecutor(max_workers=min(8, len(startable))) as pool:
            fetched = dict(zip(startable, pool.map(lambda s: _fetch(config, s, cwd, store), startable.values()),
                               strict=True))
    code = 0
    waiting: list[str] = []
    for server in servers:
        if server not in startable:
            print(f"{show_text(server)}\tuntrusted\t-")
            waiting.append(server)
            continue
        tools = fetched[server]
        if isinstance(tools, BaseException):
            print(f"cox mcp trust: mcp server {_q(server)} could not be reached: {sanitize(str(tools))}",
                  file=sys.stderr)
            code = 1
            continue
        pending = False
        for tool, state in store.states(servers[server], tools).items():
            if state in (TrustState.PENDING, TrustState.CHANGED):
                print(f"{show_text(server)}\t{state}\t{show_text(tool)}")
                pending = True
        if pending:
            waiting.append(server)
    if waiting:
        print("run: " + "; ".join(f"cox mcp trust {show_arg(n)}" for n in sorted(waiting)), file=sys.stderr)
    elif code == 0:
        print("every mcp tool is trusted")
    return code
