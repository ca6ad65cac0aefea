"""``diagnostics`` (P41): one file's diagnostics from its language server.

The first call for a language starts that language's server (``cox.actors.lsp.pool``), and a
server runs the project's build scripts and plugins, so that call is rated Exec and the
permission engine asks; once the server runs, calls are ReadOnly (``describe`` looks). The
answer is ``path:line:col: severity: message [source code]`` lines, most severe first, then a
summary; a deadline (``wait_ms``, capped by ``lsp.timeout_s``) returns what arrived with a note.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from cox.protocol.types import Risk, ToolCall, ToolResult

from . import catalog
from .base import ToolEnv
from .files import PathTool


class DiagnosticsTool(PathTool):
    spec = catalog.DIAGNOSTICS

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.EXEC

    def describe(self, call: ToolCall, env: ToolEnv) -> ToolCall:
        """Exec while this language's server is not running (the call starts it), else ReadOnly."""
        from cox.actors.lsp.servers import language_of

        described = super().describe(call, env)
        pool = env.services.lsp
        lang = language_of(_path(call.input))
        if pool is not None and lang is not None and pool.running(lang[0]) is not None:
            return replace(described, risk=Risk.READ_ONLY)
        return described

    def writes(self, call: ToolCall, env: ToolEnv) -> list[Any] | None:
        return []

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        from cox.actors.lsp import report
        from cox.actors.lsp.access import target, use
        from cox.actors.lsp.pool import LspUnavailable

        t = target(call.input, env, self.name)
        pool = env.services.lsp
        if pool is None:
            return ToolResult.error("diagnostics: language servers are not available here (no session runs "
                                    "them); run the project's own checker with bash instead")
        cap_s = pool.settings.timeout_s
        wait_ms = call.input.get("wait_ms")
        if wait_ms is not None and (not isinstance(wait_ms, int) or isinstance(wait_ms, bool) or wait_ms < 0):
            return ToolResult.error("diagnostics: wait_ms must be a whole number of milliseconds, 0 or more")
        wait_s = cap_s if wait_ms is None else min(wait_ms / 1000, cap_s)
        started = time.monotonic()

        def ask(server: Any) -> tuple[list[Any], bool]:
            undo = env.cancel.on_cancel(server.wake)  # an interrupt ends the wait now
            try:
                result: tuple[list[Any], bool] = server.diagnostics(t.path, t.language_id, started + wait_s,
                                                                    lambda: env.cancel.cancelled)
            finally:
                undo()
            return result

        try:
            answer = use(pool, t.language, ask, start=True)
        except LspUnavailable as exc:
            return ToolResult.error(f"diagnostics: {exc}")
        except Exception as exc:
            return ToolResult.error(f"diagnostics: the {t.language} language server failed: {exc}; run the "
                                    "project's own checker with bash instead")
        assert answer is not None
        found, complete = answer
        text = t.path.read_text(encoding="utf-8", errors="replace")
        rows = report.lines(found, t.shown, text)
        out = [*rows, f"{t.shown}: {report.summary(found)}"]
        if not complete:
            out.append(f"(the {t.language} server had not finished within {wait_s * 1000:.0f} ms: this is what "
                       "had arrived; call again, with a larger wait_ms, to wait longer)")
        return ToolResult(visible="\n".join(out), meta={"diagnostics": len(found), "complete": complete})


def _path(call_input: dict[str, Any]) -> Any:
    from pathlib import Path

    raw = call_input.get("path")
    return Path(raw if isinstance(raw, str) else "")
