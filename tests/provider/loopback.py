"""A model API on 127.0.0.1 for the adapter tests: it streams byte-exact SSE as the real APIs do.

Queue responses with ``server.add(...)``; each request takes the next one. A response is a
status, headers and a list of body pieces (bytes) sent with optional pauses; ``cut=True`` closes
the connection after the pieces without finishing. Every request's path, headers and JSON body
are recorded in ``server.requests``.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    body: list[bytes]
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    pause_s: float = 0.0
    cut: bool = False
    stall_s: float = 0.0  # wait this long before the first byte of the body
    hold_s: float = 0.0  # wait this long before the status line (a server that never answers)


def sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> list[bytes]:
    """Encode ``(event name or None, data)`` pairs as SSE, one piece per event."""
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {text}\n\n".encode())
    return out


class Loopback:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.first_byte_at: list[float] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 2  # an idle keep-alive connection ends its thread soon after the test

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers.items()),
                                           "json": json.loads(raw or b"null"), "at": time.time()})
                    reply = outer.replies.pop(0) if outer.replies else Reply([b'{"error": "no reply queued"}'],
                                                                             status=500)
                if reply.hold_s and outer.stopping.wait(reply.hold_s):
                    return
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if reply.cut:
                    self.send_header("connection", "close")
                else:
                    self.send_header("content-length", str(sum(len(b) for b in reply.body)))
                self.end_headers()
                if reply.stall_s and outer.stopping.wait(reply.stall_s):
                    return
                for i, piece in enumerate(reply.body):
                    if i == 0:
                        outer.first_byte_at.append(time.time())
                    try:
                        self.wfile.write(piece)
                        self.wfile.flush()
                    except OSError:
                        return
                    if reply.pause_s and outer.stopping.wait(reply.pause_s):
                        return
                if reply.cut:
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = False
        self.server.block_on_close = True  # server_close() joins the handler threads
        # shutdown() waits for the serve loop's next poll: 0.5 s by default, paid by every test
        self.thread = threading.Thread(target=self.server.serve_forever, name="loopback-api", daemon=True,
                                       kwargs={"poll_interval": 0.02})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, reply: Reply) -> None:
        with self.lock:
            self.replies.append(reply)

    def __enter__(self) -> Loopback:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        from cox.actors.provider.transport import close_clients

        self.stopping.set()
        close_clients()  # ends the keep-alive connections the handler threads wait on
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
