"""Start ``httpserver.py`` (a streamable-HTTP MCP server) as a real process on 127.0.0.1 and wait,
bounded, until it accepts connections; kill its process group when done."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HTTP_SERVER = Path(__file__).parent / "httpserver.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpMcp:
    """One ``httpserver.py`` on a fixed port (kept across :meth:`restart`)."""

    def __init__(self, port: int | None = None, auth_url: str | None = None, env: dict[str, str] | None = None):
        self.port = port or free_port()
        self.auth_url = auth_url
        self.env = {**os.environ, **(env or {})}
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 20.0) -> HttpMcp:
        argv = [sys.executable, str(HTTP_SERVER), str(self.port), *([self.auth_url] if self.auth_url else [])]
        self.proc = subprocess.Popen(argv, env=self.env, start_new_session=True, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"httpserver.py exited with {self.proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"httpserver.py did not listen on {self.port} within {timeout:g}s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)

    def restart(self) -> HttpMcp:
        self.kill()
        return self.start()

    def __enter__(self) -> HttpMcp:
        return self.start() if self.proc is None else self

    def __exit__(self, *_exc: object) -> None:
        self.kill()
