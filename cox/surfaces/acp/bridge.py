"""The client's ``fs/*`` under cox's file tools, when the client offers them.

A client that can write text files (``fs.writeTextFile``) gets every file write of the session:
``write``, ``edit`` and ``apply_patch`` run as they always do — the path confined to the
workspace roots (``policy.paths.confine``), ``.git``/``.cox``/cox's home refused, the engine's
decision and the person's approval first, the file's pre-image checkpointed so ``/rewind``
restores it — and only once that call succeeded is the file's new text sent with
``fs/write_text_file``, so the editor's buffer shows it (and the editor saves it). A call that was
refused, confined away or failed sends nothing: the client never hears of a path outside the
workspace.

A client that can read (``fs.readTextFile``) is asked for the text of a file ``read`` opens — the
editor's buffer, unsaved edits included — only after the read tool itself accepted the path on
disk (confined to the roots, not covered by a Read deny rule, a file, not an image nor binary);
the buffer's text is then numbered as the read tool numbers the disk's (``files.numbered``). When
the client fails the request, the disk's text stands. (A read the session answers ``unchanged
since #ID`` without running the tool is not asked again.)

The tools run on actor threads; the client's requests run on the connection's loop: each bridge
call waits for its answer at most :data:`CLIENT_TIMEOUT_S`, and a cancelled call stops waiting.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cox.actors.tools.base import BaseTool, ToolEnv
from cox.protocol.types import ToolCall, ToolResult

__all__ = ["CLIENT_TIMEOUT_S", "Client", "Delegate", "bridged"]

log = logging.getLogger(__name__)

CLIENT_TIMEOUT_S = 30.0
WRITERS = ("write", "edit", "apply_patch")


class Client:
    """Runs the client's requests on the connection's loop from a tool's thread."""

    def __init__(self, conn: Callable[[], Any], loop: asyncio.AbstractEventLoop, session_id: str) -> None:
        self.conn = conn
        self.loop = loop
        self.session_id = session_id
        self.settling: set[concurrent.futures.Future[Any]] = set()
        """Requests a cancelled call left under way (a terminal's kill): the prompt's answer waits
        for them, so "cancelled" means nothing of the turn still runs."""

    def soon(self, make: Callable[[Any], Any]) -> None:
        """Send ``make(conn)`` now, from any thread, without waiting; kept in ``settling``."""
        future = asyncio.run_coroutine_threadsafe(make(self.conn()), self.loop)
        self.settling.add(future)
        future.add_done_callback(self.settling.discard)

    def call(self, env: ToolEnv | None, make: Callable[[Any], Any], timeout: float = CLIENT_TIMEOUT_S) -> Any:
        """``make(conn)``'s answer. A cancelled call (``env.cancel``; None: not cancellable)
        stops waiting with ``CancelledError``; past ``timeout`` seconds, ``TimeoutError``."""
        future = asyncio.run_coroutine_threadsafe(make(self.conn()), self.loop)
        deadline = time.monotonic() + timeout
        while True:
            if env is not None and env.cancel.cancelled:
                future.cancel()
                raise concurrent.futures.CancelledError()
            try:
                return future.result(timeout=max(0.0, min(0.05, deadline - time.monotonic())))
            except concurrent.futures.TimeoutError:
                if time.monotonic() >= deadline:
                    future.cancel()
                    raise TimeoutError(f"the client did not answer within {timeout:g} s") from None


class Delegate(BaseTool):
    """``inner`` as the model sees it: name, schema, risk, subject, writes and description are
    the inner tool's, so the engine judges and checkpoints it exactly as without a client."""

    def __init__(self, inner: BaseTool, client: Client) -> None:
        self.inner = inner
        self.client = client
        for attr in ("name", "description", "input_schema", "parallel", "required", "server", "trusted"):
            setattr(self, attr, getattr(inner, attr))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def check(self, call_input: dict[str, Any]) -> None:
        self.inner.check(call_input)

    def risk(self, call_input: dict[str, Any]) -> Any:
        return self.inner.risk(call_input)

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return self.inner.subject(call_input, env)

    def writes(self, call: ToolCall, env: ToolEnv) -> list[Path] | None:
        return self.inner.writes(call, env)

    def describe(self, call: ToolCall, env: ToolEnv) -> ToolCall:
        return self.inner.describe(call, env)

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        return self.inner.call(call, env)


class _Bridged(Delegate):
    """A file tool with the client's ``fs/*`` on the side (see the module's docstring)."""

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        if self.name == "read":
            return self._read(call, env)
        paths = self._targets(call, env)
        result = self.inner.call(call, env)
        if result.ok:
            for path in paths:
                self._send(path, env)
        return result

    def _targets(self, call: ToolCall, env: ToolEnv) -> list[Path]:
        try:
            found = self.inner.writes(call, env)
        except Exception:
            return []
        return list(found or [])

    def _send(self, path: Path, env: ToolEnv) -> None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return  # deleted, or not text: the editor reloads it from disk
        c = self.client
        try:
            c.call(env, lambda conn: conn.write_text_file(session_id=c.session_id, path=str(path), content=text))
        except Exception as exc:
            log.warning("fs/write_text_file %s failed: %s", path, exc)


    def _read(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        result = self.inner.call(call, env)  # every check, on the disk's file, as without a client
        if not result.ok or result.images:
            return result
        from cox.actors.tools.files import numbered, resolve

        path = resolve(call.input, env)
        c = self.client
        try:
            answer = c.call(env, lambda conn: conn.read_text_file(session_id=c.session_id, path=str(path)))
        except Exception as exc:
            log.warning("fs/read_text_file %s failed: %s; the disk's text stands", path, exc)
            return result
        text = getattr(answer, "content", None)
        return numbered(text, call.input) if isinstance(text, str) else result


def bridged(tools: dict[str, BaseTool], caps: Any, client: Client,
            announce: Callable[[str, str], Any]) -> dict[str, BaseTool]:
    """``tools`` with the file tools bridged to what the client offers (``caps.fs``), and bash
    run in its terminal when it offers ``terminal`` (``terminal.Terminal``)."""
    fs = getattr(caps, "fs", None)
    reads, writes = bool(getattr(fs, "read_text_file", False)), bool(getattr(fs, "write_text_file", False))
    out = dict(tools)
    for name in [*(WRITERS if writes else ()), *(("read",) if reads else ())]:
        tool = tools.get(name)
        if tool is not None:
            out[name] = _Bridged(tool, client)
    if getattr(caps, "terminal", False) and "bash" in tools:
        from .terminal import Terminal

        out["bash"] = Terminal(tools["bash"], client, announce)  # type: ignore[arg-type]  # the registry's BashTool
    return out
