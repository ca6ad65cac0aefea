"""The ``cox acp`` process: the protocol on stdin/stdout, everything else off it.

stdout carries JSON-RPC only: the protocol gets private copies of fds 0 and 1, then fd 0 reads
the null device and fd 1 writes to stderr (``mcp_front.Wire``, as ``cox mcp serve`` does), so a
stray print or a tool's child process cannot corrupt the stream. Logs go to ``$COX_HOME/logs``
(and stderr with ``--verbose``). When the client closes stdin — or sends SIGTERM, SIGINT or
SIGHUP — every session is stopped, its running calls cancelled and their processes reaped, and
the process exits 0. stdin and stdout must be pipes or sockets (what a client gives it); a file
or a terminal is refused with a sentence saying so (exit 64).
"""

from __future__ import annotations

import asyncio
import signal
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


class NotPipes(Exception):
    """stdin or stdout is a regular file or a terminal that asyncio cannot watch."""


async def _serve(argv: list[str], wire: Any) -> None:
    from acp import run_agent

    from .agent import CoxAgent

    try:
        reader, writer = await _streams(wire)
    except ValueError as exc:
        raise NotPipes(str(exc)) from None
    agent = CoxAgent(argv)
    serving = asyncio.ensure_future(run_agent(agent, writer, reader))  # type: ignore[arg-type]  # a structural Agent
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # the editor closing: stop as on EOF
        loop.add_signal_handler(sig, serving.cancel)
    try:
        await serving
    except asyncio.CancelledError:
        pass
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
    except NotPipes as exc:
        print(f"cox acp: stdin and stdout must be pipes or sockets, as an ACP client starts it ({exc}); "
              "run it from the editor's agent_servers settings, or pipe JSON-RPC lines in and out", file=sys.stderr)
        return 64
    except KeyboardInterrupt:
        return 4
    finally:
        wire.restore()
        sys.stderr.flush()
    return 0
