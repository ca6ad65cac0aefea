"""``definition`` and ``references`` (deferred, ReadOnly): where a symbol is declared and used.

Both take ``path``, a 1-based ``line`` and a 1-based ``col`` counted in characters, and answer
``path:line:col: source line`` rows, sorted and deduplicated, the first :data:`MAX_ROWS` listed
and the whole list archived (``cox expand ID``). They ask the server that already runs for the
file's language (``diagnostics`` starts it; these never do). With none running, or one that
fails, they grep the identifier under the position in the workspace's files of that language
(for ``definition`` only the lines that declare it) and say so, since a name match also finds
unrelated symbols. A path the server names outside the workspace roots is printed as given and
never opened, nor is a file a Read deny rule covers; every row passes ``sanitize``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from cox import lazyre
from cox.policy.sanitize import sanitize
from cox.protocol.types import Risk, ToolCall, ToolResult

from . import catalog
from .base import BaseTool, ToolEnv, ToolInputError, read_guard
from .files import display

MAX_ROWS = 100
_IDENT = lazyre.compile(r"[A-Za-z_$][\w$]*")

_DECLARES: dict[str, str] = {
    "python": r"^\s*(?:async\s+def|def|class)\s+{n}\b|^\s*{n}\s*(?::[^=\n]*)?=(?!=)",
    "typescript": r"\b(?:function\*?|class|interface|type|enum|const|let|var|namespace)\s+{n}\b|^\s*(?:export\s+)?"
                  r"(?:async\s+)?{n}\s*\(",
    "rust": r"\b(?:fn|struct|enum|trait|type|const|static|mod|union|macro_rules!)\s+{n}\b|\blet\s+(?:mut\s+)?{n}\b",
    "go": r"\bfunc\s+(?:\([^)]*\)\s*)?{n}\b|\b(?:type|var|const)\s+{n}\b|\b{n}\s*:=",
}
_SUFFIXES = {"python": (".py", ".pyi"), "typescript": (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"),
             "rust": (".rs",), "go": (".go",)}


def position(call_input: dict[str, Any]) -> tuple[int, int]:
    line, col = call_input.get("line"), call_input.get("col")
    for name, value in (("line", line), ("col", col)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ToolInputError(f"'{name}' must be a whole number, 1 or more (1-based)")
    assert isinstance(line, int) and isinstance(col, int)
    return line, col


def word_at(text: str, line: int, col: int) -> str | None:
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    for m in _IDENT.finditer(lines[line - 1]):
        if m.start() <= col - 1 < m.end() or (m.end() == col - 1):
            return m.group()
    return None


class _Rows:
    """Rows for locations: sorted, deduplicated, opened only inside the roots and not denied."""

    def __init__(self, env: ToolEnv) -> None:
        self.env = env
        self.roots = [os.path.realpath(r) for r in env.roots]
        self.guard = read_guard(env)
        self.texts: dict[str, list[str] | None] = {}
        self.rows: set[tuple[str, int, int, str]] = set()

    def _lines(self, path: str) -> list[str] | None:
        if path not in self.texts:
            real = os.path.realpath(path)
            inside = any(real == r or real.startswith(r.rstrip("/") + "/") for r in self.roots)
            ok = inside and self.guard.denied(path) is None and self.guard.denied(real) is None
            try:
                self.texts[path] = Path(real).read_text(encoding="utf-8", errors="replace").split("\n") if ok else None
            except OSError:
                self.texts[path] = None
        return self.texts[path]

    def add_location(self, uri: str, start: dict[str, Any]) -> None:
        from cox.actors.lsp.server import from_utf16, path_of

        raw_line, raw_units = start.get("line"), start.get("character")
        line = raw_line if isinstance(raw_line, int) else 0
        units = raw_units if isinstance(raw_units, int) else 0
        path = path_of(uri)
        if path is None:  # not a file: printed as given, never opened
            self.rows.add((uri, line + 1, units + 1, "(not a local file)"))
            return
        lines = self._lines(str(path))
        if lines is None:
            self.rows.add((str(path), line + 1, units + 1, "(outside the workspace or denied: not opened)"))
            return
        src = lines[line] if 0 <= line < len(lines) else ""
        self.rows.add((display(path, self.env), line + 1, from_utf16(src, units) + 1, src.strip()))

    def add(self, shown: str, line: int, col: int, src: str) -> None:
        self.rows.add((shown, line, col, src.strip()))

    def render(self) -> tuple[list[str], int]:
        ordered = sorted(self.rows)
        return [sanitize(f"{p}:{ln}:{c}: {s}"[:400]) for p, ln, c, s in ordered], len(ordered)


def _grep(env: ToolEnv, language: str, name: str, declares: bool, rows: _Rows) -> None:
    from .search import Readable, list_files

    pattern = re.compile(_DECLARES[language].format(n=re.escape(name)) if declares else rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    readable = Readable(env)
    for root in env.roots:
        top = Path(os.path.realpath(root))
        files = [f for f in list_files(top, top, env.cancel) if f.endswith(_SUFFIXES[language])]
        for rel in readable.filter(top, files):
            if env.cancel.cancelled:
                return
            path = top / rel
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if name not in text:
                continue
            for i, src in enumerate(text.split("\n"), start=1):
                m = pattern.search(src)
                if m is None:
                    continue
                at = src.find(name, m.start())
                rows.add(display(path, env), i, (at if at >= 0 else m.start()) + 1, src)


class _NavigateTool(BaseTool):
    method = ""

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        from .files import resolve

        try:
            return str(resolve(call_input, env))
        except Exception:
            return str(call_input.get("path", ""))

    def params(self, uri: str, pos: dict[str, Any]) -> dict[str, Any]:
        return {"textDocument": {"uri": uri}, "position": pos}

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        from cox.actors.lsp.access import target, use

        t = target(call.input, env, self.name)
        line, col = position(call.input)
        text = t.path.read_text(encoding="utf-8", errors="replace")
        rows = _Rows(env)
        note = ""
        pool = env.services.lsp
        answer: Any = None
        failed = ""
        if pool is not None:
            timeout = pool.settings.timeout_s

            def ask(server: Any) -> Any:
                uri, _, _ = server.sync(t.path, t.language_id)
                return (server.request(self.method, self.params(uri, server.position(uri, line, col)), timeout),)

            try:
                boxed = use(pool, t.language, ask, start=False)
                if boxed is None:
                    failed = f"no {t.language} server runs in this session"
                else:
                    answer = boxed[0] if isinstance(boxed[0], (list, dict)) else []
            except Exception as exc:
                failed = f"the server failed: {str(exc)[:200]}"
        else:
            failed = "no server runs here"
        if not failed:
            for loc in answer if isinstance(answer, list) else [answer]:
                if not isinstance(loc, dict):
                    continue
                uri = loc.get("uri", loc.get("targetUri"))
                rng = loc.get("range", loc.get("targetSelectionRange")) or {}
                if isinstance(uri, str) and isinstance(rng, dict):
                    rows.add_location(uri, rng.get("start") or {})
        else:
            name = word_at(text, line, col)
            if name is None:
                return ToolResult.error(f"{self.name}: {failed}, and there is no identifier at "
                                        f"{t.shown}:{line}:{col} to search for")
            _grep(env, t.language, name, self.name == "definition", rows)
            note = (f"(no server: {failed}; these are name matches of {name!r}, which can include unrelated "
                    f"symbols; run diagnostics on the file first to start its server)")
        listed, total = rows.render()
        if not listed:
            body = f"{self.name}: nothing found for {t.shown}:{line}:{col}"
        else:
            body = "\n".join(listed[:MAX_ROWS])
        if total > MAX_ROWS:
            archive = env.services.archive
            whole = "\n".join(listed)
            try:
                ident = archive(whole.encode()) if archive is not None else None
            except Exception:
                ident = None
            more = f"… {total - MAX_ROWS} more rows" + (f" (cox expand {ident})" if ident else " (not kept: no archive)")
            result = ToolResult(visible=f"{body}\n{more}" + (f"\n{note}" if note else ""), archive_id=ident,
                                total_bytes=len(whole.encode()))
        else:
            result = ToolResult(visible=body + (f"\n{note}" if note else ""))
        return result


class DefinitionTool(_NavigateTool):
    spec = catalog.DEFINITION
    method = "textDocument/definition"


class ReferencesTool(_NavigateTool):
    spec = catalog.REFERENCES
    method = "textDocument/references"

    def params(self, uri: str, pos: dict[str, Any]) -> dict[str, Any]:
        return {"textDocument": {"uri": uri}, "position": pos, "context": {"includeDeclaration": True}}
