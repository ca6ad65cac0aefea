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
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from tests.waits import BOUND_S

ROOT = Path(__file__).resolve().parents[2]


class Editor:
    def __init__(self, answers: list[str] | None = None, *, fs: bool = False) -> None:
        self.answers = list(answers or [])
        self.fs = fs
        self.updates: list[tuple[str, Any]] = []
        self.asked: list[Any] = []
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.changed = asyncio.Event()

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

    def caps(self) -> ClientCapabilities:
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=self.fs, write_text_file=self.fs))

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
async def agent(editor: Editor, ws: Path, script_path: Path, *args: str) -> AsyncIterator[Any]:
    """``cox acp --script SCRIPT`` in ``ws``, initialized; yields the connection. Leaving closes
    its stdin and waits for it to exit (it must, by itself)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    async with spawn_agent_process(editor, sys.executable, "-m", "cox.surfaces.cli", "acp", "--script",
                                   str(script_path), *args, env=env, cwd=str(ws)) as (conn, proc):
        conn.process = proc
        conn.init = await asyncio.wait_for(conn.initialize(protocol_version=1, client_capabilities=editor.caps()),
                                           BOUND_S)
        yield conn
        assert proc.stdin is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), BOUND_S)
        assert proc.returncode == 0, proc.returncode


def run(coro: Any) -> Any:
    return asyncio.run(coro)
