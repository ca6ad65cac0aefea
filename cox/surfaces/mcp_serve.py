"""``cox mcp serve``: cox's built-in tools as an MCP server over stdio.

Another MCP client (an editor, another agent) gets ``read``, ``write``, ``edit``, ``bash`` … with
the same names, descriptions and input schemas the model sees. Every call

- is confined to the served directory (``--cwd``, else the current one): a ``ToolEnv`` whose only
  root is that directory, its own ``CancelScope`` (cancelled when the client cancels the request),
  and the session-less sandbox settings from config (``sandbox.mode``, ``writable_roots``,
  ``network``);
- goes through the same permission engine as a session (``build_engine``), decided with the
  configured ``permissions.mode`` and the approval policy ``never``: there is no one to ask, so
  what would ask is refused, and the refusal (with the engine's reason) is an error result;
- runs through the same choke point as a session's calls (``cox.actors.tools.execute``): every
  result is archived whole in ``$COX_HOME`` (through a store actor of its own, the one writer of
  cox.db, started on the first call) and a big one is capped to head and tail around its archive
  id, so ``cox expand ID`` gives back what the client was not shown. There is no session to
  rewind, so nothing is checkpointed;
- returns the tool's text and its images as MCP content, ``isError`` on an error, a refusal or an
  aborted call. Output the tool streams while it runs (bash) becomes progress notifications when
  the client asked for them.

Tools that only make sense inside a session (``todo_write``, ``tool_search``) are not served.
stdout carries the protocol only: logs go to ``$COX_HOME/logs`` (and stderr with ``cox --verbose``)
and fd 1 points at stderr while serving (``mcp_front.Wire``), so a tool's stray output cannot
corrupt the stream. ``initialize``, ``ping`` and ``tools/list`` are answered before the SDK is
imported (``mcp_front``), so a client that lists tools at once sees them within ~0.3 s.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["SESSION_ONLY", "ToolServer", "main", "run"]

log = logging.getLogger(__name__)

SESSION_ONLY = frozenset({"todo_write", "tool_search"})
"""Built-in tools that need a session behind them; not served."""


class ToolServer:
    """The built-in tools, the permission engine and the settings one ``cox mcp serve`` uses."""

    def __init__(self, config: Any, cwd: Path, *, home: Path | None = None) -> None:
        from cox.actors.tools.registry import builtin_tools
        from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode

        from .wiring import build_engine

        self.config = config
        self.cwd = cwd
        self.home = home or Path.home()
        self.tools = {n: t for n, t in builtin_tools().items() if n not in SESSION_ONLY}
        self.engine = build_engine(config, cwd, self.home)
        self.mode = PermissionMode(config.permissions.mode)
        self.approval = ApprovalPolicy.NEVER
        self.sandbox_mode = SandboxMode(config.sandbox.mode)
        t = config.tools
        self.limits = {"visible_max_bytes": t.visible_max_bytes, "output_head_lines": t.output_head_lines,
                       "output_tail_lines": t.output_tail_lines}
        self._app: Any = None
        self._app_lock = threading.Lock()
        self._closed = False

    # --- the archive ----------------------------------------------------------------------------

    def archive(self, data: bytes) -> str:
        """Keep ``data`` whole in ``$COX_HOME``'s archive; its id. The store actor (the only writer
        of cox.db) is started on first use, in a supervisor tree of this process's own."""
        from cox.actors.store import messages as sm

        with self._app_lock:
            if self._closed:
                raise RuntimeError("cox mcp serve is closing")
            if self._app is None:
                from cox.actors.store.layout import cox_home

                from .runtime import App

                self._app = App(cox_home())
            store = self._app.store()
        if store is None:
            raise RuntimeError("the store is not running")
        return str(store.ask(sm.ArchivePut(data), timeout=30))

    def close(self) -> None:
        """Stop the store actor (its threads would keep the process alive)."""
        with self._app_lock:
            self._closed = True
            app, self._app = self._app, None
        if app is not None:
            app.close()

    # --- what a client sees ------------------------------------------------------------------

    def listing(self) -> list[dict[str, Any]]:
        """The ``tools/list`` answer as plain JSON (the front sends it before the SDK is loaded)."""
        return [{"name": t.name, "description": t.description, "inputSchema": dict(t.input_schema)}
                for t in sorted(self.tools.values(), key=lambda t: t.name)]

    def list_tools(self) -> list[Any]:
        import mcp_types

        return [mcp_types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
                for t in self.listing()]

    # --- one call (runs in a worker thread) -----------------------------------------------------

    def env(self, cancel: Any, output: Any = None) -> Any:
        from cox.actors.tools.base import ToolEnv, ToolServices
        from cox.policy.sandbox import read_deny_patterns

        box = self.config.sandbox
        t = self.config.tools
        services = ToolServices(sandbox_mode=self.sandbox_mode,
                                writable_roots=tuple(Path(p).expanduser() for p in box.writable_roots),
                                network=bool(box.network), archive=self.archive,
                                read_deny=tuple(read_deny_patterns(getattr(self.engine, "deny", ()))))
        return ToolEnv(roots=[self.cwd], cwd=self.cwd, cancel=cancel,
                       output=output or (lambda chunk: None),
                       bash_timeout_s=float(t.bash_timeout_s), bash_max_timeout_s=float(t.bash_max_timeout_s),
                       home=self.home, reads=self.engine.read_guard(), services=services)

    def call(self, name: str, arguments: dict[str, Any], cancel: Any, output: Any = None) -> Any:
        """Run one call to the end; never raises. Returns a ``ToolResult``."""
        from cox.actors.tools.base import ToolInputError
        from cox.actors.tools.bash import reap
        from cox.actors.tools.execute import execute
        from cox.policy.paths import PathEscape
        from cox.protocol.types import ToolCall, ToolResult, ToolStatus, new_ulid

        tool = self.tools.get(name)
        if tool is None:
            return ToolResult.error(f"no tool named {name!r} (tools: {', '.join(sorted(self.tools))})")
        env = self.env(cancel, output)
        call = ToolCall(id=new_ulid(), name=name, input=dict(arguments))
        try:
            tool.check(call.input)
            call = tool.describe(call, env)
        except (ToolInputError, PathEscape) as exc:
            return ToolResult.error(str(exc))
        except Exception as exc:  # noqa: BLE001 - bad input is the client's to read
            return ToolResult.error(f"{name}: bad input: {exc}")
        outcome = self.engine.decide(call, self.mode, self.approval, self.sandbox_mode)
        log.info("mcp serve: %s %s -> %s (%s)", name, call.subject, outcome.kind, outcome.reason)
        if outcome.kind != "allow":
            return ToolResult.denied(f"refused: {outcome.reason}")
        try:
            result = execute(tool, call, env, archive=self.archive, limits=self.limits).result
        finally:
            reap(env.processes)
        if not result.ok:
            log.info("mcp serve: %s ended %s: %s", name, result.status.value, result.visible[:200])
        if cancel.cancelled and result.status is ToolStatus.OK:
            return ToolResult.aborted()
        return result


