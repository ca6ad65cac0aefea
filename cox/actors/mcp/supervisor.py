"""The ``mcp`` supervisor and ``McpManager``, the one object the rest of cox holds.

The manager never keeps an actor ref: every call resolves the server by its stable name under the
``mcp`` supervisor, so a server restarted after a crash is reached without anybody noticing.
A server that fails at start is logged as a warning and shows as ``failed: why`` in ``state()``;
the supervisor keeps retrying it with exponential backoff, and nobody gets an exception.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mcp_types
import pykka

from cox.protocol.interfaces import CancelToken
from cox.supervisors import Backoff, ChildSpec, Restart, SupervisorHandle, start_supervisor

from .config import McpServerSpec
from .server import Connection, McpServerActor, McpServerCrashed, ServerSettings, StatusBoard
from .trust import TrustState, TrustStore

__all__ = ["DEFAULT_BACKOFF", "McpManager", "fetch_tools", "start_mcp"]

log = logging.getLogger(__name__)

DEFAULT_BACKOFF = Backoff(initial_s=0.1, max_s=5.0, reset_after_s=0.5)
"""A server that lived half a second (it got through its start-up) counts as healthy again, so a
server killed from outside comes back at once; one that dies while starting backs off, up to 5 s."""


class McpManager:
    """The MCP servers of one process: their state, their tools, and a way to reach each."""

    def __init__(self, handle: SupervisorHandle, servers: Mapping[str, McpServerSpec], settings: ServerSettings,
                 board: StatusBoard, trust: TrustStore | None = None) -> None:
        self.handle = handle
        self.servers = dict(servers)
        self.settings = settings
        self.board = board
        self.trust = TrustStore.default() if trust is None else trust

    def state(self) -> list[dict[str, str]]:
        """One row per server: ``{"name", "status"}`` with status ``starting``, ``ready``,
        ``restarting N`` or ``failed: why`` (what ``cox doctor`` and the TUI show)."""
        children = {c["name"]: c for c in self.handle.which_children()} if self.handle.is_alive() else {}
        rows = []
        for name in self.servers:
            status = self.board.get(name)
            child = children.get(name)
            restarts = int(child["restarts"]) if child else 0
            if status.phase == "failed":
                text = f"failed: {status.error}"
            elif child is not None and (child["state"] != "running" or not child["alive"]):
                text = f"restarting {restarts}"
            elif status.phase == "ready":
                text = "ready"
            elif restarts:
                text = f"restarting {restarts}"
            else:
                text = "starting"
            rows.append({"name": name, "status": text})
        return rows

    def wait_settled(self, timeout: float | None = None) -> None:
        """Wait until no server is still in its first start (each is ready or failed), at most
        ``timeout`` (default ``startup_timeout_s``). Surfaces call it once before the first turn."""
        deadline = time.monotonic() + (self.settings.startup_timeout_s if timeout is None else timeout)
        while time.monotonic() < deadline:
            if all(self.board.get(name).phase != "starting" for name in self.servers):
                return
            time.sleep(0.02)

    def server_tools(self, name: str) -> list[mcp_types.Tool]:
        """The last tool list ``name`` reported (kept across restarts); empty if it never started."""
        return list(self.board.get(name).tools or [])

    def tools(self) -> dict[str, Any]:
        """Every known tool as ``{"mcp__<server>__<tool>": McpTool}``: the last list each server
        reported, so a server being restarted keeps its tools. A server that never started has
        none. Call ``wait_settled()`` first at start-up.

        Trust applies here: a tool whose definition is not in the trust store with its current
        hash (a project server not yet trusted, or a changed definition) is built untrusted: the
        model sees only the pending sentence, it is a Write, and a call never reaches the server.
        The store is re-read when ``cox mcp trust`` changed it, so a session picks that up."""
        from .tool import McpTool, tool_name

        out: dict[str, Any] = {}
        for server, spec in self.servers.items():
            tools = self.server_tools(server)
            if not tools:
                continue
            trusted = self.trust.trusted(spec, tools)
            for tool in tools:
                out[tool_name(server, tool.name)] = McpTool(self, server, tool, trusted=trusted[tool.name])
        return out

    def pending(self) -> dict[str, dict[str, TrustState]]:
        """``{server: {tool: pending | changed}}`` of the tools the model cannot use yet."""
        out: dict[str, dict[str, TrustState]] = {}
        for server, spec in self.servers.items():
            states = self.trust.states(spec, self.server_tools(server))
            waiting: dict[str, TrustState] = {
                t: s for t, s in states.items() if s in (TrustState.PENDING, TrustState.CHANGED)}
            if waiting:
                out[server] = waiting
        return out

    def connection(self, name: str, timeout: float | None = None,
                   cancel: CancelToken | None = None) -> Connection:
        """The live, started connection of server ``name``, following restarts, within ``timeout``
        (default ``startup_timeout_s``). Raises :class:`McpServerCrashed` when none came in time."""
        if name not in self.servers:
            raise KeyError(f"no mcp server named {name!r}")
        budget = self.settings.startup_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + budget
        last: BaseException | None = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (cancel is not None and cancel.cancelled):
                break
            ref = self.handle.whereis(name, timeout=min(remaining, 0.1))
            if ref is None:
                continue
            try:
                conn = ref.ask(_get_connection(), timeout=min(remaining, 5.0))
            except (pykka.ActorDeadError, pykka.Timeout) as err:
                last = err
                time.sleep(0.01)
                continue
            assert isinstance(conn, Connection)
            try:
                conn.ready.result(timeout=min(max(deadline - time.monotonic(), 0.0), 0.25))
            except TimeoutError:
                continue
            except Exception as err:  # noqa: BLE001 - this life failed to start; wait for the next
                last = err
                time.sleep(0.02)
                continue
            if conn.dead:
                time.sleep(0.01)
                continue
            return conn
        status = self.board.get(name)
        why = f"failed: {status.error}" if status.phase == "failed" else f"{last or 'not available'}"
        raise McpServerCrashed(f"mcp server '{name}' is not available ({why}); it is being restarted")

    def reconnect(self, name: str, timeout: float = 5.0) -> None:
        """Start server ``name`` again now (one that was skipped for want of a login, after it)."""
        conn = self.handle.ask(name, _get_connection(), timeout=timeout)
        conn.broken(McpServerCrashed(f"mcp server '{name}' reconnects"))

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the ``mcp`` supervisor and every server (their processes are killed)."""
        if self.handle.is_alive():
            self.handle.stop(timeout)


