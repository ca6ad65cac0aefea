"""HTML to readable text for ``web_fetch`` (see ``web.py``'s docstring for what is kept).

A module of its own so that ``html.parser`` (~2.5 ms) is imported when a page is fetched, not at
every start-up when the tool registry loads ``web.py``."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

_DROP = frozenset({"script", "style", "nav", "noscript", "template", "svg", "iframe", "head", "object", "canvas"})
_BLOCK = frozenset({"p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote", "pre",
                    "table", "tr", "ul", "ol", "dl", "dt", "dd", "figure", "figcaption", "form", "fieldset",
                    "details", "summary", "address", "hr", "body", "html", "caption"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "source", "area", "base", "col", "embed",
                   "param", "track", "wbr"})


class _Text(HTMLParser):
    """Readable text of an HTML page; see the module docstring for what is kept."""

    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.out: list[str] = []
        self.drop = 0  # depth inside dropped elements
        self.pre = 0
        self.lists: list[str] = []
        self.links: list[tuple[str | None, int]] = []  # href, index in out where the link text starts
        self.title: list[str] = []
        self.in_title = False
        self.cells = 0

    # output helpers

    def _tail(self) -> str:
        return "".join(self.out[-3:])

    def _break(self, blank: bool = True) -> None:
        tail = self._tail()
        want = "\n\n" if blank else "\n"
        if not self.out or tail.endswith(want):
            return
        self.out.append("\n" if tail.endswith("\n") else want)

    def _emit(self, text: str) -> None:
        if self.pre:
            self.out.append(text)
            return
        text = re.sub(r"\s+", " ", text)
        tail = self._tail()
        if not tail or tail.endswith(("\n", " ")):
            text = text.lstrip(" ")
        if text:
            self.out.append(text)

    # parser callbacks

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        if tag in _DROP:
            if tag not in _VOID:
                self.drop += 1
            return
        if self.drop:
            return
        if tag in _HEADINGS:
            self._break()
            self.out.append("#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            self._break(blank=False)
            self.out.append("  " * max(0, len(self.lists) - 1) + "- ")
        elif tag in ("ul", "ol"):
            self._break(blank=not self.lists)
            self.lists.append(tag)
        elif tag == "br":
            self.out.append("\n")
        elif tag == "pre":
            self._break()
            self.pre += 1
        elif tag == "tr":
            self._break(blank=False)
            self.cells = 0
        elif tag in ("td", "th"):
            if self.cells:
                self.out.append(" | ")
            self.cells += 1
        elif tag == "a":
            href = dict(attrs).get("href")
            self.links.append((href, len(self.out)))
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self._emit(f"[image: {alt}]")
        elif tag in _BLOCK:
            self._break()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in _DROP:
            if tag not in _VOID:
                self.drop = max(0, self.drop - 1)
            return
        if self.drop:
            return
        if tag in _HEADINGS or tag in _BLOCK:
            if tag in ("ul", "ol") and self.lists:
                self.lists.pop()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)
            self._break(blank=tag != "tr")
        elif tag == "li":
            self._break(blank=False)
        elif tag == "a" and self.links:
            href, start = self.links.pop()
            self._link(href, "".join(self.out[start:]).strip())

    def _link(self, href: str | None, text: str) -> None:
        if not href or href.startswith(("#", "javascript:", "mailto:")) or not text:
            return
        url = urljoin(self.base_url, href)
        if url.rstrip("/") != text.rstrip("/"):
            self.out.append(f" ({url})")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if not self.drop:
            self._emit(data)

    def text(self) -> str:
        body = "".join(self.out)
        body = "\n".join(line.rstrip() for line in body.split("\n"))
        body = re.sub(r"\n{3,}", "\n\n", body).strip()
        title = " ".join("".join(self.title).split())
        if title and not body.startswith("# "):
            body = f"title: {title}\n\n{body}"
        return body


def html_to_text(html: str, base_url: str = "") -> str:
    """Readable text of an HTML page (links made absolute against ``base_url``)."""
    parser = _Text(base_url)
    parser.feed(html)
    parser.close()
    return parser.text()
