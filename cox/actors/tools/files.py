"""First forms of the file tools: ``read`` and ``write``. Every path passes ``policy.paths.confine``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cox.atomic import LinkInTheWay, why, write_atomic
from cox.policy.paths import confine
from cox.protocol.types import Risk, ToolCall, ToolResult

from . import catalog
from .base import BaseTool, ToolEnv, ToolInputError, path_denied, read_denied
from .images import read_image
from .protected import check_writable

BINARY_SNIFF = 8192


def resolve(call_input: dict[str, Any], env: ToolEnv, key: str = "path") -> Path:
    raw = call_input.get(key)
    if not isinstance(raw, str) or not raw:
        raise ToolInputError(f"'{key}' must be a non-empty string")
    return confine(raw, env.roots, cwd=env.cwd, home=env.home)


def display(path: Path, env: ToolEnv) -> str:
    try:
        return str(path.relative_to(env.cwd))
    except ValueError:
        return str(path)


class PathTool(BaseTool):
    """A tool about one file named by its ``path`` input: the confined path is its subject, and
    (unless it only reads) the file a checkpoint must save first."""

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        try:
            return str(resolve(call_input, env))
        except Exception:
            return str(call_input.get("path", ""))

    def writes(self, call: ToolCall, env: ToolEnv) -> list[Path] | None:
        if self.risk(call.input) is Risk.READ_ONLY:
            return []
        path = resolve(call.input, env)
        try:
            check_writable(path, env.roots, env.services.writable_roots)
        except ToolInputError:
            return []  # the call refuses it: there is nothing to save first
        return [path]


class ReadTool(PathTool):
    spec = catalog.READ

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        path = resolve(call.input, env)
        rule = path_denied(env, str(call.input["path"]), path)
        if rule is not None:  # the engine denies it first; this holds wherever the tool runs
            return read_denied(display(path, env), rule)
        if path.is_dir():
            return ToolResult.error(f"{display(path, env)} is a folder, not a file")
        if not path.exists():
            return ToolResult.error(f"{display(path, env)} does not exist")
        image = read_image(path)
        if image is not None:
            return image  # offset and limit do not apply to images
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data[:BINARY_SNIFF]:
            return ToolResult.error(f"{display(path, env)} is a binary file ({len(data)} bytes); not shown as text")
        return numbered(data.decode("utf-8", errors="replace"), call.input)


def numbered(text: str, call_input: dict[str, Any]) -> ToolResult:
    """``read``'s answer for a file's text: the lines ``offset``/``limit`` choose, numbered
    (also what ``cox acp`` answers with the text of the editor's buffer)."""
    lines = text.splitlines()
    offset = int(call_input.get("offset") or 1)
    limit = int(call_input.get("limit") or 2000)
    chosen = lines[offset - 1 : offset - 1 + limit]
    width = len(str(offset + len(chosen)))
    body = "\n".join(f"{n:>{width}}\t{line}" for n, line in enumerate(chosen, start=offset))
    if not lines:
        body = "(empty file)"
    elif offset - 1 + limit < len(lines):
        body += f"\n… {len(lines) - (offset - 1 + limit)} more lines (use offset={offset + limit})"
    return ToolResult(visible=body, meta={"lines": len(chosen), "total_lines": len(lines)})


class WriteTool(PathTool):
    spec = catalog.WRITE

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.WRITE

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        from cox.actors.lsp.after_edit import run_with

        return run_with(self, call, env, lambda: self._call(call, env))  # lsp.after_edit

    def _call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        path = resolve(call.input, env)
        check_writable(path, env.roots, env.services.writable_roots)
        content = call.input.get("content")
        if not isinstance(content, str):
            raise ToolInputError("'content' must be a string")
        data = content.encode("utf-8")
        if path.is_dir():
            return ToolResult.error(f"{display(path, env)} is a folder, not a file; nothing was written")
        try:
            # Created exclusively under a random name, then renamed over the target: a link
            # planted at a temporary name, at the target or on the way is never written through.
            write_atomic(path, data, keep_mode=True, new_mode=0o666, follow=False, make_parents=True,
                         suffix=".cox-tmp")
        except LinkInTheWay as exc:
            return ToolResult.error(f"{exc}; nothing was written")
        except OSError as exc:  # a full disk, a read-only file system: the old bytes stay whole
            return ToolResult.error(f"could not write {display(path, env)}: {why(exc)}; nothing was written")
        return ToolResult(visible=f"wrote {len(data)} bytes to {display(path, env)}", meta={"bytes": len(data)})
