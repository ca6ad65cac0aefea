"""``rename_symbol`` (deferred, Write, exclusive): rename a symbol everywhere through the running
language server's ``prepareRename`` and ``rename``.

It never starts a server and has no grep fallback (a rename by name match rewrites unrelated
symbols): with no server running it refuses. Before asking, cox re-syncs every file it opened
whose disk text changed, so the server edits the text on disk. The server's WorkspaceEdit is
judged whole (``cox.actors.lsp.edits.plan``), then every file is handed to the session
(``ToolServices.approve_writes``): a deny on any one refuses the rename; an ask becomes one
approval for the set. A file that changed on disk while the approval waited refuses it too.
Only then are the files replaced, all or nothing. Where no session can judge the files
(``cox mcp serve``) the rename is refused. ``writes`` says it cannot name its files beforehand,
so the loop snapshots the workspace around the call (the pre-images a rewind needs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cox.policy.sanitize import sanitize
from cox.protocol.types import Risk, ToolCall, ToolResult

from . import catalog
from .base import ToolEnv, ToolInputError
from .files import PathTool, display
from .navigate import position

_IDENT_OK = 200


class RenameSymbolTool(PathTool):
    spec = catalog.RENAME_SYMBOL

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.WRITE

    def writes(self, call: ToolCall, env: ToolEnv) -> list[Path] | None:
        return None  # known only once the server answers: snapshot around the call

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        from cox.actors.lsp import after_edit
        from cox.actors.lsp.access import target, use
        from cox.actors.lsp.edits import EditRefused, apply, plan

        line, col = position(call.input)
        new_name = call.input.get("new_name")
        if not isinstance(new_name, str) or not new_name.strip() or len(new_name) > _IDENT_OK or "\n" in new_name:
            raise ToolInputError("'new_name' must be the symbol's new name: one line, not empty")
        approve = env.services.approve_writes
        if approve is None:
            return ToolResult.denied("rename_symbol: refused here: no session can judge the files a rename "
                                     "writes (cox mcp serve); rename with edit or apply_patch instead")
        t = target(call.input, env, self.name)
        pool = env.services.lsp
        if pool is None:
            return ToolResult.error("rename_symbol: no language server runs here; rename with edit instead")
        timeout = pool.settings.timeout_s

        def ask(server: Any) -> tuple[Any, Any]:
            server.resync_changed(t.language_id)
            uri, _, _ = server.sync(t.path, t.language_id)
            pos = server.position(uri, line, col)
            where = {"textDocument": {"uri": uri}, "position": pos}
            if _prepares(server):
                prepared = server.request("textDocument/prepareRename", where, timeout)
                if prepared is None:
                    raise EditRefused(f"the server cannot rename anything at {t.shown}:{line}:{col}")
            edit = server.request("textDocument/rename", {**where, "newName": new_name}, timeout)
            return server, edit

        try:
            answer = use(pool, t.language, ask, start=False)
        except EditRefused as exc:
            return ToolResult.error(sanitize(f"rename_symbol: {exc}; nothing was changed"))
        except Exception as exc:
            return ToolResult.error(f"rename_symbol: the {t.language} server failed: {str(exc)[:300]}; "
                                    "nothing was changed")
        if answer is None:
            return ToolResult.error(f"rename_symbol: no {t.language} language server runs in this session; run "
                                    "diagnostics on the file first to start it (a rename is never done by name "
                                    "matching)")
        server, edit = answer
        if edit is None:
            return ToolResult.error(f"rename_symbol: the server found nothing to rename at {t.shown}:{line}:{col}")

        def writable(p: Path) -> Path:
            from cox.policy.paths import confine

            from .protected import check_writable

            confined = confine(p, env.roots[:1] + list(env.services.writable_roots), cwd=env.cwd, home=env.home)
            check_writable(confined, env.roots, env.services.writable_roots)
            return confined

        try:
            changes = plan(edit, synced=server.synced_version, writable=writable)
        except EditRefused as exc:
            return ToolResult.error(sanitize(f"rename_symbol: the server's edit was refused whole: {exc}; "
                                             "nothing was changed"))
        if not changes:
            return ToolResult.error("rename_symbol: the server's edit changes nothing; nothing was changed")
        refused = approve(call.id, [c.path for c in changes], env.cancel)
        if refused is not None:
            return ToolResult.denied(f"rename_symbol: refused: {refused}; nothing was changed")
        from cox.atomic import read_file

        for c in changes:
            try:
                same = read_file(c.path) == c.before
            except OSError:
                same = False
            if not same:
                return ToolResult.error(f"rename_symbol: {display(c.path, env)} changed on disk while the rename "
                                        "waited; nothing was changed (try again)")
        noted = after_edit.before(env, [c.path for c in changes])
        try:
            apply(changes)
        except OSError as exc:
            return ToolResult.error(f"rename_symbol: could not write the files ({exc}); the ones already replaced "
                                    "were put back")
        shown = [display(c.path, env) for c in changes]
        lines = [f"renamed to {new_name} in {len(changes)} file{'s' if len(changes) != 1 else ''}:"]
        lines += [f"  {s} ({c.edits} edit{'s' if c.edits != 1 else ''})" for s, c in zip(shown, changes, strict=True)]
        result = ToolResult(visible="\n".join(lines), meta={"files": [str(c.path) for c in changes],
                                                            "changes_files": True})
        return after_edit.append(result, env, noted)


def _prepares(server: Any) -> bool:
    provider = server.capabilities.get("renameProvider")
    return isinstance(provider, dict) and bool(provider.get("prepareProvider"))
