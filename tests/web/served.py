"""A real ``cox serve`` in a subprocess on a free loopback port, and an httpx client for it.

The server prints its address on stderr once it accepts connections; the token is read from its
page, as a browser gets it. Every wait is for an event, bounded only so that a hang fails.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.waits import BOUND_S

REPO = Path(__file__).resolve().parents[2]
ADDRESS = re.compile(r"cox serve: listening on (http://\S+/)")
TOKEN = re.compile(r'name="cox-token" content="([^"]+)"')


class Served:
    def __init__(self, cwd: Path, script: Path | None, home: Path, *, extra_env: dict[str, str] | None = None) -> None:
        self.cox_home = home / "cox-home"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(COX_HOME=str(self.cox_home), HOME=str(home), CLAUDE_CONFIG_DIR=str(home / "claude"),
                   PYTHONPATH=str(REPO), **(extra_env or {}))
        self.stderr: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cox.surfaces.cli", "serve", "--port", "0", "--cwd", str(cwd),
             *(["--script", str(script)] if script is not None else [])],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.stderr.append(line)
                lines.put(line)
            lines.put(None)

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        while True:
            line = lines.get(timeout=BOUND_S)
            if line is None:
                raise AssertionError(f"cox serve ended before listening: {''.join(self.stderr)}")
            found = ADDRESS.search(line)
            if found:
                self.url = found.group(1).rstrip("/")
                break
        self.port = int(self.url.rsplit(":", 1)[1])
        # TCP_NODELAY as browsers set it: without it a POST's body waits for the ACK of its headers
        # (Nagle), which the server's delayed ACK holds back 40 ms.
        nodelay = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        self.client = httpx.Client(base_url=self.url, timeout=BOUND_S, transport=nodelay)
        page = self.client.get("/")
        match = TOKEN.search(page.text)
        assert match, page.text[:500]
        self.token = match.group(1)

    def post(self, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        headers = {"X-Cox-Token": self.token, **kw.pop("headers", {})}
        return self.client.post(path, json=body if body is not None else {}, headers=headers, **kw)

    def session(self, **body: Any) -> str:
        r = self.post("/api/agent/sessions", body)
        assert r.status_code == 201, r.text
        return str(r.json()["session_id"])

    def stream(self, path: str, body: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        """The SSE events of one POST, as (name, data), until the server ends the stream."""
        with self.client.stream("POST", path, json=body, headers={"X-Cox-Token": self.token}) as r:
            assert r.status_code == 200, r.read().decode()
            yield from events(r)

    def turn(self, sid: str, prompt: str, answers: dict[str, str] | None = None,
             **extra: Any) -> list[tuple[str, dict[str, Any]]]:
        """Run one turn to its end (``extra``: more fields of the turn's body, ``effort``); approvals
        are answered from ``answers`` (by tool subject)."""
        got = []
        for name, data in self.stream(f"/api/agent/sessions/{sid}/turns", {"prompt": prompt, **extra}):
            got.append((name, data))
            if name == "approval" and answers is not None:
                answer = answers[data["call"]["subject"]]
                r = self.post(f"/api/agent/sessions/{sid}/approvals/{data['approval_id']}", {"answer": answer})
                assert r.status_code == 200, r.text
        return got

    def stop(self) -> int:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=BOUND_S)
        self.reader.join(timeout=BOUND_S)
        return code


def events(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    name = ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield name, json.loads(line[6:])


def text_of(frames: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(d["text"] for n, d in frames if n == "delta" and d["kind"] == "text")


def script(path: Path, replies: list[dict[str, Any]], agents: dict[str, list[dict[str, Any]]]) -> Path:
    path.write_text(json.dumps({"model": "scripted", "replies": replies, "agents": agents}), encoding="utf-8")
    return path
