"""The ``apply_patch`` tool: Codex's patch format, checked whole, applied all-or-nothing.

Every path passes ``policy.paths.confine`` and ``protected.check_writable`` (no ``.git``, ``.cox``
or ``COX_HOME`` file is touched; relative paths from the session's cwd, or from the
``workdir`` a rerouted ``cd DIR && apply_patch <<'EOF'`` shell line named). The model sees
Codex's summary plus a unified diff kept short; the full diff goes to ``meta["diff"]`` for the
surfaces. A bad patch is an error result naming the file, the hunk and what the file really
holds, and nothing was written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.policy.paths import PathEscape, confine
from cox.protocol.types import Risk, ToolCall, ToolResult

from . import catalog
from .base import BaseTool, ToolEnv, ToolInputError, path_denied
from .protected import check_writable

if TYPE_CHECKING:
    from .patch import Resolve

# The patch package is imported by the methods that need it: listing the tool for the model
# (start-up) does not pay for the parser.

__all__ = ["ApplyPatchTool", "resolver"]

VISIBLE_DIFF_LINES = 120
META_DIFF_CHARS = 64 * 1024

def resolver(env: ToolEnv, workdir: str | None = None) -> Resolve:
    """Paths of the patch → confined real paths, relative to ``workdir`` (itself confined) or cwd."""
    base = confine(workdir, env.roots, cwd=env.cwd, home=env.home) if workdir else env.cwd

    def resolve(raw: str) -> Path:
        path = confine(raw, env.roots, cwd=base, home=env.home)
        check_writable(path, env.roots, env.services.writable_roots)  # every path of a patch is written (or removed)
        rule = path_denied(env, os.path.join(base, raw), path)
        if rule is not None:  # a failed hunk shows the file's lines: a patch reads what it changes
            raise PathEscape(f"{raw}: a Read deny rule ({rule.text}, from {rule.origin}) covers it, so "
                             "apply_patch does not read or change it")
        return path

    return resolve


def _text(call_input: dict[str, Any]) -> str:
    for key in ("patch", "input"):  # Codex models send ``input``
        value = call_input.get(key)
        if isinstance(value, str) and value.strip():
            return value
    raise ToolInputError("apply_patch: 'patch' must be the patch text, from '*** Begin Patch' to '*** End Patch'")


def _workdir(call_input: dict[str, Any]) -> str | None:
    value = call_input.get("workdir")
    return value if isinstance(value, str) and value else None


class ApplyPatchTool(BaseTool):
    spec = catalog.APPLY_PATCH

    def check(self, call_input: dict[str, Any]) -> None:
        _text(call_input)

    def risk(self, call_input: dict[str, Any]) -> Risk:
        from .patch import PatchParseError, parse_patch

        try:
            return Risk.DESTRUCTIVE if parse_patch(_text(call_input)).deletes else Risk.WRITE
        except (ToolInputError, PatchParseError):
            return Risk.WRITE

    def _paths(self, call_input: dict[str, Any], env: ToolEnv) -> list[str]:
        from .patch import PatchParseError, parse_patch

        """Every path the patch names, confined where possible (a path that cannot be confined is
        kept as written: the call will refuse it, and the permission engine sees what was asked)."""
        try:
            raw_paths = parse_patch(_text(call_input)).paths()
        except (ToolInputError, PatchParseError):
            return []
        try:
            resolve = resolver(env, _workdir(call_input))
        except ValueError:
            return raw_paths
        out: list[str] = []
        for raw in raw_paths:
            try:
                shown = str(resolve(raw))
            except ValueError:
                shown = raw
            if shown not in out:
                out.append(shown)
        return out

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return " ".join(self._paths(call_input, env))

    def writes(self, call: ToolCall, env: ToolEnv) -> list[Path] | None:
        from .patch import PatchError, parse_patch

        """Every file the patch adds, updates, deletes or moves (source and destination), so
        checkpoints archive each pre-image. A patch that cannot parse writes nothing."""
        try:
            raw_paths = parse_patch(_text(call.input)).paths()
            resolve = resolver(env, _workdir(call.input))
            out: list[Path] = []
            for raw in raw_paths:
                path = resolve(raw)
                if path not in out:
                    out.append(path)
            return out
        except (ToolInputError, PatchError, ValueError):
            return []

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        from cox.actors.lsp.after_edit import run_with

        return run_with(self, call, env, lambda: self._call(call, env))  # lsp.after_edit

    def _call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        from .patch import PatchError, PatchParseError, apply_patch

        text = _text(call.input)
        if env.cancel.cancelled:
            return ToolResult.aborted()
        try:
            resolve = resolver(env, _workdir(call.input))
            outcome = apply_patch(text, resolve)
        except PatchParseError as exc:
            return ToolResult.error(f"{exc}\nNo file was changed.", stage="parse")
        except PatchError as exc:
            return ToolResult.error(f"{exc}\nNo file was changed; fix the patch and send all of it again.",
                                    stage="apply")
        except ValueError as exc:  # the workdir itself escapes
            return ToolResult.error(f"{exc}\nNo file was changed.", stage="apply")
        plan = outcome.plan
        visible = outcome.summary
        if plan.fuzz:
            visible += "Note: " + "; ".join(plan.fuzz) + ".\n"
        diff = outcome.diff(VISIBLE_DIFF_LINES)
        if diff:
            visible += "\n" + diff
        full = outcome.diff()
        meta: dict[str, Any] = {
            "added": [c.shown for c in plan.changes if c.op == "add"],
            "modified": [c.shown for c in plan.changes if c.op == "update"],
            "deleted": [c.path for c in plan.changes if c.op == "delete"],
            "moved": [[c.path, c.move_to] for c in plan.changes if c.move_to is not None],
            "files": [str(p) for p in dict.fromkeys(plan.named)],
            "diff": full if len(full) <= META_DIFF_CHARS else full[:META_DIFF_CHARS] + "\n… diff cut\n",
        }
        if plan.fuzz:
            meta["fuzz"] = plan.fuzz
        return ToolResult(visible=visible.rstrip("\n"), meta=meta)
