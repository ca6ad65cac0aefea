"""``web_fetch``: GET an http(s) URL and give the model readable text.

The risk is Exec, not ReadOnly: fetching a URL sends data off the machine (the URL itself can
carry whatever the model put in it), so the permission engine asks by default, and a
``WebFetch(domain:host)`` rule can allow or deny a host; the subject is the URL for that.
For the same reason redirects are followed only within the host the call named (and at most
5 of them, and only to http or https): a redirect to another host is reported, and the model
fetches that URL in a call of its own, which the rules judge again.

The body is streamed and cut at 5 MiB, the whole fetch bounded by a 20 s deadline, and
cancelling the turn closes the response. HTML becomes text (headings as ``#``, links as
``text (url)``, list items as ``- ``; scripts, styles and navigation dropped); other text types
come as they are; anything else is refused rather than shown as mojibake.
"""

from __future__ import annotations

import re
import time
from functools import partial
from typing import Any
from urllib.parse import urljoin, urlsplit

from cox.protocol.types import Risk, ToolCall, ToolResult

from . import catalog
from .base import BaseTool, ToolEnv, ToolInputError
from .visible import human_size

TIMEOUT_S = 20.0
MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
USER_AGENT = "cox/0.1 (web_fetch)"
_TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/x-javascript",
               "application/ecmascript", "application/toml", "application/yaml", "application/x-yaml",
               "application/x-sh", "application/sql", "application/graphql", "image/svg+xml")
_HTML_TYPES = ("text/html", "application/xhtml+xml")

# --- HTML to text ---------------------------------------------------------------------------


def html_to_text(html: str, base_url: str = "") -> str:
    """Readable text of an HTML page (links made absolute against ``base_url``)."""
    from .html_text import html_to_text as convert  # html.parser loads on the first page fetched

    return convert(html, base_url)


# --- fetching -------------------------------------------------------------------------------


def _media_type(content_type: str) -> tuple[str, str | None]:
    parts = [p.strip() for p in content_type.split(";")]
    charset = None
    for p in parts[1:]:
        if p.lower().startswith("charset="):
            charset = p.split("=", 1)[1].strip().strip('"\'') or None
    return parts[0].lower(), charset


def _kind(media_type: str) -> str:
    """``html``, ``text``, ``unknown`` (no type: sniffed) or ``binary``."""
    if not media_type:
        return "unknown"
    if media_type in _HTML_TYPES:
        return "html"
    if media_type.startswith("text/") or media_type in _TEXT_TYPES or media_type.endswith(("+json", "+xml")):
        return "text"
    return "binary"


