"""A session's language servers: one per language, started on demand, ended with the session.

The pool is the one place a server is started: under the ``lsp`` supervisor (DESIGN §3; a root
of its own where no application tree runs, as in ``cox mcp serve`` or a test), as child
``<session>:<language>``, with the same sandbox wrap and child environment allowlist as a stdio
MCP server (``cox.actors.mcp.spawn``). Only ``diagnostics`` starts one; the other tools ask
:meth:`LspPool.running`. A server that died is started again at most once per call
(:meth:`LspPool.server` with ``restart``), and :meth:`close` — called when the session stops or
fails — stops every child, so no server outlives its session.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from cox.log import get_logger
from cox.protocol.types import SandboxMode
from cox.slim import dataclass

from .servers import ServerCommand, resolve

__all__ = ["LspPool", "LspSettings", "LspUnavailable"]

log = get_logger("cox.lsp")


class LspUnavailable(RuntimeError):
    """No server for a language can run here; the message is the sentence for the model."""


@dataclass(frozen=True)
class LspSettings:
    """``[lsp]`` of the loaded config (servers from the user's own file only)."""

    servers: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float = 30.0
    quiet_ms: int = 500
    after_edit: bool = False
    after_edit_ms: int = 3000

    @classmethod
    def of(cls, config: Any) -> LspSettings:
        if config is None:
            return cls()
        return cls(dict(config.servers), float(config.timeout_s), int(config.quiet_ms), bool(config.after_edit),
                   int(config.after_edit_ms))


def no_server_sentence(language: str) -> str:
    return (f"no language server for {language} is available (none configured in [lsp.servers] of your "
            f"config, and no default found on PATH); run the project's own checker with bash instead "
            f"(for example a type checker or the compiler)")


class LspPool:
    """The language servers of one session (thread-safe)."""

    def __init__(self, session_id: str, roots: list[Path], settings: LspSettings, *,
                 sandbox_mode: SandboxMode = SandboxMode.WORKSPACE_WRITE, writable_roots: tuple[Path, ...] = (),
                 network: bool = False, log_dir: Path | None = None) -> None:
        self.session_id = session_id
        self.roots = list(roots)
        self.settings = settings
        self.sandbox_mode = sandbox_mode
        self.writable_roots = writable_roots
        self.network = network
        self.log_dir = log_dir
        self._lock = threading.Lock()
        self._starting: dict[str, threading.Lock] = {}
        self._children: set[str] = set()
        self._servers: dict[str, Any] = {}  # language -> the LanguageServer its actor owns
        self._closed = False
        self._handle: Any = None

    @classmethod
    def for_session(cls, s: Any) -> LspPool:
        """The pool of a session with settings ``s`` (``SessionSettings``): starts nothing."""
        from cox.actors.store.layout import cox_home

        log_dir = Path(s.cox_home if s.cox_home is not None else cox_home()) / "logs"
        return cls(s.session_id, list(s.roots), LspSettings.of(s.lsp), sandbox_mode=s.sandbox_mode,
                   writable_roots=tuple(s.writable_roots), network=s.network, log_dir=log_dir)

    # -- asking --

    def running(self, language: str) -> Any:
        """The live server for ``language``, or None (never starts one, never waits: the
        session's thread asks this to rate a diagnostics call)."""
        with self._lock:
            server = self._servers.get(language)
        return server if server is not None and server.alive() else None

    def server(self, language: str, *, start: bool, restart: bool) -> Any:
        """The server for ``language``: the running one; else, with ``start`` (a first call) or
        ``restart`` (this call's one restart of a server that died), a new one; else None."""
        server = self.running(language)
        if server is not None:
            return server
        if not (start or (restart and self._child(language) in self._children)):
            return None
        lock = self._starting.setdefault(language, threading.Lock())
        with lock:
            server = self.running(language)
            if server is not None:
                return server
            return self._start(language)

    def has_started(self, language: str) -> bool:
        """Whether this session started a server for ``language`` (running now or not)."""
        return self._child(language) in self._children

    # -- starting --

    def _child(self, language: str) -> str:
        return f"{self.session_id}:{language}"

    def _supervisor(self) -> Any:
        from cox.supervisors import NameTaken, SupervisorHandle, start_supervisor
        from cox.supervisors.registry import registry

        if self._handle is not None and self._handle.is_alive():
            return self._handle
        root = registry.supervisor("root")
        path = "root/lsp" if root is not None and root.ref.is_alive() else "lsp"
        existing = registry.supervisor(path)
        if existing is None or not existing.ref.is_alive():
            try:
                if path == "root/lsp":
                    start_supervisor("lsp", parent=SupervisorHandle("root"), max_restarts=100, period_s=1.0)
                else:
                    start_supervisor("lsp", max_restarts=100, period_s=1.0)
            except NameTaken:
                pass
            except Exception as exc:
                if registry.supervisor(path) is None:
                    raise LspUnavailable(f"the lsp supervisor could not start: {exc}") from None
        self._handle = SupervisorHandle(path)
        return self._handle

    def _start(self, language: str) -> Any:
        from cox.supervisors import ChildSpec, Restart

        command = resolve(self.settings.servers, language)
        if command is None:
            raise LspUnavailable(no_server_sentence(language))
        with self._lock:
            if self._closed:
                raise LspUnavailable("the session is ending; no language server is started")
        handle = self._supervisor()
        name = self._child(language)
        try:
            handle.terminate_child(name)  # a dead one's entry, if any
        except Exception:
            pass
        from .server import LspServerActor

        wait_s = max(self.settings.timeout_s, 10.0) + 10.0
        ref = handle.start_child(ChildSpec(name, lambda: LspServerActor.start(lambda: self._launch(command)),
                                           restart=Restart.TEMPORARY, shutdown_timeout=5.0), timeout=wait_s)
        server, error = ref.ask("get", timeout=5)
        if server is None:
            self._terminate(name)
            if isinstance(error, LspUnavailable):
                raise error
            raise LspUnavailable(f"the {language} language server did not start: {error}")
        with self._lock:
            self._children.add(name)
            self._servers[language] = server
            closed = self._closed
        if closed:  # the session ended while this one started
            self._terminate(name)
            raise LspUnavailable("the session is ending; no language server is started")
        return server

    def _launch(self, command: ServerCommand) -> Any:
        import shutil

        from cox.actors.mcp.spawn import NoSandbox, child_env, sandbox_argv
        from cox.policy.sandbox import SandboxPolicy

        from .rpc import RpcClosed, RpcTimeout
        from .server import LanguageServer

        root = self.roots[0]
        argv = list(command.argv)
        if shutil.which(argv[0]) is None and not Path(argv[0]).is_file():
            raise LspUnavailable(f"the {command.language} language server {argv[0]!r} is not installed "
                                 f"(not on PATH); run the project's own checker with bash instead")
        policy = SandboxPolicy(self.sandbox_mode, (*self.roots[:1], *self.writable_roots), self.network)
        try:
            argv = sandbox_argv(policy, argv, cwd=root)
        except NoSandbox as exc:
            raise LspUnavailable(f"the {command.language} language server was {exc}") from None
        stderr: Any = -3  # subprocess.DEVNULL
        if self.log_dir is not None:
            try:
                from cox.atomic import open_append

                self.log_dir.mkdir(parents=True, exist_ok=True)
                stderr = open_append(self.log_dir / f"lsp-{command.language}.log")
            except OSError:
                stderr = -3
        try:
            # A server's caches (jedi's, under pylsp) go to the sandbox's private /tmp: the home is
            # read-only in there, and a cache write that fails makes jedi answer nothing at all.
            own = {} if self.sandbox_mode is SandboxMode.DANGER_FULL_ACCESS else {"XDG_CACHE_HOME": "/tmp/.cache"}
            server = LanguageServer(command.language, argv, env=child_env(own), root=root,
                                    quiet_s=self.settings.quiet_ms / 1000)
        except OSError as exc:
            raise LspUnavailable(f"the {command.language} language server could not start: {exc}") from None
        finally:
            if not isinstance(stderr, int):
                stderr.close()  # the child holds its own copy
        try:
            server.initialize(timeout=max(self.settings.timeout_s, 10.0))
        except (RpcClosed, RpcTimeout, Exception) as exc:
            server.close()
            raise LspUnavailable(f"the {command.language} language server ({' '.join(command.argv)}) did not "
                                 f"start: {exc}") from None
        log.info("lsp server started", language=command.language, pid=server.pid)
        return server

    # -- ending --

    def _terminate(self, name: str) -> None:
        handle = self._handle
        if handle is None:
            return
        try:
            handle.terminate_child(name)
        except Exception:
            ref = handle.whereis(name)
            if ref is not None:
                try:
                    server, _ = ref.ask("get", timeout=2)
                    if server is not None:
                        server.close()
                except Exception:
                    log.warning("could not stop a language server", name=name)

    def close(self) -> None:
        """Stop every server this session started. Idempotent; any thread."""
        with self._lock:
            self._closed = True
            names = list(self._children)
            self._children.clear()
            self._servers.clear()
        for name in names:
            self._terminate(name)
