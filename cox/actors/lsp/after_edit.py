"""``lsp.after_edit``: an edit's result ends with the diagnostics the change introduced.

Only when the file's server already runs (an edit never starts one): :func:`before` notes the
server's last report for each file the call is about to write, and :func:`append` — after the
write — syncs the new text, waits at most ``lsp.after_edit_ms`` for a settled report, and lists
the diagnostics whose (start line, code, message) the earlier report did not have: errors first,
at most ten lines, sanitised. A dead or slow server, or one whose report had not settled by the
deadline, adds nothing: the edit's own result is never delayed past the bound or made to fail.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from cox.protocol.types import ToolResult

__all__ = ["MAX_LINES", "Before", "append", "before", "run_with"]

MAX_LINES = 10

Before = dict[Path, tuple[Any, str, "list[Any] | None"]]
"""file → (its running server, languageId, that server's last report for it or None)."""


def before(env: Any, paths: list[Path]) -> Before | None:
    """What the running servers last said about ``paths`` (None: after_edit is off, or no server)."""
    pool = getattr(env.services, "lsp", None)
    if pool is None or not pool.settings.after_edit:
        return None
    from .server import uri_of
    from .servers import language_of

    noted: Before = {}
    for path in paths:
        lang = language_of(path)
        server = pool.running(lang[0]) if lang is not None else None
        if server is not None and lang is not None:
            noted[path] = (server, lang[1], server.last_report(uri_of(path)))
    return noted or None


def append(result: ToolResult, env: Any, noted: Before | None, *, shown: dict[Path, str] | None = None) -> ToolResult:
    """``result`` with the introduced diagnostics at its end (unchanged if there are none)."""
    if noted is None or not result.ok:
        return result
    try:
        rows = _introduced(env, noted, shown or {})
    except Exception:
        return result  # a broken server adds nothing
    if not rows:
        return result
    return replace(result, visible=f"{result.visible}\n\nnew diagnostics from this change:\n" + "\n".join(rows))


def _introduced(env: Any, noted: Before, shown: dict[Path, str]) -> list[str]:
    from cox.actors.tools.files import display

    from . import report

    deadline = time.monotonic() + env.services.lsp.settings.after_edit_ms / 1000
    found: list[tuple[int, str]] = []
    for path, (server, language_id, earlier) in noted.items():
        if not server.alive() or not path.is_file():
            continue
        uri, version, synced_at = server.sync(path, language_id)
        if server.pulls():
            diagnostics, complete = server.diagnostics(path, language_id, deadline)
        else:
            diagnostics, complete = server.pushed(uri, version, synced_at, deadline)
        if not complete:
            continue
        old = {report.key(d) for d in earlier or () if isinstance(d, dict)}
        new = [d for d in report.ordered(diagnostics) if report.key(d) not in old]
        text = path.read_text(encoding="utf-8", errors="replace").split("\n")
        where = shown.get(path) or display(path, env)
        for d in new:
            raw = d.get("severity")
            sev = raw if isinstance(raw, int) else 1
            found.append((sev, report.line_of(d, where, text)))
    found.sort(key=lambda x: x[0])
    rows = [row for _, row in found[:MAX_LINES]]
    if len(found) > MAX_LINES:
        rows.append(f"… {len(found) - MAX_LINES} more (diagnostics lists them all)")
    return rows


def run_with(tool: Any, call: Any, env: Any, run: Any) -> ToolResult:
    """``run()`` (a writing tool's own call), with after_edit around it when it is on: the one
    hook edit, write and apply_patch share."""
    pool = getattr(env.services, "lsp", None)
    if pool is None or not pool.settings.after_edit:
        return run()  # type: ignore[no-any-return]
    try:
        paths = tool.writes(call, env) or []
    except Exception:
        paths = []
    noted = before(env, paths)
    return append(run(), env, noted)
