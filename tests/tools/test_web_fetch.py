"""web_fetch against a real HTTP server on 127.0.0.1, started by the test (never the internet)."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cox.actors.tools.base import ToolEnv, ToolInputError
from cox.actors.tools.web import MAX_BYTES, WebFetchTool, html_to_text
from cox.policy.rules import host_of, parse_rule
from cox.protocol.types import Risk, ToolCall, ToolResult, ToolStatus
from cox.supervisors import CancelScope

PAGE = b"""<!doctype html><html><head><title>Demo page</title>
<style>body { color: red }</style><script>alert("no")</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<h1>Welcome</h1><p>Read <a href="/docs/intro.html">the intro</a> first.</p>
<h2>Steps</h2><ul><li>install</li><li>run <code>cox</code></li></ul>
<p>Tom &amp; Jerry</p></body></html>"""


class Handler(http.server.BaseHTTPRequestHandler):
    stop: threading.Event

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str | None = "text/plain; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: C901 - one route table
        port = self.server.server_port  # type: ignore[attr-defined]
        path = self.path
        if path == "/page":
            self._send(200, PAGE, "text/html; charset=utf-8")
        elif path == "/plain":
            self._send(200, b"just text\n  indented\n")
        elif path == "/json":
            self._send(200, b'{"a": [1, 2]}', "application/json")
        elif path == "/notype":
            self._send(200, b"no content type here\n", None)
        elif path == "/notype-html":
            self._send(200, b"<!DOCTYPE html><html><body><h3>Sniffed</h3></body></html>", None)
        elif path == "/notype-bin":
            self._send(200, b"\x00\x01\x02binary", None)
        elif path == "/image":
            self._send(200, b"\x89PNG\r\n\x1a\n....", "image/png")
        elif path == "/latin":
            self._send(200, b"<p>caf\xe9</p>", "text/html; charset=iso-8859-1")
        elif path == "/missing":
            self._send(404, b"<h1>Not here</h1>", "text/html")
        elif path == "/redirect":
            self._send(302, b"", headers={"Location": "/plain"})
        elif path.startswith("/chain/"):
            n = int(path.rsplit("/", 1)[1])
            if n == 0:
                self._send(200, b"end of chain\n")
            else:
                self._send(301, b"", headers={"Location": f"/chain/{n - 1}"})
        elif path == "/to-ftp":
            self._send(302, b"", headers={"Location": "ftp://127.0.0.1/file"})
        elif path == "/to-other-host":
            self._send(302, b"", headers={"Location": f"http://localhost:{port}/plain"})
        elif path == "/big":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            chunk = b"0123456789abcdef" * 4096  # 64 KiB
            try:
                for _ in range(96):  # 6 MiB, more than the cap
                    self.wfile.write(chunk)
            except OSError:
                pass  # the client stopped reading at the cap
        elif path in ("/slow", "/stall"):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            if path == "/slow":
                self.wfile.write(b"first part\n")
                self.wfile.flush()
            self.stop.wait(10)
        else:
            self._send(404, b"unknown route")


@dataclass
class Server:
    base: str
    port: int


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server() -> Iterator[Server]:
    stop = threading.Event()
    handler = type("RouteHandler", (Handler,), {"stop": stop})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = False  # server_close() then joins every request thread
    srv.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    thread = threading.Thread(target=srv.serve_forever, name="test-http", kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        port = srv.server_address[1]
        yield Server(f"http://127.0.0.1:{port}", port)
    finally:
        stop.set()
        srv.shutdown()
        srv.server_close()
        thread.join()


def env_for(tmp_path: Path, cancel: CancelScope | None = None) -> ToolEnv:
    return ToolEnv(roots=[tmp_path], cwd=tmp_path, cancel=cancel or CancelScope())


def fetch(tmp_path: Path, url: str, tool: WebFetchTool | None = None, cancel: CancelScope | None = None) -> ToolResult:
    return (tool or WebFetchTool()).call(ToolCall(id="t", name="web_fetch", input={"url": url}),
                                         env_for(tmp_path, cancel))


def test_html_becomes_readable_text(tmp_path: Path, server: Server) -> None:
    res = fetch(tmp_path, server.base + "/page")
    assert res.ok, res.visible
    head, body = res.visible.split("\n\n", 1)
    assert head.startswith(f"{server.base}/page (200, text/html, ")
    assert body == (f"# Welcome\n\nRead the intro ({server.base}/docs/intro.html) first.\n\n## Steps\n\n"
                    "- install\n- run cox\n\nTom & Jerry")
    assert "alert" not in res.visible and "color" not in res.visible and "About" not in res.visible
    assert res.meta["status"] == 200 and res.meta["media_type"] == "text/html"


def test_other_text_types_come_as_they_are(tmp_path: Path, server: Server) -> None:
    assert fetch(tmp_path, server.base + "/plain").visible.endswith("\n\njust text\n  indented\n")
    assert fetch(tmp_path, server.base + "/json").visible.endswith('\n\n{"a": [1, 2]}')
    assert fetch(tmp_path, server.base + "/notype").visible.endswith("no content type here\n")
    assert fetch(tmp_path, server.base + "/notype-html").visible.endswith("\n\n### Sniffed")
    assert fetch(tmp_path, server.base + "/latin").visible.endswith("\n\ncafé")


def test_binary_is_refused(tmp_path: Path, server: Server) -> None:
    res = fetch(tmp_path, server.base + "/image")
    assert res.status is ToolStatus.ERROR and "image/png, not text" in res.visible
    res = fetch(tmp_path, server.base + "/notype-bin")
    assert res.status is ToolStatus.ERROR and "binary" in res.visible


def test_body_is_cut_at_5_mib(tmp_path: Path, server: Server) -> None:
    res = fetch(tmp_path, server.base + "/big")
    assert res.ok
    assert res.meta["bytes"] == MAX_BYTES == 5 * 1024 * 1024
    assert "[cut at 5.0 MiB: the rest was not fetched]" in res.visible.split("\n", 1)[0]


def test_redirects_on_the_same_host_are_followed_up_to_5(tmp_path: Path, server: Server) -> None:
    res = fetch(tmp_path, server.base + "/redirect")
    assert res.ok and res.visible.endswith("just text\n  indented\n")
    assert res.meta["url"] == server.base + "/plain"
    assert fetch(tmp_path, server.base + "/chain/5").visible.endswith("end of chain\n")
    too_many = fetch(tmp_path, server.base + "/chain/6")
    assert too_many.status is ToolStatus.ERROR and "more than 5 redirects" in too_many.visible


def test_redirect_to_another_scheme_is_refused(tmp_path: Path, server: Server) -> None:
    res = fetch(tmp_path, server.base + "/to-ftp")
    assert res.status is ToolStatus.ERROR
    assert "ftp://127.0.0.1/file" in res.visible and "only http and https" in res.visible


def test_redirect_to_another_host_is_reported_not_followed(tmp_path: Path, server: Server) -> None:
    res = fetch(tmp_path, server.base + "/to-other-host")
    assert res.ok
    assert f"redirects to another host: http://localhost:{server.port}/plain" in res.visible
    assert "just text" not in res.visible
    assert res.meta["redirect"] == f"http://localhost:{server.port}/plain"


def test_http_error_status_is_an_error_with_the_body(tmp_path: Path, server: Server) -> None:
    res = fetch(tmp_path, server.base + "/missing")
    assert res.status is ToolStatus.ERROR
    assert res.visible.startswith(f"HTTP 404 Not Found from {server.base}/missing")
    assert "# Not here" in res.visible


def test_cancel_closes_a_blocked_read_at_once(tmp_path: Path, server: Server) -> None:
    scope = CancelScope()
    def cancel_soon() -> None:
        time.sleep(0.3)
        scope.cancel("interrupt")

    canceller = threading.Thread(target=cancel_soon)
    canceller.start()
    started = time.monotonic()
    res = fetch(tmp_path, server.base + "/slow", cancel=scope)
    elapsed = time.monotonic() - started
    canceller.join()
    assert res.status is ToolStatus.ABORTED
    assert elapsed < 8  # the body takes 10 s: only a missed cancel reaches this


def test_timeout(tmp_path: Path, server: Server) -> None:
    started = time.monotonic()
    res = fetch(tmp_path, server.base + "/stall", tool=WebFetchTool(timeout_s=0.5))
    assert res.status is ToolStatus.ERROR and "timed out after 0.5 s" in res.visible
    assert time.monotonic() - started < 8  # the stall lasts 10 s: only a missed timeout reaches this


def test_connection_refused(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = fetch(tmp_path, f"http://127.0.0.1:{port}/")
    assert res.status is ToolStatus.ERROR and "could not fetch" in res.visible


@pytest.mark.parametrize("url", ["ftp://example.com/x", "file:///etc/passwd", "example.com", "http://", "", 3])
def test_only_http_urls_with_a_host(tmp_path: Path, url: object) -> None:
    with pytest.raises(ToolInputError):
        WebFetchTool().call(ToolCall(id="t", name="web_fetch", input={"url": url}), env_for(tmp_path))


def test_contract_subject_is_the_url_and_risk_is_exec(tmp_path: Path) -> None:
    call = WebFetchTool().describe(
        ToolCall(id="t", name="web_fetch", input={"url": "https://docs.example.com/a?b=1"}), env_for(tmp_path))
    assert call.risk is Risk.EXEC
    assert call.subject == "https://docs.example.com/a?b=1"
    assert host_of(call.subject) == "docs.example.com"
    assert parse_rule("WebFetch(domain:example.com)").matches(call.subject)
    assert not parse_rule("WebFetch(domain:other.org)").matches(call.subject)


def test_html_to_text_details() -> None:
    html = ("<html><head><title>Only title</title></head><body><div>a<br>b</div>"
            "<ol><li>x<ul><li>y</li></ul></li></ol><pre>  keep\n    this</pre>"
            "<table><tr><th>k</th><th>v</th></tr><tr><td>1</td><td>2</td></tr></table>"
            "<p><a href='#top'>anchor</a> <a href='mailto:a@b.c'>mail</a> <img alt='logo'></p>"
            "<noscript>enable js</noscript></body></html>")
    assert html_to_text(html, "https://x.org/") == (
        "title: Only title\n\na\nb\n\n- x\n  - y\n\n  keep\n    this\n\nk | v\n1 | 2\n\nanchor mail [image: logo]")
