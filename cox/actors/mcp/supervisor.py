"""The ``mcp`` supervisor and ``McpManager``, the one object the rest of cox holds.

The manager never keeps an actor ref: every call resolves the server by its stable name under the
``mcp`` supervisor, so a server restarted after a crash is reached without anybody noticing.
A server that fails at start is logged as a warning and shows as ``failed: why`` in ``state()``;
the supervisor keeps retrying it with exponential backoff, and nobody gets an exception.

A project server whose launch the person has not trusted (``launch.py``) gets no child at all: it
is not started, no request reaches it, it has no tools (not even cached ones), a call naming it
is refused at once, and it shows as ``failed: not trusted; run: cox mcp trust <name>``. (Each
connection checks the launch again before it spawns anything, ``server.py``.)

Start-up off the critical path (PEERS.md row 9): ``start_mcp(..., background=True)`` returns at
once, before the mcp SDK is imported; a thread of its own imports it and starts the supervisor.
Each server's last listing comes from the cache (``cache.py``), so ``tools()`` can build the tools
of a server that is still starting; ``wait_settled(cached_ok=True)`` waits only for the servers
never listed before. This module imports neither the SDK nor ``server.py`` until a server starts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pykka

from cox.protocol.interfaces import CancelToken
from cox.supervisors import Backoff, ChildSpec, Restart, SupervisorHandle, start_supervisor

from .cache import ToolCache, ToolDef
from .config import McpServerSpec
from .state import McpNotTrusted, McpServerCrashed, ServerSettings, StatusBoard, not_trusted_sentence
from .trust import TrustState, TrustStore

if TYPE_CHECKING:
    import mcp_types

    from .server import Connection
    from .tool import McpTool

__all__ = ["DEFAULT_BACKOFF", "McpManager", "fetch_tools", "start_mcp"]

log = logging.getLogger(__name__)

DEFAULT_BACKOFF = Backoff(initial_s=0.1, max_s=5.0, reset_after_s=0.5)
"""A server that lived half a second (it got through its start-up) counts as healthy again, so a
server killed from outside comes back at once; one that dies while starting backs off, up to 5 s."""
LAUNCH_AFTER_REQUEST_S = 0.5  # the most a background start waits for the first model request to leave


class McpManager:
    """The MCP servers of one process: their state, their tools, and a way to reach each."""

    def __init__(self, handle: SupervisorHandle | None, servers: Mapping[str, McpServerSpec],
                 settings: ServerSettings, board: StatusBoard, trust: TrustStore | None = None,
                 cache: ToolCache | None = None, cached: Mapping[str, list[ToolDef]] | None = None,
                 untrusted: frozenset[str] = frozenset()) -> None:
        self.handle = handle
        """The ``mcp`` supervisor; ``None`` while it is being started in the background."""
        self.servers = dict(servers)
        self.settings = settings
        self.board = board
        self.trust = TrustStore.default() if trust is None else trust
        self.cache = ToolCache.default() if cache is None else cache
        self.untrusted = frozenset(untrusted)
        """Project servers whose launch is not trusted: never started in this manager."""
        for name in self.untrusted:
            board.update(name, phase="failed", error=not_trusted_sentence(name))
        self.cached: dict[str, list[ToolDef]] = {k: list(v) for k, v in (cached or {}).items()
                                                 if k not in self.untrusted}
        """Each server's listing as the cache had it when the servers were started."""
        self.launched = threading.Event()
        self.launch_error: BaseException | None = None
        self._launcher: threading.Thread | None = None
        self._launch_lock = threading.Lock()
        self._closing = False
        self._backoff = DEFAULT_BACKOFF
        self.disabled: set[str] = set()
        """Servers switched off for this session (Claude Code's ``mcp_toggle``): stopped, no
        tools, ``disabled`` in ``state()``, a call refused, until switched on again."""
        self._live: dict[str, tuple[object, dict[str, ToolDef]]] = {}
        self._noticed: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        if handle is not None:
            self.launched.set()

    def state(self) -> list[dict[str, str]]:
        """One row per server: ``{"name", "status"}`` with status ``starting``, ``ready``,
        ``restarting N`` or ``failed: why`` (what ``cox doctor`` and the TUI show)."""
        handle = self.handle
        children = {c["name"]: c for c in handle.which_children()} if handle is not None and handle.is_alive() else {}
        rows = []
        for name in self.servers:
            if name in self.disabled:
                rows.append({"name": name, "status": "disabled"})
                continue
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

    def wait_settled(self, timeout: float | None = None, *, cached_ok: bool = False) -> None:
        """Wait until no server is still in its first start (each is ready or failed), at most
        ``timeout`` (default ``startup_timeout_s``). Surfaces call it once before the first turn
        with ``cached_ok=True``: then a server whose listing is cached is not waited for (its
        tools come from the cache and it goes on starting in the background)."""
        names = [n for n in self.servers if not (cached_ok and n in self.cached)]
        deadline = time.monotonic() + (self.settings.startup_timeout_s if timeout is None else timeout)
        while time.monotonic() < deadline:
            if all(self.board.get(name).phase != "starting" for name in names):
                return
            time.sleep(0.02)

    def server_tools(self, name: str) -> list[mcp_types.Tool]:
        """The last tool list ``name`` reported (kept across restarts); empty if it never started."""
        return list(self.board.get(name).tools or [])

    def listing(self, name: str) -> list[ToolDef]:
        """What ``tools()`` builds ``name``'s tools from: the list it reported, or, while it has
        not reported one yet, its cached listing (empty without either)."""
        if name in self.untrusted or name in self.disabled:
            return []
        live = self.board.get(name).tools
        if live is not None:
            return [ToolDef.of(t) for t in live]
        return list(self.cached.get(name, []))

    def live_definitions(self, name: str, conn: Connection) -> dict[str, ToolDef]:
        """``{tool: ToolDef}`` as the started connection ``conn`` of ``name`` listed them (made
        once per connection: a call pays a dict lookup)."""
        tools = conn.ready.result(timeout=0)
        memo = self._live.get(name)
        if memo is None or memo[0] is not tools:
            memo = (tools, {t.name: ToolDef.of(t) for t in tools})
            self._live[name] = memo
        return memo[1]

    def notice_once(self, server: str, tool: str, text: str) -> dict[str, str]:
        """``{"notice": text}`` the first time for this tool (the session shows it as a warning),
        then ``{}``: a refused tool tells the person once, not at every call."""
        with self._lock:
            if (server, tool) in self._noticed:
                return {}
            self._noticed.add((server, tool))
        log.warning("%s", text)
        return {"notice": text}

    def tools(self) -> dict[str, McpTool]:
        """Every known tool as ``{"mcp__<server>__<tool>": McpTool}``: the last list each server
        reported, so a server being restarted keeps its tools, or its cached listing while it has
        not reported one yet. A server with neither has none. Call ``wait_settled()`` first at
        start-up.

        Trust applies here: a tool whose definition is not in the trust store with its current
        hash (a project server not yet trusted, or a changed definition) is built untrusted: the
        model sees only the pending sentence, it is a Write, and a call never reaches the server.
        The store is re-read when ``cox mcp trust`` changed it, so a session picks that up."""
        from .tool import McpTool, tool_name

        out: dict[str, McpTool] = {}
        for server, spec in self.servers.items():
            tools = self.listing(server)
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
            states = self.trust.states(spec, self.listing(server))
            waiting: dict[str, TrustState] = {
                t: s for t, s in states.items() if s in (TrustState.PENDING, TrustState.CHANGED)}
            if waiting:
                out[server] = waiting
        return out

    def notices(self) -> list[str]:
        """What a session tells the person at its start, one sentence each (the surface prints
        them as warnings): fields of a project's entry that were ignored, servers that were not
        started because their launch is not trusted, servers that failed, tools pending trust.
        Sanitised for a terminal: names and paths come from the repository."""
        from cox.policy.sanitize import sanitize

        out: list[str] = []
        for spec in self.servers.values():
            out.extend(spec.warnings)
        for row in self.state():
            name = row["name"]
            if name in self.untrusted:
                out.append(f"mcp server '{name}' (from {self.servers[name].source}) was not started: it is "
                           f"{not_trusted_sentence(name)}, then start a new session")
            elif row["status"].startswith("failed"):
                out.append(f"mcp server {name} {row['status']}")
        for server, waiting in self.pending().items():
            out.append(f"{len(waiting)} tool(s) of mcp server '{server}' are pending trust; run: "
                       f"cox mcp trust {server}")
        return [sanitize(line).replace("\n", " ") for line in out]

    def connection(self, name: str, timeout: float | None = None, cancel: CancelToken | None = None,
                   failed_grace: float | None = None) -> Connection:
        """The live, started connection of server ``name``, following restarts, within ``timeout``
        (default ``startup_timeout_s``). Raises :class:`McpServerCrashed` when none came in time.
        ``failed_grace``: once the server is seen failed (its start failed; it is being restarted
        with backoff), wait at most this much longer, so a call answers with the reason soon."""
        if name not in self.servers:
            raise KeyError(f"no mcp server named {name!r}")
        if name in self.untrusted:
            raise McpNotTrusted(f"mcp server '{name}' is {not_trusted_sentence(name)}")
        if name in self.disabled:
            raise McpServerCrashed(f"mcp server '{name}' is disabled in this session")
        budget = self.settings.startup_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + budget
        last: BaseException | None = None
        failed_at: float | None = None
        while True:
            now = time.monotonic()
            if failed_grace is not None and self.board.get(name).phase == "failed":
                failed_at = now if failed_at is None else failed_at
                deadline = min(deadline, failed_at + failed_grace)
            remaining = deadline - now
            if remaining <= 0 or (cancel is not None and cancel.cancelled):
                break
            handle = self.handle
            if handle is None:  # still being started in the background
                if self.launch_error is not None:
                    last = self.launch_error
                    break
                self.launched.wait(min(remaining, 0.1))
                continue
            ref = handle.whereis(name, timeout=min(remaining, 0.1))
            if ref is None:
                continue
            try:
                conn = ref.ask(_get_connection(), timeout=min(remaining, 5.0))
            except (pykka.ActorDeadError, pykka.Timeout) as err:
                last = err
                time.sleep(0.01)
                continue
            from .server import Connection  # imported by now: the supervisor is running

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
        if "cox mcp login" in why:  # waiting for a login: it is not restarted, the sentence says what to do
            raise McpServerCrashed(f"mcp server '{name}' is not available ({why})")
        raise McpServerCrashed(f"mcp server '{name}' is not available ({why}); it is being restarted")

    def reconnect(self, name: str, timeout: float = 5.0) -> None:
        """Start server ``name`` again now (one that was skipped for want of a login, after it)."""
        if name in self.untrusted:
            raise McpNotTrusted(f"mcp server '{name}' is {not_trusted_sentence(name)}")
        self.launched.wait(timeout)
        if self.handle is None:
            raise McpServerCrashed(f"mcp server '{name}' is not running ({self.launch_error or 'still starting'})")
        conn = self.handle.ask(name, _get_connection(), timeout=timeout)
        conn.broken(McpServerCrashed(f"mcp server '{name}' reconnects"))

    def set_enabled(self, name: str, enabled: bool, timeout: float = 15.0) -> None:
        """Switch server ``name`` off (its process stopped, its tools gone) or on again (started
        anew) for this session. Raises KeyError for an unknown name, McpNotTrusted for a server
        that may not start, McpServerCrashed when the servers could not be started at all."""
        if name not in self.servers:
            raise KeyError(f"no mcp server named {name!r}")
        if name in self.untrusted:
            raise McpNotTrusted(f"mcp server '{name}' is {not_trusted_sentence(name)}")
        if enabled == (name not in self.disabled):
            return
        self.launched.wait(timeout)
        handle = self.handle
        if handle is None:
            raise McpServerCrashed(f"mcp server '{name}' is not running ({self.launch_error or 'still starting'})")
        if not enabled:
            self.disabled.add(name)
            handle.terminate_child(name)
            return
        handle.start_child(self._child(name), timeout)
        self.disabled.discard(name)

    def _child(self, name: str) -> ChildSpec:
        return ChildSpec(name, _starter(self.servers[name], self.settings, self.board, self.trust, self.cache),
                         restart=Restart.PERMANENT, shutdown_timeout=10.0, backoff=self._backoff)

    def cancel_launch(self) -> None:
        """The process is closing: a background start that has not begun starting servers never
        will (one that has is stopped with the app's tree). Returns without waiting for the SDK
        import, so a short ``cox run`` does not pay for it on its way out."""
        with self._launch_lock:
            self._closing = True

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the ``mcp`` supervisor and every server (their processes are killed); a start
        still under way in the background is waited for first (bounded by ``timeout``)."""
        if self._launcher is not None:
            self._launcher.join(timeout)
        if self.handle is not None and self.handle.is_alive():
            self.handle.stop(timeout)

    def _launch(self, parent: SupervisorHandle, backoff: Backoff, *, background: bool) -> None:
        """Start the ``mcp`` supervisor and its servers (this imports the SDK). In the background
        a failure is logged and every server shows as failed; otherwise it is raised."""
        startable = {name: spec for name, spec in self.servers.items() if name not in self.untrusted}
        try:
            if not startable:
                return  # nothing may start: not even the SDK is imported
            if background and set(startable) <= set(self.cached):
                # Nothing waits for these servers (all listings are cached) and the SDK import
                # is ~0.4 s of CPU: let the session's first model request leave first (it does
                # within ~0.15 s of launch), and the servers start while the model thinks.
                # Bounded, so a session that sends nothing yet (a TUI waiting for its first
                # prompt) starts them anyway.
                from cox.actors.provider.transport import REQUEST_SENT

                REQUEST_SENT.wait(LAUNCH_AFTER_REQUEST_S)
            from . import server  # noqa: F401 - the SDK import (~0.4 s), here rather than in a child's start

            self._backoff = backoff
            children = [self._child(name) for name in startable]
            with self._launch_lock:
                if self._closing:
                    raise McpServerCrashed("the session closed before its mcp servers were started")
                self.handle = start_supervisor("mcp", strategy="one_for_one", max_restarts=10, period_s=10.0,
                                               children=children, parent=parent)
        except BaseException as err:
            self.launch_error = err
            for name in startable:
                self.board.update(name, phase="failed", error=f"mcp could not be started: {err}")
            if not background:
                raise
            (log.info if self._closing else log.warning)("mcp servers could not be started: %s", err)
        finally:
            self.launched.set()


def _get_connection() -> Any:
    from .server import GetConnection

    return GetConnection()


def start_mcp(parent: SupervisorHandle, servers: Mapping[str, McpServerSpec], *,
              timeout_s: float = 60.0, startup_timeout_s: float = 30.0, cwd: Path | None = None,
              sandbox: Any = None, log_dir: Path | None = None, backoff: Backoff = DEFAULT_BACKOFF,
              trust: TrustStore | None = None, auth: Any = None, elicitation: bool = False,
              cache: ToolCache | None = None, background: bool = False) -> McpManager:
    """Start the ``mcp`` supervisor under ``parent`` (the app's root) with one permanent child per
    server, and return the manager. Returns at once: servers connect in their own threads (use
    ``wait_settled``); a server that fails to start is a warning and an absence, never an
    exception here. ``background``: do even the SDK import and the supervisor's start on a
    thread of its own (a session's start-up); ``stop()`` waits for it. ``cache`` is the tool
    listing cache (default ``$COX_HOME/mcp-tools.json``): read here, written whenever a server
    lists its tools. ``sandbox`` is the session's ``SandboxPolicy`` (``None``: unwrapped).
    ``trust`` is the trust store (default ``$COX_HOME/mcp-trust.json``); a user-configured
    server's tools are recorded in it when the server first connects. ``auth`` is how HTTP servers
    authenticate (``ServerSettings.auth``; default: stored OAuth tokens, never a browser).
    ``elicitation``: declare it, because a person can answer (the TUI and --plain); otherwise a
    server that elicits anyway gets decline (``elicit.py``)."""
    store = TrustStore.default() if trust is None else trust
    settings = ServerSettings(timeout_s=timeout_s, startup_timeout_s=startup_timeout_s, cwd=cwd,
                              sandbox=sandbox, log_dir=log_dir, auth=auth, elicitation=elicitation, trust=store)
    board = StatusBoard()
    tool_cache = ToolCache.default() if cache is None else cache
    workspace = cwd if cwd is not None else Path.cwd()
    untrusted = frozenset(name for name, spec in servers.items() if not store.launch_trusted(spec, workspace))
    cached = {name: listing for name, spec in servers.items()
              if name not in untrusted and (listing := _cached_listing(tool_cache, spec, cwd)) is not None}
    manager = McpManager(None, servers, settings, board, store, tool_cache, cached, untrusted)
    if background:
        manager._launcher = threading.Thread(target=manager._launch, args=(parent, backoff),
                                             kwargs={"background": True}, name="mcp-launch", daemon=True)
        manager._launcher.start()
    else:
        manager._launch(parent, backoff, background=False)
    return manager


def _cached_listing(cache: ToolCache, spec: McpServerSpec, cwd: Path | None) -> list[ToolDef] | None:
    """``spec``'s cached listing, if a session may start with it. Not for an HTTP server that was
    listed with an OAuth token that is gone now (``cox mcp logout``): it will need a login, and
    a session says so at start (and offers the login, interactively) only for a server it waits
    for."""
    if spec.relay is not None:  # the client's own server: listed afresh each run (it is in-process)
        return None
    try:
        entry = cache.entry(spec, cwd)
        if entry is None:
            return None
        if entry.get("login") and spec.url:
            from .tokens import TokenStore

            if TokenStore().load(spec.name, spec.url) is None:
                return None
        return cache.get(spec, cwd)
    except Exception:  # noqa: BLE001 - a cache that cannot be read is no cache: wait, as on a first run
        log.exception("mcp server %s: reading its cached tool listing failed", spec.name)
        return None


def _starter(spec: McpServerSpec, settings: ServerSettings, board: StatusBoard, trust: TrustStore,
             cache: ToolCache) -> Any:
    def on_ready(tools: list[mcp_types.Tool]) -> None:
        trust.observe(spec, tools)  # first connect of a user-configured server: record its tools
        try:
            login = False
            if spec.url:
                from .tokens import TokenStore

                login = TokenStore().load(spec.name, spec.url) is not None
            if cache.put(spec, tools, settings.cwd, login=login):
                log.info("mcp server %s: tool listing cached (%d tools)", spec.name, len(tools))
        except Exception:
            log.exception("mcp server %s: caching its tool listing failed", spec.name)

    def start() -> pykka.ActorRef[Any]:
        from .server import McpServerActor

        ref: pykka.ActorRef[Any] = McpServerActor.start(spec, settings, board, on_ready)
        return ref

    return start


def fetch_tools(spec: McpServerSpec, *, startup_timeout_s: float = 30.0, cwd: Path | None = None,
                sandbox: Any = None, trust: TrustStore | None = None) -> list[mcp_types.Tool]:
    """Start ``spec`` once, outside any supervisor, and return its tool list (what
    ``cox mcp trust`` hashes). Bounded by ``startup_timeout_s``; the process is killed before
    this returns. Raises :class:`McpServerCrashed` (or the start error) when it cannot be reached,
    :class:`McpNotTrusted` (nothing started) for a project server whose launch ``trust`` (default
    ``$COX_HOME``'s store) does not hold."""
    from .server import Connection

    settings = ServerSettings(startup_timeout_s=startup_timeout_s, cwd=cwd, sandbox=sandbox, trust=trust)
    conn = Connection(spec, settings, lambda _error: None)
    conn.start()
    try:
        return conn.ready.result(timeout=startup_timeout_s + 2.0)
    except TimeoutError:
        raise McpServerCrashed(f"mcp server '{spec.name}' did not start within {startup_timeout_s:g}s") from None
    finally:
        conn.close()
