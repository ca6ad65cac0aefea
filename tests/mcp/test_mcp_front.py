"""``cox mcp serve`` answers the handshake before the MCP SDK is imported (``mcp_front``).

What is bounded is what gets imported before the answers (read from ``python -X importtime`` of
a real ``cox --verbose mcp serve``, whose log line for each answer is written to the same stderr
just before the answer), not how long they take; and each front answer must be the one the SDK
itself gives for the same request, so the front can never drift from the protocol it stands in for.
"""

from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from cox.config.loader import load_config
from cox.surfaces import mcp_front
from cox.surfaces.mcp_serve import ToolServer, instructions, serve
from tests.provider.test_startup_imports import HEAVY

HEAVY_HERE = (*HEAVY, "anyio")


def rpc(ident: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if ident is not None:
        msg["id"] = ident
    if params is not None:
        msg["params"] = params
    return msg


def handshake(version: str) -> list[dict[str, Any]]:
    return [rpc(1, "initialize", {"protocolVersion": version, "capabilities": {},
                                  "clientInfo": {"name": "test", "version": "0"}}),
            rpc(None, "notifications/initialized"), rpc(2, "tools/list", {}), rpc(3, "ping")]


class Answers:
    """The SDK's stdin and stdout for ``serve``: stdin ends only once every request has its answer
    (the SDK drops what is in flight at EOF), with an outer bound only a hang reaches."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.lines = [json.dumps(m) + "\n" for m in messages]
        self.wanted = sum(1 for m in messages if "id" in m)
        self.out: list[str] = []
        self.done = threading.Event()

    def readline(self) -> str:
        if self.lines:
            return self.lines.pop(0)
        assert self.done.wait(60), f"the SDK answered {len(self.out)} of {self.wanted}"
        return ""

    def write(self, text: str) -> int:
        self.out.append(text)
        if len(self.out) >= self.wanted:
            self.done.set()
        return len(text)

    def flush(self) -> None:
        pass


def sdk_answers(tools: ToolServer, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    io_ = Answers(messages)
    anyio.run(serve, tools, io_, io_)
    return [json.loads(line) for line in "".join(io_.out).splitlines()]


class FakeWire:
    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.reader = io.BytesIO(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.sent: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(json.loads(json.dumps(message)))


def test_the_front_negotiates_the_versions_the_sdk_does() -> None:
    assert mcp_front.HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


@pytest.mark.parametrize("version", [*mcp_front.HANDSHAKE_VERSIONS, "2026-07-28", "1999-01-01"])
def test_each_front_answer_is_the_sdks(tmp_path: Path, version: str) -> None:
    tools = ToolServer(load_config(tmp_path), tmp_path)
    messages = handshake(version)
    wire = FakeWire(messages)
    front = mcp_front.Front(wire, name="cox", version=__import__("cox").__version__,  # type: ignore[arg-type]
                            instructions=instructions(tmp_path), listing=tools.listing)
    assert front.run() is None  # all four answered by the front, then EOF
    assert wire.sent == sdk_answers(tools, messages)
    assert [m["id"] for m in wire.sent] == [1, 2, 3]


def test_the_handover_replays_the_handshake_and_hides_its_answer(tmp_path: Path) -> None:
    tools = ToolServer(load_config(tmp_path), tmp_path)
    (tmp_path / "a.txt").write_text("alpha\n")
    messages = [*handshake("2025-06-18"), rpc(4, "tools/call", {"name": "read", "arguments": {"path": "a.txt"}}),
                rpc(5, "tools/list", {})]
    wire = FakeWire(messages)
    front = mcp_front.Front(wire, name="cox", version="x", instructions="i",  # type: ignore[arg-type]
                            listing=tools.listing)
    first = front.run()
    assert first is not None and json.loads(first[-1])["id"] == 4
    assert json.loads(first[0])["id"] == mcp_front.PRIVATE_ID
    out = io.BytesIO()
    answered = threading.Event()

    class Held:
        """The rest of stdin, whose EOF waits until both requests have their answers."""

        def readline(self) -> bytes:
            line = wire.reader.readline()
            if not line:
                assert answered.wait(60)
            return line

    class Out(mcp_front.FilteredOut):
        def flush(self) -> None:
            super().flush()
            if out.getvalue().count(b"\n") >= 2:
                answered.set()

    try:
        anyio.run(serve, tools, mcp_front.ReplayIn(first, Held()), Out(out))  # type: ignore[arg-type]
    finally:
        tools.close()  # the store actor the call's archiving started
    answers = sorted((json.loads(line) for line in out.getvalue().splitlines()), key=lambda a: a["id"])
    assert [a["id"] for a in answers] == [4, 5]  # the replayed initialize's answer never reaches the client
    assert "alpha" in answers[0]["result"]["content"][0]["text"]
    assert answers[1]["result"]["tools"] == wire.sent[1]["result"]["tools"]  # the SDK lists what the front listed


def test_cox_mcp_serve_answers_the_handshake_before_importing_anything_heavy(tmp_path: Path, cox_home: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    messages = [*handshake("2025-06-18"), rpc(4, "tools/call", {"name": "read", "arguments": {"path": "a.txt"}})]
    p = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "cox.surfaces.cli", "--verbose", "mcp", "serve",
                          "--cwd", str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env={**os.environ})
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in p.stdout], daemon=True).start()  # type: ignore[union-attr]
    assert p.stdin is not None
    p.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    p.stdin.flush()
    answers = [json.loads(lines.get(timeout=120)) for _ in range(4)]  # stdin stays open until all are in
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err[-2000:]
    assert lines.empty()  # nothing else on stdout
    assert [a["id"] for a in answers] == [1, 2, 3, 4]
    assert len(answers[1]["result"]["tools"]) >= 8 and "alpha" in answers[3]["result"]["content"][0]["text"]
    lines = err.splitlines()  # type: ignore[assignment]
    listed = next(i for i, line in enumerate(lines) if "answered tools/list" in line)
    before = {line.rsplit("|", 1)[1].strip() for line in lines[:listed] if line.startswith("import time:")}
    after = {line.rsplit("|", 1)[1].strip() for line in lines[listed:] if line.startswith("import time:")}
    assert "cox.actors.tools.registry" in before, sorted(before)
    assert any(name.split(".")[0] == "mcp_types" for name in after)  # the table is the real one
    assert sorted(name for name in before if name.split(".")[0] in HEAVY_HERE) == []
