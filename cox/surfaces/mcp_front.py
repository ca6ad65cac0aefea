"""The first answers of ``cox mcp serve``, given before the MCP SDK is imported.

Importing the SDK (``mcp``, ``mcp_types``, pydantic, anyio) takes 1–2 s, and a client such as
Codex fixes its tool list when a turn starts: a server that answers ``initialize`` late shows no
tools in that turn. So the server speaks the handshake itself, in plain JSON lines: it answers
``initialize`` (negotiating the version the way the SDK does), ``ping`` and ``tools/list``, and
hands the stream to the SDK at the first message it does not know (a ``tools/call`` …).

The handover replays what the SDK must have seen: the client's ``initialize`` under a private
id (its answer is dropped on the way out, the client had its own), the client's
``notifications/initialized``, then the message itself; the rest of stdin follows, read from
the same buffer. A test holds each front answer equal to the SDK's for the same request.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any, BinaryIO

log = logging.getLogger("cox.surfaces.mcp_serve")

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol versions the SDK negotiates through ``initialize`` (its
``HANDSHAKE_PROTOCOL_VERSIONS``; a test keeps the two equal). A version it does not know gets the
newest, as the SDK answers."""

PRIVATE_ID = f"cox-front-initialize-{os.urandom(8).hex()}"
"""The id the replayed ``initialize`` carries to the SDK; its answer never reaches the client
(random per process, so no id a client picks can be taken for it)."""


class Wire:
    """stdin and stdout of the protocol, on private descriptors: fd 0 then reads the null device
    and fd 1 writes to stderr, so a stray print or a child's output cannot corrupt the stream
    (what the SDK's ``stdio_server`` does for itself)."""

    def __init__(self) -> None:
        self.reader: BinaryIO = os.fdopen(os.dup(0), "rb")
        self.writer: BinaryIO = os.fdopen(os.dup(1), "wb")
        self._saved = (os.dup(0), os.dup(1))
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
        self.writer.flush()

    def restore(self) -> None:
        for fd, saved in zip((0, 1), self._saved, strict=True):
            os.dup2(saved, fd)
            os.close(saved)


def since_launch() -> str:
    """"N ms after launch" from the process's start time (Linux's /proc), else "" elsewhere."""
    try:
        ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        uptime = float(open("/proc/uptime").read().split()[0])
    except (OSError, ValueError, IndexError):
        return ""
    return f"{(uptime - ticks / os.sysconf('SC_CLK_TCK')) * 1000:.0f} ms after launch"


def negotiate(requested: Any) -> str:
    return requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]


class Front:
    """Answers the handshake until a message it does not handle; ``run`` then returns the lines
    the SDK must read first (``None``: the client closed stdin before that)."""

    def __init__(self, wire: Wire, *, name: str, version: str, instructions: str,
                 listing: Callable[[], list[dict[str, Any]]], on_listed: Callable[[], None] = lambda: None) -> None:
        self.wire = wire
        self.name = name
        self.version = version
        self.instructions = instructions
        self.listing = listing
        self.on_listed = on_listed
        self.initialize: dict[str, Any] | None = None
        self.initialized: bytes | None = None

    def run(self) -> list[bytes] | None:
        while True:
            line = self.wire.reader.readline()
            if not line:
                return None
            if not line.strip():
                continue
            if not self.answer(line):
                return self.replay(line)

    def answer(self, line: bytes) -> bool:
        """Answer ``line`` if it is one the front speaks; False hands it (and the rest) over."""
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
            return False
        method, ident, params = msg["method"], msg.get("id"), msg.get("params")
        is_request = "id" in msg and (isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool)))
        if method == "initialize" and is_request and self.initialize is None and isinstance(params, dict) \
                and isinstance(params.get("protocolVersion"), str):
            self.initialize = msg
            self.reply(ident, method, {"capabilities": {"tools": {"listChanged": False}},
                                       "instructions": self.instructions,
                                       "protocolVersion": negotiate(params["protocolVersion"]),
                                       "serverInfo": {"name": self.name, "version": self.version}})
            return True
        if method == "notifications/initialized" and "id" not in msg and self.initialize is not None \
                and self.initialized is None:
            self.initialized = line
            return True
        if method == "ping" and is_request:
            self.reply(ident, method, {})
            return True
        if method == "tools/list" and is_request and self.initialized is not None \
                and (params is None or (isinstance(params, dict) and params.get("cursor") is None)):
            self.reply(ident, method, {"tools": self.listing()})
            self.on_listed()
            return True
        return False

    def reply(self, ident: Any, method: str, result: dict[str, Any]) -> None:
        log.info("mcp serve: answered %s %s, before the MCP SDK was loaded", method, since_launch())
        self.wire.send({"jsonrpc": "2.0", "id": ident, "result": result})

    def replay(self, line: bytes) -> list[bytes]:
        first: list[bytes] = []
        if self.initialize is not None:
            first.append(json.dumps({**self.initialize, "id": PRIVATE_ID}).encode() + b"\n")
        if self.initialized is not None:
            first.append(self.initialized)
        return [*first, line]


class ReplayIn:
    """The SDK's stdin: the replayed lines, then the rest of the wire's (text, one line a call)."""

    def __init__(self, first: list[bytes], reader: BinaryIO) -> None:
        self.first = list(first)
        self.reader = reader

    def readline(self) -> str:
        data = self.first.pop(0) if self.first else self.reader.readline()
        return data.decode("utf-8", "replace")


class FilteredOut:
    """The SDK's stdout: every message to the wire except the answer to the replayed initialize."""

    def __init__(self, writer: BinaryIO) -> None:
        self.writer = writer

    def write(self, text: str) -> int:
        if PRIVATE_ID in text:
            try:
                msg = json.loads(text)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and msg.get("id") == PRIVATE_ID and "method" not in msg:
                return len(text)
        self.writer.write(text.encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        self.writer.flush()