def to_mcp(result: Any) -> Any:
    """A ``ToolResult`` as a ``CallToolResult``: the text, then the images; ``isError`` unless ok."""
    import mcp_types

    content: list[Any] = []
    if result.visible or not result.images:
        content.append(mcp_types.TextContent(type="text", text=result.visible))
    for image in result.images or []:
        content.append(mcp_types.ImageContent(type="image", data=image["data"], mime_type=image["media_type"]))
    return mcp_types.CallToolResult(content=content, is_error=not result.ok)


def _progress_token(ctx: Any) -> Any:
    meta = getattr(ctx, "meta", None)
    if not meta:
        return None
    get: Callable[[str], Any] = meta.get if isinstance(meta, dict) else (lambda k: getattr(meta, k, None))
    token = get("progress_token")
    return token if token is not None else get("progressToken")


def build_server(tools: ToolServer) -> Any:
    """The SDK's low-level server with ``tools/list`` and ``tools/call`` backed by ``tools``."""
    import anyio
    import anyio.from_thread
    import anyio.to_thread
    import mcp_types
    from mcp.server.lowlevel import Server

    from cox import __version__
    from cox.supervisors import CancelScope

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return mcp_types.ListToolsResult(tools=tools.list_tools())

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        scope = CancelScope("mcp-serve")
        token = _progress_token(ctx)
        sent = [0]

        def output(chunk: str) -> None:
            if token is None or not chunk:
                return
            sent[0] += 1
            try:
                anyio.from_thread.run(lambda: ctx.session.send_progress_notification(
                    token, float(sent[0]), None, chunk, related_request_id=ctx.request_id))
            except Exception:  # noqa: BLE001 - progress is best effort; the call goes on
                log.debug("mcp serve: a progress notification was not sent", exc_info=True)

        def work() -> Any:
            return tools.call(params.name, dict(params.arguments or {}), scope, output)

        result = None
        try:
            result = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        finally:
            if result is None:  # the client cancelled (notifications/cancelled) or the server is closing
                scope.cancel("the client cancelled the call")
        return to_mcp(result)

    return Server("cox", version=__version__, instructions=instructions(tools.cwd),
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def instructions(cwd: Path) -> str:
    return f"cox's built-in tools, confined to {cwd}; calls a person would have to approve are refused"


async def serve(tools: ToolServer, stdin: Any = None, stdout: Any = None) -> None:
    """Serve with the SDK; ``stdin``/``stdout`` are text files (the front's replay and filter),
    else the process's own."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(tools)
    streams = (anyio.wrap_file(stdin), anyio.wrap_file(stdout)) if stdin is not None else (None, None)
    async with stdio_server(*streams) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class Preload:
    """Import the SDK in a thread once the front has answered ``tools/list``, so the first
    ``tools/call`` does not wait the 1–2 s the imports take (and the handshake never does)."""

    MODULES = ("anyio", "anyio.to_thread", "anyio.from_thread", "mcp_types", "mcp.server.lowlevel",
               "mcp.server.stdio")

    def __init__(self) -> None:
        import threading

        self.thread = threading.Thread(target=self._load, name="cox-mcp-preload", daemon=True)

    def start(self) -> None:
        if self.thread.ident is None:
            self.thread.start()

    def join(self) -> None:
        self.start()
        self.thread.join()

    def _load(self) -> None:
        import importlib

        for name in self.MODULES:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the import on the serving path raises it again, with context
                log.debug("mcp serve: preloading %s failed", name, exc_info=True)
                return


def run(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin. 0 then; 2 for a bad ``--cwd`` or config (said before
    anything is answered). The handshake is answered by ``mcp_front`` before the SDK is imported."""
    from cox import __version__
    from cox.actors.store.layout import cox_home
    from cox.config.loader import load_config

    from . import logs
    from .mcp_front import FilteredOut, Front, ReplayIn, Wire

    raw = getattr(args, "cwd", None)
    cwd = Path(raw).expanduser().resolve() if raw else Path.cwd().resolve()
    if not cwd.is_dir():
        print(f"cox mcp serve: --cwd {raw}: not a directory", file=sys.stderr)
        return 2
    logs.setup(cox_home() / "logs", verbose=bool(getattr(args, "verbose", False)))
    try:
        config = load_config(cwd)
        tools = ToolServer(config, cwd)
    except Exception as exc:  # noqa: BLE001 - a config error is one line on stderr, never on stdout
        print(f"cox mcp serve: {exc}", file=sys.stderr)
        return 2
    log.info("mcp serve: serving %d tools for %s (mode %s)", len(tools.tools), cwd, tools.mode.value)
    wire = Wire()
    try:
        preload = Preload()
        front = Front(wire, name="cox", version=__version__, instructions=instructions(cwd),
                      listing=tools.listing, on_listed=preload.start)
        first = front.run()
        if first is None:  # the client closed stdin during the handshake
            return 0
        preload.join()
        log.info("mcp serve: the MCP SDK takes over at %s", first[-1][:80].decode("utf-8", "replace").strip())
        import anyio

        anyio.run(serve, tools, ReplayIn(first, wire.reader), FilteredOut(wire.writer))
    except KeyboardInterrupt:
        pass
    finally:
        tools.close()
        wire.restore()
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", help="the directory the tools are confined to (default: the current one)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cox mcp serve", description="serve cox's built-in tools over MCP stdio")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
