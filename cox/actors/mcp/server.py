"""``McpServerActor``: one MCP server, as one supervised actor.

Why it is shaped like this (RUNTIME.md, "MCP SDK"):

- The SDK is asyncio; pykka actors are threads. Each actor owns an asyncio loop on a thread of
  its own and the whole client session (transport, ``ClientSession``) lives in one task on that
  loop, so entering and leaving the SDK's context managers happens in one task, as anyio wants.
- A tool call can take minutes. It must not block the actor's inbox (a stop, or another call,
  would wait behind it), so the actor only hands out a :class:`Connection`; the *calling* thread
  submits the coroutine to the loop (``run_coroutine_threadsafe``) and waits on the concurrent
  future itself, always with a timeout. Cancelling the future cancels the task, and the SDK sends
  ``notifications/cancelled``.
- When a stdio server dies, SDK calls fail with "Connection closed" while the session object
  stays open. A connection that closes, a call that fails that way, or a call that times out
  (a hung server) therefore makes the actor fail itself (``_cox_fail``) after the caller got its
  error, so the supervisor restarts it with backoff. A hung server's process group is killed.
- Stdio servers are spawned by cox's own small transport instead of the SDK's ``stdio_client``:
  it lets cox pass an exact environment (an allowlist, not the SDK's inherited set), start the
  server in a new session (so ``killpg`` ends it and its children) and know its pid.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import anyio
import mcp_types
from mcp import ClientSession, MCPError
from mcp.shared.message import SessionMessage

from cox.atomic import open_append
from cox.policy.sandbox import SandboxPolicy
from cox.protocol.interfaces import CancelToken
from cox.supervisors import CoxActor

from .config import McpServerSpec, Origin
from .elicit import Ask, CoxClientSession, Elicitor
from .launch import sandbox_for
from .spawn import NoSandbox, child_env, sandbox_argv

# The errors, the settings and the status board live in ``state.py`` (no SDK import there), so the
# manager and the tools built from a cached listing do not import the SDK; re-exported here.
from .state import (
    McpCallCancelled,
    McpCallError,
    McpNotTrusted,
    McpServerCrashed,
    ServerSettings,
    StatusBoard,
    not_trusted_sentence,
)
from .trust import TRUSTED_ON_FIRST_CONNECT, TrustStore

__all__ = [
    "Connection",
    "McpCallCancelled",
    "McpCallError",
    "McpServerActor",
    "McpServerCrashed",
    "ServerSettings",
    "StatusBoard",
    "child_env",
]

log = logging.getLogger(__name__)

_KILL_GRACE_S = 0.3
T = TypeVar("T")


# -- stdio transport --------------------------------------------------------------------------------


def _parse_line(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def _killpg(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@asynccontextmanager
async def _stdio_transport(argv: list[str], env: dict[str, str], cwd: str | None, stderr: IO[bytes] | int,
                           on_spawn: Callable[[int], None], closed: asyncio.Event) -> AsyncIterator[Any]:
    """Spawn ``argv`` in a new session and bridge its pipes to the SDK's in-memory streams.

    ``closed`` is set when the server's stdout ends (it exited or was killed), which is how the
    actor notices a server that died while idle. Leaving the context kills the process group.
    """
    process = await anyio.open_process(argv, env=env, cwd=cwd, stderr=stderr, start_new_session=True)
    on_spawn(process.pid)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    assert process.stdout is not None and process.stdin is not None
    stdout, stdin = process.stdout, process.stdin

    async def reader() -> None:
        buffer = b""
        try:
            async with read_writer:
                async for chunk in stdout:
                    *lines, buffer = (buffer + chunk).split(b"\n")
                    for line in lines:
                        if line.strip():
                            await read_writer.send(_parse_line(line))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            closed.set()

    async def writer() -> None:
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(Exception):
                    await stdin.aclose()
                _killpg(process.pid, signal.SIGTERM)
                deadline = time.monotonic() + _KILL_GRACE_S
                while process.returncode is None and time.monotonic() < deadline:
                    await anyio.sleep(0.01)
                if process.returncode is None:
                    _killpg(process.pid, signal.SIGKILL)
                    with anyio.move_on_after(2.0):
                        await process.wait()
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()
                with contextlib.suppress(Exception):
                    await process.aclose()
            tg.cancel_scope.cancel()


# -- the connection ---------------------------------------------------------------------------------


class SandboxUnavailable(McpServerCrashed):
    """No working sandbox for a stdio server that should have one: it is not started (and not
    restarted) unless sandbox.mode is danger-full-access."""

    cox_no_restart = True


def sandboxed(policy: SandboxPolicy, argv: list[str], *, cwd: Path) -> list[str]:
    """A stdio server's argv inside the sandbox (``spawn.sandbox_argv``); raises
    ``SandboxUnavailable`` when there is none here."""
    try:
        return sandbox_argv(policy, argv, cwd=cwd)
    except NoSandbox as exc:
        raise SandboxUnavailable(str(exc)) from None


class Connection:
    """One incarnation's live session, usable from any thread.

    The actor creates it in ``on_start`` and hands it out; callers wait on ``ready`` and on their
    own calls' futures, so nothing blocks the actor's inbox. ``dead`` turns true once, when the
    connection is found broken (the actor is then failing itself and a new one will come).
    """

    def __init__(self, spec: McpServerSpec, settings: ServerSettings, on_broken: Callable[[BaseException], None]):
        # Which sandbox this server gets is decided here, for every creator of a connection: a
        # repository's server always runs inside one (``launch.sandbox_for``).
        self.workspace = Path(settings.cwd) if settings.cwd is not None else Path.cwd()
        if spec.origin is Origin.PROJECT and not spec.sandbox:
            spec = dataclasses.replace(spec, sandbox=True)
        self.spec = spec
        self.settings = dataclasses.replace(settings, sandbox=sandbox_for(spec, settings.sandbox, self.workspace))
        self.ready: concurrent.futures.Future[list[mcp_types.Tool]] = concurrent.futures.Future()
        self.pid: int | None = None
        self._on_broken = on_broken
        self._broken = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{spec.name}", daemon=True)
        self._session: ClientSession | None = None
        self._stop = asyncio.Event()  # binds to the loop on first use (3.10+)
        self._serving: concurrent.futures.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._done = threading.Event()
        self._stderr: IO[bytes] | None = None
        self.elicitor = Elicitor(spec.name)
        self.login_lost: str | None = None
        """Set when an HTTP server refused the login for good mid-session (``auth.py``: the
        token was refused and so was its refresh): calls fail with this sentence and the server
        is skipped, not restarted, until ``reconnect`` after ``cox mcp login``. Not ``dead``: no
        new connection is coming, and a caller that gets this one hears the sentence at once."""

    @property
    def dead(self) -> bool:
        return self._broken.is_set()

    def _on_login_lost(self, sentence: str) -> None:
        if self.login_lost is None:  # on the loop thread, before the transport breaks
            from .auth import LoginRequired

            self.login_lost = sentence
            self._on_broken(LoginRequired(sentence))  # the actor marks it failed, no restart

    def start(self) -> None:
        self._thread.start()
        self._serving = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)

    def broken(self, error: BaseException) -> None:
        """Mark the connection broken and tell the actor, once."""
        if self._broken.is_set():
            return
        self._broken.set()
        self._on_broken(error)

    # -- runs on the loop thread --

    def _not_trusted(self) -> McpNotTrusted | None:
        """The refusal when this is a project server whose exact launch the person has not
        trusted: then nothing is spawned and no request is sent, whoever asked for the start."""
        spec = self.spec
        if spec.origin in TRUSTED_ON_FIRST_CONNECT:
            return None
        store = self.settings.trust if self.settings.trust is not None else TrustStore.default()
        if store.launch_trusted(spec, self.workspace):
            return None
        return McpNotTrusted(f"mcp server '{spec.name}' is {not_trusted_sentence(spec.name)}")

    async def _serve(self) -> None:
        self._task = asyncio.current_task()
        closed = asyncio.Event()
        try:
            refusal = self._not_trusted()
            if refusal is not None:
                raise refusal
            async with AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport(closed))
                session = await stack.enter_async_context(CoxClientSession(
                    *streams, elicitor=self.elicitor if self.settings.elicitation else None))
                with anyio.fail_after(self.settings.startup_timeout_s):
                    await session.initialize()
                    tools = await self._list_tools(session)
                self._session = session
                self.ready.set_result(tools)
                waiters = [asyncio.ensure_future(self._stop.wait()), asyncio.ensure_future(closed.wait())]
                try:
                    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for waiter in waiters:
                        waiter.cancel()
                if closed.is_set() and not self._stop.is_set():
                    raise McpServerCrashed(f"mcp server '{self.spec.name}' closed its connection")
        except BaseException as exc:  # noqa: BLE001 - a start failure or a crash, reported once
            while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                exc = exc.exceptions[0]
            error = exc if isinstance(exc, Exception) else McpServerCrashed(repr(exc))
            if isinstance(exc, TimeoutError) and not self.ready.done():
                error = McpServerCrashed(f"did not start within {self.settings.startup_timeout_s:g}s")
            if not self.ready.done():
                self.ready.set_exception(error)
            if not self._stop.is_set() and not getattr(error, "cox_no_restart", False):
                self.broken(error)  # (a server that needs a login is skipped, not restarted)
        finally:
            self._session = None
            if self._stderr is not None:
                self._stderr.close()
            self._done.set()

    def _transport(self, closed: asyncio.Event) -> contextlib.AbstractAsyncContextManager[Any]:
        spec = self.spec
        if spec.relay is not None:
            return spec.relay.transport(closed)  # type: ignore[no-any-return]
        if spec.url:
            from .auth import http_transport

            return http_transport(spec, self.settings.auth, on_login_lost=self._on_login_lost)
        assert spec.command is not None
        cwd = spec.cwd or (str(self.settings.cwd) if self.settings.cwd else None)
        argv = [spec.command, *spec.args]
        if spec.sandbox and self.settings.sandbox is not None:
            argv = sandboxed(self.settings.sandbox, argv, cwd=Path(cwd or os.getcwd()))
        stderr: IO[bytes] | int = -3  # subprocess.DEVNULL
        if self.settings.log_dir is not None:
            with contextlib.suppress(OSError):
                self.settings.log_dir.mkdir(parents=True, exist_ok=True)
                self._stderr = open_append(self.settings.log_dir / f"mcp-{spec.name}.log")  # O_NOFOLLOW
                stderr = self._stderr
        return _stdio_transport(argv, child_env(spec.env), cwd, stderr, self._spawned, closed)

    def _cancel_task(self) -> None:
        if self._task is not None:
            self._task.cancel()
        elif self._serving is not None:
            self._serving.cancel()  # not running yet: it never will
            self._done.set()

    def _spawned(self, pid: int) -> None:
        self.pid = pid

    @staticmethod
    async def _list_tools(session: ClientSession) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a server that pages forever is not our problem to follow
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    # -- called from any thread --

    def call_tool(self, tool: str, arguments: dict[str, Any], *, timeout: float | None = None,
                  cancel: CancelToken | None = None,
                  progress: Callable[[float, float | None, str | None], None] | None = None,
                  ask: Ask | None = None) -> mcp_types.CallToolResult:
        """Call ``tool`` and wait (in the calling thread) for its result. ``ask`` is the calling
        session's way to put a server's elicitation to the person (``elicit.py``); the call's
        ``timeout`` stands still while such a question is open.

        Raises :class:`McpServerCrashed` (the connection broke or the call timed out: the actor
        is failing itself), :class:`McpCallCancelled`, or :class:`McpCallError` (the server
        answered with a protocol error; the connection is fine).
        """
        name = self.spec.name
        session = self._live()
        report = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if report is not None:
                try:
                    report(progress, total, message)
                except Exception:
                    log.exception("progress callback of mcp server %s failed", name)

        # The asker is registered before the call is sent: a server may elicit at once, and its
        # request reaches the loop thread before this thread runs again (then it found nobody
        # to ask and got "decline").
        token = self.elicitor.enter(ask)
        try:
            future = asyncio.run_coroutine_threadsafe(
                session.call_tool(tool, arguments, progress_callback=on_progress), self._loop)
            return self._await(future, tool, timeout, cancel)
        finally:
            self.elicitor.leave(token)

    def list_resources(self, *, timeout: float | None = None, cancel: CancelToken | None = None,
                       ) -> tuple[list[mcp_types.Resource], list[mcp_types.ResourceTemplate]]:
        """The server's resources and resource templates (every page, at most 100 each); empty
        lists when the server has no resources capability."""
        session = self._live()
        caps = session.server_capabilities
        if caps is not None and caps.resources is None:
            return [], []

        async def both() -> tuple[list[mcp_types.Resource], list[mcp_types.ResourceTemplate]]:
            resources: list[mcp_types.Resource] = []
            templates: list[mcp_types.ResourceTemplate] = []
            cursor: str | None = None
            for _ in range(100):
                page = await session.list_resources(
                    params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                resources.extend(page.resources)
                cursor = page.next_cursor
                if not cursor:
                    break
            cursor = None
            try:
                for _ in range(100):
                    tpage = await session.list_resource_templates(
                        params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                    templates.extend(tpage.resource_templates)
                    cursor = tpage.next_cursor
                    if not cursor:
                        break
            except MCPError as err:  # templates are optional for a server
                if err.code != mcp_types.METHOD_NOT_FOUND:
                    raise
            return resources, templates

        return self._await(asyncio.run_coroutine_threadsafe(both(), self._loop), "resources/list", timeout, cancel)

    def read_resource(self, uri: str, *, timeout: float | None = None, cancel: CancelToken | None = None,
                      ) -> mcp_types.ReadResourceResult:
        session = self._live()
        future = asyncio.run_coroutine_threadsafe(session.read_resource(uri), self._loop)
        return self._await(future, "resources/read", timeout, cancel)

    def list_prompts(self, *, timeout: float | None = None, cancel: CancelToken | None = None,
                     ) -> list[mcp_types.Prompt]:
        """The server's prompts (every page, at most 100); empty without the prompts capability."""
        session = self._live()
        caps = session.server_capabilities
        if caps is not None and caps.prompts is None:
            return []

        async def pages() -> list[mcp_types.Prompt]:
            prompts: list[mcp_types.Prompt] = []
            cursor: str | None = None
            for _ in range(100):
                page = await session.list_prompts(params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                prompts.extend(page.prompts)
                cursor = page.next_cursor
                if not cursor:
                    break
            return prompts

        return self._await(asyncio.run_coroutine_threadsafe(pages(), self._loop), "prompts/list", timeout, cancel)

    def get_prompt(self, name: str, arguments: dict[str, str], *, timeout: float | None = None,
                   cancel: CancelToken | None = None) -> Any:
        session = self._live()
        future = asyncio.run_coroutine_threadsafe(session.get_prompt(name, arguments or None), self._loop)
        return self._await(future, "prompts/get", timeout, cancel)

    def _live(self) -> ClientSession:
        session = self._session
        if self.login_lost is not None:
            raise McpCallError(f"mcp server '{self.spec.name}': {self.login_lost}")
        if session is None or self.dead:
            raise McpServerCrashed(f"mcp server '{self.spec.name}' is not connected; it is being restarted")
        return session

    def _await(self, future: concurrent.futures.Future[T], what: str, timeout: float | None,
               cancel: CancelToken | None) -> T:
        """Wait for one request's future in the calling thread, mapping what can go wrong."""
        name = self.spec.name
        timeout = self.settings.timeout_s if timeout is None else timeout

        def cancel_call() -> None:
            future.cancel()  # cancels the task; the SDK sends notifications/cancelled

        unregister = cancel.on_cancel(cancel_call) if cancel is not None else (lambda: None)
        try:
            return self.elicitor.wait(future, timeout)
        except concurrent.futures.CancelledError:
            raise McpCallCancelled(f"mcp call {name}/{what} was cancelled") from None
        except TimeoutError:
            future.cancel()
            error = McpServerCrashed(
                f"mcp server '{name}' did not answer {what} within {timeout:g}s; it was killed and is being restarted")
            self.broken(error)
            raise error from None
        except MCPError as err:
            if self.login_lost is not None:
                raise McpCallError(f"mcp server '{name}': {self.login_lost}") from None
            if err.code == mcp_types.CONNECTION_CLOSED or self.dead:
                error = McpServerCrashed(f"mcp server '{name}' crashed during the call; it is being restarted")
                self.broken(error)
                raise error from None
            raise McpCallError(f"mcp server '{name}' refused {what}: {err.message}") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as err:
            if self.login_lost is not None:
                raise McpCallError(f"mcp server '{name}': {self.login_lost}") from None
            error = McpServerCrashed(f"mcp server '{name}' crashed during the call; it is being restarted")
            self.broken(error)
            raise error from err
        finally:
            unregister()

    def close(self, timeout: float = 5.0) -> None:
        """End the session, kill the server, stop the loop thread; every wait bounded."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._stop.set)
            if not self.ready.done():  # still starting: nothing to end gracefully
                self._loop.call_soon_threadsafe(self._cancel_task)
        if self._serving is not None and not self._done.wait(timeout):
            log.warning("mcp server %s did not shut down within %gs", self.spec.name, timeout)
        if self.pid is not None:  # a backstop: whatever is left of the group dies now
            _killpg(self.pid, signal.SIGKILL)
        if not self.ready.done():
            self.ready.set_exception(McpServerCrashed(f"mcp server '{self.spec.name}' was stopped"))
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()


# -- the actor ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GetConnection:
    """Ask: the current :class:`Connection` (the caller waits on its ``ready`` itself)."""


@dataclass(frozen=True)
class _Broken:
    error: BaseException


class McpServerActor(CoxActor):
    """One MCP server under the ``mcp`` supervisor. Its inbox only ever holds short messages."""

    def __init__(self, spec: McpServerSpec, settings: ServerSettings, board: StatusBoard,
                 on_ready: Callable[[list[mcp_types.Tool]], None] | None = None) -> None:
        super().__init__()
        self._mcp_spec = spec
        self._mcp_board = board
        self._mcp_on_ready = on_ready
        self._mcp_conn = Connection(spec, settings, self._mcp_on_broken)

    def _mcp_on_broken(self, error: BaseException) -> None:
        # From the loop thread or a caller's thread: hand it to the actor's own thread.
        with contextlib.suppress(Exception):
            self.actor_ref.tell(_Broken(error))

    def on_start(self) -> None:
        name = self._mcp_spec.name
        self._mcp_board.starting(name)
        conn = self._mcp_conn

        def settled(future: concurrent.futures.Future[list[mcp_types.Tool]]) -> None:
            if future.cancelled():
                return
            error = future.exception()
            if error is None:
                tools = future.result()
                if self._mcp_on_ready is not None:
                    try:  # first connect of a user-configured server: record its tools (trust)
                        self._mcp_on_ready(tools)
                    except Exception:
                        log.exception("mcp server %s: recording its tools failed", name)
                self._mcp_board.update(name, phase="ready", error=None, tools=tools)
            else:
                self._mcp_board.update(name, phase="failed", error=str(error) or type(error).__name__)

        conn.ready.add_done_callback(settled)
        conn.start()

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, GetConnection):
            return self._mcp_conn
        if isinstance(message, _Broken) and getattr(message.error, "cox_no_restart", False):
            # A login lost mid-session: skipped until `cox mcp login`, not restarted.
            self._mcp_board.update(self._mcp_spec.name, phase="failed", error=str(message.error))
            return None
        if isinstance(message, _Broken):
            log.warning("mcp server %s failed: %s", self._mcp_spec.name, message.error)
            self._cox_fail(message.error)
            return None
        raise TypeError(f"McpServerActor got an unknown message {message!r}")

    def on_stop(self) -> None:
        self._mcp_conn.close()

    def on_failure(self, *_exc: Any) -> None:
        self._mcp_conn.close()
