"""Each MCP server's last tool listing, kept in ``$COX_HOME/mcp-tools.json``.

Why: a session must not wait for its MCP servers before the first model request (PEERS.md row 9),
yet the tool schemas go into system[0], which has to stay byte-identical across the requests of a
session (the prompt cache). So a server whose listing is cached contributes its tools from the
cache at once, and starts in the background; only a server never listed before (no cache entry)
is waited for, as before. ``McpTool`` then checks every call against the live listing (a changed
or vanished tool is refused, never run), and each listing a server reports replaces its entry
here, so the next session sees it.

An entry is keyed by the server's name and a fingerprint of how it is run (transport, command,
args, env, url, headers, and the working directory of a stdio server): a server configured
differently, or run from another workspace, lists its tools afresh. Only the hash of env and
headers is stored, never their values. The cache holds what the server said; whether the model
may use a tool is still decided by the trust store (``trust.py``) with the definition's hash.

Nothing here imports the mcp SDK: a :class:`ToolDef` is the part of an ``mcp_types.Tool`` cox
uses (name, title, description, input schema, annotations), as plain JSON data.

The cache never decides trust: a project server whose launch is not trusted is not started and
gets no tools at all, cached or not (``McpManager``), and a cached definition is checked against
the trust store with the same hash as a live one, annotations included.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.atomic import write_atomic

if TYPE_CHECKING:
    from .config import McpServerSpec

__all__ = ["CACHE_FILE", "ToolCache", "ToolDef", "fingerprint"]

log = logging.getLogger(__name__)

CACHE_FILE = "mcp-tools.json"
VERSION = 2
"""2: a tool's title is kept too (it is part of the trust hash); a version-1 file is no cache."""
KEEP_PER_SERVER = 4
"""Entries kept per server name (different configurations or workspaces), newest first."""


@dataclass(frozen=True, eq=True)
class ToolDef:
    """One tool as cox uses it, from a live ``mcp_types.Tool`` or from the cache. Two are equal
    when everything the model or the permission engine sees of them is equal."""

    name: str
    description: str | None = None
    input_schema: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, Any] | None = None
    """The MCP wire form (``readOnlyHint``, ``destructiveHint``, …); part of the trust hash, so a
    cached listing carries them and a flipped hint is a changed definition."""
    title: str | None = None

    __hash__ = None  # type: ignore[assignment]  # holds dicts

    @classmethod
    def of(cls, tool: Any) -> ToolDef:
        """From an ``mcp_types.Tool`` (or a ToolDef), normalised through JSON so that a live
        definition and its cached copy compare equal."""
        if isinstance(tool, ToolDef):
            return tool
        hints = tool.annotations
        annotations = hints.model_dump(mode="json", by_alias=True, exclude_none=True) if hints is not None else None
        title = getattr(tool, "title", None)
        return cls(name=str(tool.name), description=tool.description,
                   input_schema=json.loads(json.dumps(dict(tool.input_schema))), annotations=annotations or None,
                   title=title if isinstance(title, str) else None)

    @classmethod
    def from_json(cls, data: Any) -> ToolDef | None:
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return None
        description = data.get("description")
        schema = data.get("inputSchema")
        annotations = data.get("annotations")
        title = data.get("title")
        return cls(name=data["name"], description=description if isinstance(description, str) else None,
                   input_schema=schema if isinstance(schema, dict) else {},
                   annotations=annotations if isinstance(annotations, dict) and annotations else None,
                   title=title if isinstance(title, str) else None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "inputSchema": self.input_schema}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        if self.annotations:
            out["annotations"] = self.annotations
        return out

    def hint(self, key: str) -> bool:
        """An annotation hint (``readOnlyHint``, ``destructiveHint``) that is set and true."""
        return bool(self.annotations and self.annotations.get(key) is True)


def fingerprint(spec: McpServerSpec, cwd: Path | None = None) -> str:
    """What decides a server's listing besides its name: how it is run. ``cwd`` is the session's
    working directory, which a stdio server without its own ``cwd`` runs in."""
    where = spec.cwd or (str(cwd) if cwd is not None and not spec.url else None)
    payload = json.dumps([spec.transport, spec.command, list(spec.args), dict(spec.env), where, spec.url,
                          dict(spec.headers)], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


class ToolCache:
    """The listing file, shared by the threads of one process and safe against other processes'
    writes (re-read, merge, atomic replace under an ``flock``), as the trust store is.

    A damaged or unreadable file is an empty cache (every server is waited for, as on a first
    run), never an error."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> ToolCache:
        from cox.actors.store.layout import cox_home

        return cls(cox_home() / CACHE_FILE)

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            log.warning("%s: not readable (%s); mcp servers are waited for as on a first run", self.path, err)
            return {}
        if not isinstance(raw, dict) or raw.get("version") != VERSION or not isinstance(raw.get("servers"), dict):
            return {}
        return {str(k): v for k, v in raw["servers"].items() if isinstance(v, dict)}

    def get(self, spec: McpServerSpec, cwd: Path | None = None) -> list[ToolDef] | None:
        """The cached listing of ``spec`` run from ``cwd``, or ``None`` when there is none."""
        found = self.entry(spec, cwd)
        if found is None:
            return None
        tools = [ToolDef.from_json(t) for t in found["tools"]]
        return [t for t in tools if t is not None]

    def entry(self, spec: McpServerSpec, cwd: Path | None = None) -> dict[str, Any] | None:
        """The raw entry: ``tools`` (JSON), ``listed_at``, and ``login`` (an HTTP server that was
        listed with a stored OAuth token)."""
        found = self._read().get(spec.name, {}).get(fingerprint(spec, cwd))
        if not isinstance(found, dict) or not isinstance(found.get("tools"), list):
            return None
        return found

    def put(self, spec: McpServerSpec, tools: Iterable[Any], cwd: Path | None = None, *,
            login: bool = False) -> bool:
        """Store the listing ``spec`` just reported (``mcp_types.Tool`` or ToolDef); ``login``:
        it was listed with a stored OAuth token. Returns whether the file changed (an identical
        listing is not written again)."""
        defs = [ToolDef.of(t).to_json() for t in tools]
        key = fingerprint(spec, cwd)
        with self._lock:
            current = self._read().get(spec.name, {}).get(key)
            if isinstance(current, dict) and current.get("tools") == defs and bool(current.get("login")) == login:
                return False
            entry: dict[str, Any] = {"tools": defs, "listed_at": time.time()}
            if login:
                entry["login"] = True
            self._update(spec.name, key, entry)
        return True

    def _update(self, server: str, key: str, entry: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{self.path.name}.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                servers = self._read()
                mine = {k: v for k, v in servers.get(server, {}).items() if isinstance(v, dict) and k != key}
                kept = sorted(mine.items(), key=lambda kv: -float(kv[1].get("listed_at") or 0))[: KEEP_PER_SERVER - 1]
                servers[server] = {key: entry, **dict(kept)}
                self._write({"version": VERSION, "servers": servers})
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, data: dict[str, Any]) -> None:
        # Keys keep their order: a schema read back must serialise as the server sent it, so the
        # tools a cached session sends are byte-identical to a live one's (the prompt cache).
        text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
        write_atomic(self.path, text.encode("utf-8"))  # no fsync: a lost cache is one slower start