def _get_connection() -> Any:
    from .server import GetConnection

    return GetConnection()


def start_mcp(parent: SupervisorHandle, servers: Mapping[str, McpServerSpec], *,
              timeout_s: float = 60.0, startup_timeout_s: float = 30.0, cwd: Path | None = None,
              sandbox: Any = None, log_dir: Path | None = None, backoff: Backoff = DEFAULT_BACKOFF,
              trust: TrustStore | None = None, auth: Any = None, elicitation: bool = False) -> McpManager:
    """Start the ``mcp`` supervisor under ``parent`` (the app's root) with one permanent child per
    server, and return the manager. Returns at once: servers connect in their own threads (use
    ``wait_settled``); a server that fails to start is a warning and an absence, never an
    exception here. ``sandbox`` is the session's ``SandboxPolicy`` (``None``: unwrapped).
    ``trust`` is the trust store (default ``$COX_HOME/mcp-trust.json``); a user-configured
    server's tools are recorded in it when the server first connects. ``auth`` is how HTTP servers
    authenticate (``ServerSettings.auth``; default: stored OAuth tokens, never a browser).
    ``elicitation``: declare it, because a person can answer (the TUI and --plain); otherwise a
    server that elicits anyway gets decline (``elicit.py``)."""
    settings = ServerSettings(timeout_s=timeout_s, startup_timeout_s=startup_timeout_s, cwd=cwd,
                              sandbox=sandbox, log_dir=log_dir, auth=auth, elicitation=elicitation)
    board = StatusBoard()
    store = TrustStore.default() if trust is None else trust
    children = [
        ChildSpec(name, _starter(spec, settings, board, store), restart=Restart.PERMANENT,
                  shutdown_timeout=10.0, backoff=backoff)
        for name, spec in servers.items()
    ]
    handle = start_supervisor("mcp", strategy="one_for_one", max_restarts=10, period_s=10.0,
                              children=children, parent=parent)
    return McpManager(handle, servers, settings, board, store)


def _starter(spec: McpServerSpec, settings: ServerSettings, board: StatusBoard, trust: TrustStore) -> Any:
    def on_ready(tools: list[mcp_types.Tool]) -> None:
        trust.observe(spec, tools)

    def start() -> pykka.ActorRef[Any]:
        ref: pykka.ActorRef[Any] = McpServerActor.start(spec, settings, board, on_ready)
        return ref

    return start


def fetch_tools(spec: McpServerSpec, *, startup_timeout_s: float = 30.0, cwd: Path | None = None,
                sandbox: Any = None) -> list[mcp_types.Tool]:
    """Start ``spec`` once, outside any supervisor, and return its tool list (what
    ``cox mcp trust`` hashes). Bounded by ``startup_timeout_s``; the process is killed before
    this returns. Raises :class:`McpServerCrashed` (or the start error) when it cannot be reached."""
    settings = ServerSettings(startup_timeout_s=startup_timeout_s, cwd=cwd, sandbox=sandbox)
    conn = Connection(spec, settings, lambda _error: None)
    conn.start()
    try:
        return conn.ready.result(timeout=startup_timeout_s + 2.0)
    except TimeoutError:
        raise McpServerCrashed(f"mcp server '{spec.name}' did not start within {startup_timeout_s:g}s") from None
    finally:
        conn.close()
