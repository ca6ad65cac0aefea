"""Find the line each key of a TOML document is written on.

``tomllib`` returns values without positions, yet every message about a config file must name
the line. This is a small TOML *scanner* (not a parser: the document has already been parsed by
tomllib, so it may assume the text is valid) that records, for each key path, the 1-based line of
its first appearance:

- ``[a.b]`` / ``[[a.b]]`` headers record ``("a", "b")`` at the header's line;
- ``k = v`` under a header records ``header + ("k",)``; dotted keys ``x.y = 1`` record
  ``header + ("x", "y")`` and the intermediate ``header + ("x",)``;
- inline tables ``t = { a = 1 }`` record ``("t", "a")`` on their own line;
- array items record ``path + (index,)`` at the line the item starts on, so a rule in a list that
  spans lines is reported at its own line.

Limits (documented in docs/config.md): an array of tables ``[[x]]`` maps every repetition to its
first header; quoted keys are unquoted but escape sequences inside *keys* are not decoded. If the
scanner meets anything it does not expect it stops and returns what it found; callers fall back to
the nearest enclosing key's line, then to the file alone.
"""

from __future__ import annotations

from bisect import bisect_right

KeyPath = tuple[str | int, ...]

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_SCALAR_END = frozenset(",]}\n\r#")


class _Stop(Exception):
    """The scanner met something it does not understand; keep what was found so far."""


class _Scanner:
    def __init__(self, text: str) -> None:
        self.s = text
        self.n = len(text)
        self.i = 0
        self._newlines = [k for k, ch in enumerate(text) if ch == "\n"]
        self.lines: dict[KeyPath, int] = {}

    def line_at(self, pos: int) -> int:
        return bisect_right(self._newlines, pos - 1) + 1

    def record(self, path: KeyPath, pos: int) -> None:
        self.lines.setdefault(path, self.line_at(pos))

    def peek(self, offset: int = 0) -> str:
        k = self.i + offset
        return self.s[k] if k < self.n else ""

    def skip_inline_ws(self) -> None:
        while self.i < self.n and self.s[self.i] in " \t":
            self.i += 1

    def skip_comment(self) -> None:
        if self.peek() == "#":
            while self.i < self.n and self.s[self.i] != "\n":
                self.i += 1

    def skip_ws_newlines_comments(self) -> None:
        while self.i < self.n:
            ch = self.s[self.i]
            if ch in " \t\r\n":
                self.i += 1
            elif ch == "#":
                self.skip_comment()
            else:
                return

    def expect(self, text: str) -> None:
        if not self.s.startswith(text, self.i):
            raise _Stop
        self.i += len(text)

    # -- keys ---------------------------------------------------------------------------------

    def key(self) -> tuple[str, ...]:
        parts: list[str] = []
        while True:
            self.skip_inline_ws()
            ch = self.peek()
            if ch == '"':
                parts.append(self.basic_string())
            elif ch == "'":
                parts.append(self.literal_string())
            else:
                start = self.i
                while self.i < self.n and self.s[self.i] in _BARE:
                    self.i += 1
                if self.i == start:
                    raise _Stop
                parts.append(self.s[start : self.i])
            self.skip_inline_ws()
            if self.peek() != ".":
                return tuple(parts)
            self.i += 1

    # -- strings ------------------------------------------------------------------------------

    def basic_string(self) -> str:
        self.expect('"')
        start = self.i
        while self.i < self.n:
            ch = self.s[self.i]
            if ch == "\\":
                self.i += 2
            elif ch == '"':
                self.i += 1
                return self.s[start : self.i - 1]
            elif ch == "\n":
                raise _Stop
            else:
                self.i += 1
        raise _Stop

    def literal_string(self) -> str:
        self.expect("'")
        end = self.s.find("'", self.i)
        if end < 0:
            raise _Stop
        text = self.s[self.i : end]
        self.i = end + 1
        return text

    def multiline(self, quote: str) -> None:
        self.expect(quote * 3)
        while self.i < self.n:
            if quote == '"' and self.s[self.i] == "\\":
                self.i += 2
                continue
            if self.s.startswith(quote * 3, self.i):
                self.i += 3
                # up to two more quotes may close the string ("""a"""" is a" + """)
                for _ in range(2):
                    if self.peek() == quote:
                        self.i += 1
                return
            self.i += 1
        raise _Stop

    # -- values -------------------------------------------------------------------------------

    def value(self, path: KeyPath) -> None:
        ch = self.peek()
        if self.s.startswith('"""', self.i):
            self.multiline('"')
        elif self.s.startswith("'''", self.i):
            self.multiline("'")
        elif ch == '"':
            self.basic_string()
        elif ch == "'":
            self.literal_string()
        elif ch == "[":
            self.array(path)
        elif ch == "{":
            self.inline_table(path)
        else:
            start = self.i
            while self.i < self.n and self.s[self.i] not in _SCALAR_END:
                self.i += 1
            if self.i == start:
                raise _Stop

    def array(self, path: KeyPath) -> None:
        self.expect("[")
        index = 0
        while True:
            self.skip_ws_newlines_comments()
            if self.peek() == "]":
                self.i += 1
                return
            if self.i >= self.n:
                raise _Stop
            item: KeyPath = (*path, index)
            self.record(item, self.i)
            self.value(item)
            index += 1
            self.skip_ws_newlines_comments()
            if self.peek() == ",":
                self.i += 1

    def inline_table(self, path: KeyPath) -> None:
        self.expect("{")
        while True:
            self.skip_ws_newlines_comments()
            if self.peek() == "}":
                self.i += 1
                return
            if self.i >= self.n:
                raise _Stop
            self.key_value(path)
            self.skip_ws_newlines_comments()
            if self.peek() == ",":
                self.i += 1

    def key_value(self, table: KeyPath) -> None:
        start = self.i
        parts = self.key()
        for depth in range(1, len(parts) + 1):
            self.record((*table, *parts[:depth]), start)
        self.skip_inline_ws()
        self.expect("=")
        self.skip_inline_ws()
        self.value((*table, *parts))

    # -- document -----------------------------------------------------------------------------

    def document(self) -> None:
        table: KeyPath = ()
        while True:
            self.skip_ws_newlines_comments()
            if self.i >= self.n:
                return
            if self.peek() == "[":
                start = self.i
                double = self.peek(1) == "["
                self.i += 2 if double else 1
                parts = self.key()
                self.expect("]]" if double else "]")
                table = parts
                for depth in range(1, len(parts) + 1):
                    self.record(parts[:depth], start)
            else:
                self.key_value(table)
            self.skip_inline_ws()
            self.skip_comment()


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map each key path of a (valid) TOML document to the 1-based line it first appears on."""
    scanner = _Scanner(text)
    try:
        scanner.document()
    except (_Stop, IndexError):
        pass
    return scanner.lines


def line_of(lines: dict[KeyPath, int], path: KeyPath) -> int | None:
    """The line of ``path``, else of its nearest enclosing key that was found, else ``None``."""
    for depth in range(len(path), 0, -1):
        line = lines.get(path[:depth])
        if line is not None:
            return line
    return None
