"""The ACP client side for the tests: the ``agent-client-protocol`` package's own
``spawn_agent_process`` driving a real ``cox acp`` subprocess on the scripted model.

:class:`Editor` is the client: it records every ``session/update``, answers each permission
request with the next of ``answers`` (an option id, or ``"cancel"``), and — when it says it can —
keeps ``fs/write_text_file`` writes in ``buffers`` (an editor's open buffers) and answers
``fs/read_text_file`` from them (else from the disk), each path asked kept in ``reads``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from tests.waits import BOUND_S

ROOT = Path(__file__).resolve().parents[2]


class Terminal:
    """A process the editor runs for the agent (``terminal/create``), its output kept."""

    def __init__(self, argv: list[str], proc: asyncio.subprocess.Process) -> None:
        self.argv = argv
        self.proc = proc
        self.output = b""
        self.killed = self.released = False
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(65536):
            self.output += chunk


class Editor:
    def __init__(self, answers: list[str] | None = None, *, fs: bool = False, terminal: bool = False) -> None:
        self.answers = list(answers or [])
        self.fs = fs
        self.terminal = terminal
        self.terminals: dict[str, Terminal] = {}
        self.updates: list[tuple[str, Any]] = []
        self.asked: list[Any] = []
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.changed = asyncio.Event()
        self.release = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        self.changed.set()
        answer = self.answers.pop(0) if self.answers else "reject_once"
        if answer == "hold":  # unanswered until the test releases it, then cancelled
            await self.release.wait()
            answer = "cancel"
        if answer == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        assert answer in {o.option_id for o in options}, options
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        return ReadTextFileResponse(content=self.buffers[path] if path in self.buffers else Path(path).read_text())

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              env: list[Any] | None = None, cwd: str | None = None, output_byte_limit: int | None = None,
                              **kwargs: Any) -> CreateTerminalResponse:
        argv = [command, *(args or [])]
        proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env={e.name: e.value for e in env or []},
                                                    stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        tid = f"term-{len(self.terminals) + 1}"
        self.terminals[tid] = Terminal(argv, proc)
        self.changed.set()
        return CreateTerminalResponse(terminal_id=tid)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> WaitForTerminalExitResponse:
        t = self.terminals[terminal_id]
        code = await t.proc.wait()
        if not t.killed:
            await t.reader  # its output is whole (a killed one's: what came; a child may hold the pipe)
        return WaitForTerminalExitResponse(exit_code=code if code >= 0 else None)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        t = self.terminals[terminal_id]
        t.killed = True
        if t.proc.returncode is None:
            os.killpg(t.proc.pid, 9)
        await t.proc.wait()

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        t = self.terminals[terminal_id]
        done = t.proc.returncode
        status = TerminalExitStatus(exit_code=done) if done is not None and done >= 0 else None
        return TerminalOutputResponse(output=t.output.decode(), truncated=False, exit_status=status)

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        self.terminals[terminal_id].released = True

    def caps(self) -> ClientCapabilities:
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=self.fs, write_text_file=self.fs),
                                  terminal=self.terminal)

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u.session_update for sid, u in self.updates if session_id in (None, sid)]

    def of(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if u.session_update == kind]

    def text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))

    async def wait(self, ok: Any) -> None:
        """Until ``ok()`` holds (bounded only so a hang fails); looked at again on each message
        from the agent, and every 20 ms for what is not one (a file appearing)."""
        async def loop() -> None:
            while not ok():
                self.changed.clear()
                try:
                    await asyncio.wait_for(self.changed.wait(), 0.02)
                except TimeoutError:
                    pass
        await asyncio.wait_for(loop(), BOUND_S)


def script(path: Path, replies: list[dict[str, Any]], **extra: Any) -> Path:
    path.write_text(json.dumps({"model": "scripted", "replies": replies, **extra}))
    return path


@asynccontextmanager
async def agent(editor: Editor, ws: Path, script_path: Path | None, *args: str,
                env: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """``cox acp --script SCRIPT`` in ``ws`` (no script: the configured provider; ``env`` adds to
    the environment), initialized; yields the connection. Leaving closes
    its stdin and waits for it to exit (it must, by itself)."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    exited = False
    with open(ws.parent / "acp-stderr.txt", "ab") as err:  # read by nobody, so it must not be a pipe
        flags = ["--script", str(script_path)] if script_path is not None else []
        client: Any = editor  # the client side's methods, duck-typed as the acp package calls them
        try:
            async with spawn_agent_process(client, sys.executable, "-m", "cox.surfaces.cli", "acp", *flags,
                                           *args, env=env, cwd=str(ws),
                                           transport_kwargs={"stderr": err.fileno()}) as (connection, proc):
                conn: Any = connection  # the tests read conn.process and conn.init beside the protocol's methods
                conn.process = proc
                conn.init = await asyncio.wait_for(
                    conn.initialize(protocol_version=1, client_capabilities=editor.caps()), BOUND_S)
                yield conn
                assert proc.stdin is not None
                proc.stdin.close()
                await asyncio.wait_for(proc.wait(), BOUND_S)
                assert proc.returncode == 0, proc.returncode
                exited = True
        except ConnectionResetError:
            # cox exited cleanly (checked above) while the editor still answered one of its last
            # requests (a terminal's release after a cancel): that answer had no pipe left to go to.
            if not exited:
                raise


def running(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0


def gone(marker: str) -> bool:
    """The process is gone, or goes within the bound: it was signalled before the answer, and a
    signalled process may take a moment to be reaped."""
    deadline = time.monotonic() + BOUND_S
    while running(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def run(coro: Any) -> Any:
    return asyncio.run(coro)
