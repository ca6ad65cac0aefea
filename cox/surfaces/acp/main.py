"""The ``cox acp`` process: the protocol on stdin/stdout, everything else off it.

stdout carries JSON-RPC only: the protocol gets private copies of fds 0 and 1, then fd 0 reads
the null device and fd 1 writes to stderr (``mcp_front.Wire``, as ``cox mcp serve`` does), so a
stray print or a tool's child process cannot corrupt the stream. Logs go to ``$COX_HOME/logs``
(and stderr with ``--verbose``). When the client closes stdin every session is stopped, its
running calls cancelled and their processes reaped, and the process exits 0.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

__all__ = ["run"]

STDIO_LIMIT = 50 * 1024 * 1024
"""The longest JSON-RPC line read (the package's default for images in prompts)."""


async def _streams(wire: Any) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STDIO_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), wire.reader)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, wire.writer)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def _serve(argv: list[str], wire: Any) -> None:
    from acp import run_agent

    from .agent import CoxAgent

    agent = CoxAgent(argv)
    reader, writer = await _streams(wire)
    try:
        await run_agent(agent, writer, reader)  # type: ignore[arg-type]  # a structural Agent, its optional methods left out
    finally:
        await agent.close()


def passthrough(args: Any) -> list[str]:
    """The flags of ``cox acp`` every session's ``prepare`` gets, as ``cox run`` flags."""
    out: list[str] = []
    for flag, value in (("--script", args.script), ("--model", args.model),
                        ("--permission-mode", args.permission_mode)):
        if value:
            out += [flag, value]
    if getattr(args, "verbose", False):
        out.append("--verbose")
    return out


def run(args: Any) -> int:
    from cox.surfaces.mcp_front import Wire

    wire = Wire()
    try:
        asyncio.run(_serve(passthrough(args), wire))
    except KeyboardInterrupt:
        return 4
    finally:
        wire.restore()
        sys.stderr.flush()
    return 0