def _decode(data: bytes, charset: str | None, html: bool) -> str:
    if charset is None and html:
        m = re.search(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]+)""", data[:4096], re.IGNORECASE)
        charset = m.group(1).decode("ascii") if m else None
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


def _same_site(a: str, b: str) -> bool:
    def host(u: str) -> str:
        h = (urlsplit(u).hostname or "").lower().rstrip(".")
        return h[4:] if h.startswith("www.") else h

    return host(a) == host(b)


def _abort(response: Any) -> None:
    from cox.actors.net import abort_response

    abort_response(response)


def check_url(url: Any) -> str:
    if not isinstance(url, str) or not url.strip():
        raise ToolInputError("'url' must be a non-empty string")
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise ToolInputError(f"only http and https URLs can be fetched, not {parts.scheme or 'a URL without scheme'}"
                             f" ({url})")
    if not parts.hostname:
        raise ToolInputError(f"the URL names no host: {url}")
    return str(url)


class WebFetchTool(BaseTool):
    spec = catalog.WEB_FETCH

    def __init__(self, timeout_s: float = TIMEOUT_S, max_bytes: int = MAX_BYTES,
                 max_redirects: int = MAX_REDIRECTS) -> None:
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.EXEC  # data leaves the machine: ask by default (see the module docstring)

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return str(call_input.get("url", "")).strip()

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        import httpx

        url = check_url(call.input.get("url"))
        deadline = time.monotonic() + self.timeout_s
        headers = {"User-Agent": USER_AGENT, "Accept": "text/html, text/plain;q=0.9, */*;q=0.5"}
        with httpx.Client(timeout=self.timeout_s, follow_redirects=False, headers=headers) as client:
            try:
                return self._fetch(client, url, deadline, env)
            except Exception as exc:
                if env.cancel.cancelled:  # closing the response mid-read raises; that is the point
                    return ToolResult.aborted("web_fetch: interrupted")
                if isinstance(exc, httpx.TimeoutException):
                    return ToolResult.error(f"timed out after {self.timeout_s:g} s fetching {url}")
                if isinstance(exc, httpx.HTTPError):
                    return ToolResult.error(f"could not fetch {url}: {type(exc).__name__}: {exc}")
                raise

    def _fetch(self, client: Any, url: str, deadline: float, env: ToolEnv) -> ToolResult:
        current = url
        for hop in range(self.max_redirects + 1):
            if env.cancel.cancelled:
                return ToolResult.aborted("web_fetch: interrupted")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return ToolResult.error(f"timed out after {self.timeout_s:g} s fetching {url}")
            request = client.build_request("GET", current, timeout=remaining)
            response = client.send(request, stream=True)
            unregister = env.cancel.on_cancel(partial(_abort, response))
            try:
                if response.is_redirect:
                    target = urljoin(current, response.headers.get("location", ""))
                    scheme = urlsplit(target).scheme.lower()
                    if scheme not in ("http", "https"):
                        return ToolResult.error(f"{current} redirects to {target}: only http and https are "
                                                "followed; not fetched")
                    if not _same_site(current, target):
                        return ToolResult(visible=f"{current} redirects to another host: {target}\n"
                                          "Fetch that URL with web_fetch to follow it.",
                                          meta={"redirect": target, "status": response.status_code})
                    if hop == self.max_redirects:
                        break
                    current = target
                    continue
                return self._read(response, current, url, deadline, env)
            finally:
                unregister()
                response.close()
        return ToolResult.error(f"{url}: more than {self.max_redirects} redirects; not fetched")

    def _read(self, response: Any, final: str, asked: str, deadline: float, env: ToolEnv) -> ToolResult:
        media_type, charset = _media_type(response.headers.get("content-type", ""))
        kind = _kind(media_type)
        if kind == "binary":
            return ToolResult.error(f"{final} is {media_type}, not text; web_fetch returns text only",
                                    status=response.status_code, media_type=media_type)
        chunks: list[bytes] = []
        size = 0
        truncated = False
        for chunk in response.iter_bytes():
            if env.cancel.cancelled:
                return ToolResult.aborted("web_fetch: interrupted")
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_bytes:
                truncated = True
                break
            if time.monotonic() > deadline:
                return ToolResult.error(f"timed out after {self.timeout_s:g} s fetching {asked}")
        if env.cancel.cancelled:
            return ToolResult.aborted("web_fetch: interrupted")
        data = b"".join(chunks)[: self.max_bytes]
        if kind == "unknown":
            if b"\0" in data[:8192]:
                return ToolResult.error(f"{final} sent binary content without a type; web_fetch returns text only")
            kind = "html" if re.match(rb"\s*(<!doctype html|<html)", data[:1024], re.IGNORECASE) else "text"
        text = _decode(data, charset, kind == "html")
        if kind == "html":
            text = html_to_text(text, final)
        status = response.status_code
        head = f"{final} ({status}, {media_type or 'no type'}, {human_size(len(data))})"
        if truncated:
            head += f" [cut at {human_size(self.max_bytes)}: the rest was not fetched]"
        meta = {"status": status, "media_type": media_type, "bytes": len(data), "url": final}
        if status >= 400:
            return ToolResult.error(f"HTTP {status} {response.reason_phrase} from {final}\n\n{text}".rstrip(), **meta)
        return ToolResult(visible=f"{head}\n\n{text}", meta=meta)
