"""A small language server for the tests that need one to misbehave on purpose.

Usage: ``fake_server.py MODE [ARG]``:

- ``push``: answers initialize; pushes one error for every opened or changed file.
- ``silent``: answers initialize and nothing after it: no diagnostics are ever pushed.
- ``die-once MARKER``: the first process (MARKER absent) creates MARKER and exits when a file is
  opened, mid-call; the next one behaves as ``push``.
- ``pull``: advertises ``diagnosticProvider``, never pushes, answers ``textDocument/diagnostic``.
- ``die-always COUNTER``: appends a line to COUNTER at each start and exits when a file is opened.
- ``hostile EDIT.json``: as ``push``, and answers every rename (and definition) with the JSON in
  EDIT.json (``$ROOT`` in it is replaced by the workspace's URI).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

MODE = sys.argv[1]
ARG = sys.argv[2] if len(sys.argv) > 2 else ""
root_uri = ""


def read() -> dict[str, Any] | None:
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    message: dict[str, Any] = json.loads(sys.stdin.buffer.read(length or 0))
    return message


def send(message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def push(uri: str, version: int) -> None:
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
        "uri": uri, "version": version, "diagnostics": [{
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
            "severity": 1, "source": "fake", "code": "E1", "message": "fake error\x1b[31m here"}]}})


if MODE == "die-always":
    with open(ARG, "a") as counter:
        counter.write("started\n")
while True:
    msg = read()
    if msg is None:
        break
    method = msg.get("method")
    if method == "initialize":
        root_uri = msg["params"].get("rootUri") or ""
        caps: dict[str, Any] = {"textDocumentSync": 1, "renameProvider": True, "definitionProvider": True}
        if MODE == "pull":
            caps["diagnosticProvider"] = {"interFileDependencies": False, "workspaceDiagnostics": False}
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": caps}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    elif method == "exit":
        break
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        doc = msg["params"]["textDocument"]
        if MODE == "die-always":
            os._exit(3)
        if MODE == "die-once" and not os.path.exists(ARG):
            open(ARG, "w").close()
            os._exit(3)
        if MODE not in ("silent", "pull"):
            push(doc["uri"], doc.get("version", 1))
    elif method == "textDocument/diagnostic":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"kind": "full", "items": [
            {"range": {"start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 3}},
             "severity": 2, "source": "pulled", "message": "asked, not pushed"}]}})
    elif method in ("textDocument/rename", "textDocument/definition") and MODE == "hostile":
        with open(ARG) as f:
            edit = json.loads(f.read().replace("$ROOT", root_uri))
        send({"jsonrpc": "2.0", "id": msg["id"], "result": edit})
    elif "id" in msg and method is not None:
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
