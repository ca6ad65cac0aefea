"""What the person has accepted of each MCP server: ``$COX_HOME/mcp-trust.json``.

Two things, in this order, because a repository's server must not run before anyone agreed:

1. **Its launch** (``launch.py``): the exact command line (or URL) cox would start. A server the
   user configured (``Origin.USER``, ``Origin.CLAUDE``) needs none: it is the user's own. A server
   a repository brought (``Origin.PROJECT``) is not started, and no request is sent to it, until
   ``cox mcp trust <server>`` showed its launch and the person agreed; a launch that changed since
   is not trusted.
2. **Its tools' definitions.** A tool's description and annotations come from the server, so
   they are untrusted input: cox hashes each tool's name, title, description, canonical input
   schema *and annotations* (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
   ``openWorldHint``, their title). The annotations decide whether a call needs approval, so a
   flipped hint is a changed definition like any other — the MCP spec leaves them out of the
   hash; cox does not.

   - a server the user configured is recorded the first time it connects (and a tool it adds
     later is recorded when first seen);
   - a server a repository brought stays *pending* until ``cox mcp trust <server>`` stores its
     current hashes;
   - a tool whose hash differs from the stored one is *changed*. A change never replaces the
     stored hash by itself: only ``cox mcp trust <server>`` does.

A pending or changed tool reaches the model only as the pending sentence, is a Write, and a call of
it never reaches the server (see ``McpTool``).

The file is ``{"version": 2, "servers": {name: {"tools": {tool: hash}, "launches": {key: record},
"legacy": {tool: hash}}}}``. A file of version 1 (``{server: {tool: hash}}``, hashes without the
annotations) is read as *legacy* hashes: for a user-configured server a tool whose definition
still matches its legacy hash is upgraded the next time the server connects (recorded with its
annotations as they are now — what record-on-first-connect would do anyway), one that does not is
changed; a project server had no launch record, so it is not started until trusted again, and its
tools go back to pending (the person never saw its annotations as part of what they accepted).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from cox.atomic import write_atomic

from .cache import ToolDef
from .config import McpServerSpec, Origin
from .launch import launch_key, launch_record

if TYPE_CHECKING:
    import mcp_types

    Tool: TypeAlias = mcp_types.Tool | ToolDef
    """A live definition or the cached one (``cache.py``): both hash the same."""

__all__ = ["TRUST_FILE", "TrustState", "TrustStore", "canonical_schema", "classify", "legacy_hash",
           "tool_hash"]

log = logging.getLogger(__name__)

TRUST_FILE = "mcp-trust.json"
VERSION = 2

TRUSTED_ON_FIRST_CONNECT = frozenset({Origin.USER, Origin.CLAUDE})


class TrustState(StrEnum):
    TRUSTED = "trusted"
    NEW = "new"
    """Not stored yet, from a server the user configured: recorded on connect, so trusted."""
    PENDING = "pending"
    """Not stored yet, from a server a repository (or plugin) brought: waits for ``cox mcp trust``."""
    CHANGED = "changed"
    """Stored with a different hash: the definition changed since it was accepted."""


def canonical_schema(schema: Any) -> str:
    """The input schema as canonical JSON: sorted keys, no whitespace."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tool_hash(tool: Tool) -> str:
    """``sha256`` over name, title, description, canonical input schema and annotations (in
    their MCP wire form, as ``ToolDef`` normalises them)."""
    d = ToolDef.of(tool)
    payload = canonical_schema({"v": VERSION, "name": d.name, "title": d.title, "description": d.description or "",
                                "inputSchema": dict(d.input_schema), "annotations": d.annotations or {}})
    return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


def legacy_hash(tool: Tool) -> str:
    """The version-1 hash (name, description, schema; no annotations): only to upgrade old entries."""
    payload = canonical_schema([tool.name, tool.description or "", dict(tool.input_schema)])
    return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class _Entry:
    """One server's record in the file."""

    tools: dict[str, str] | None = None
    """Accepted tool hashes; ``None`` while none were ever recorded (in this format)."""
    launches: dict[str, dict[str, Any]] = field(default_factory=dict)
    legacy: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.tools is not None:
            out["tools"] = dict(self.tools)
        if self.launches:
            out["launches"] = {k: dict(v) for k, v in self.launches.items()}
        if self.legacy:
            out["legacy"] = dict(self.legacy)
        return out

    @classmethod
    def from_json(cls, raw: Any) -> _Entry | None:
        if not isinstance(raw, dict):
            return None
        tools, launches, legacy = raw.get("tools"), raw.get("launches"), raw.get("legacy")
        return cls(tools={str(t): str(h) for t, h in tools.items()} if isinstance(tools, dict) else None,
                   launches={str(k): v for k, v in launches.items() if isinstance(v, dict)}
                   if isinstance(launches, dict) else {},
                   legacy={str(t): str(h) for t, h in legacy.items()} if isinstance(legacy, dict) else {})

    def copy(self) -> _Entry:
        return _Entry(None if self.tools is None else dict(self.tools), dict(self.launches), dict(self.legacy))


def classify(spec: McpServerSpec, tools: Iterable[Tool], stored: Mapping[str, str] | None,
             legacy: Mapping[str, str] | None = None) -> dict[str, TrustState]:
    """Each tool's trust state, given what the store holds for this server (``None``: nothing;
    ``legacy``: version-1 hashes still waiting to be upgraded)."""
    stored, legacy = stored or {}, legacy or {}
    first_connect = spec.origin in TRUSTED_ON_FIRST_CONNECT
    out: dict[str, TrustState] = {}
    for tool in tools:
        known = stored.get(tool.name)
        if known is not None:
            out[tool.name] = TrustState.TRUSTED if known == tool_hash(tool) else TrustState.CHANGED
        elif tool.name in legacy and first_connect:
            out[tool.name] = TrustState.NEW if legacy[tool.name] == legacy_hash(tool) else TrustState.CHANGED
        else:
            out[tool.name] = TrustState.NEW if first_connect else TrustState.PENDING
    return out


class TrustStore:
    """The trust file, shared by the threads of one process and safe against other processes'
    writes: every change re-reads the file, merges, and replaces it atomically."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._data: dict[str, _Entry] = {}
        self._stamp: tuple[int, int, int] | None = None
        self._loaded = False

    @classmethod
    def default(cls) -> TrustStore:
        from cox.actors.store.layout import cox_home

        return cls(cox_home() / TRUST_FILE)

    # -- reading --

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _refresh(self) -> None:
        """Re-read the file when it changed on disk (``cox mcp trust`` in another process)."""
        stamp = self._stat()
        if self._loaded and stamp == self._stamp:
            return
        self._data = self._read()
        self._stamp = stamp
        self._loaded = True

    def _read(self, *, for_writing: bool = False) -> dict[str, _Entry]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            log.warning("%s: not readable (%s); every mcp tool counts as untrusted", self.path, err)
            return {}
        if not isinstance(raw, dict):
            return {}
        if "version" not in raw:  # version 1: {server: {tool: hash}}, hashes without annotations
            return {str(server): _Entry(legacy={str(t): str(h) for t, h in tools.items()})
                    for server, tools in raw.items() if isinstance(tools, dict)}
        if raw.get("version") != VERSION or not isinstance(raw.get("servers"), dict):
            if for_writing:  # a newer cox's file: do not replace what this one cannot read
                raise ValueError(f"{self.path} has version {raw.get('version')!r}, which this cox cannot "
                                 "read; trust with the cox that wrote it, or move the file away")
            log.warning("%s: version %r is not one this cox reads; every mcp tool counts as untrusted",
                        self.path, raw.get("version"))
            return {}
        return {str(server): entry for server, value in raw["servers"].items()
                if (entry := _Entry.from_json(value)) is not None}

    def _entry(self, server: str) -> _Entry | None:
        with self._lock:
            self._refresh()
            found = self._data.get(server)
            return found.copy() if found is not None else None

    def stored(self, server: str) -> dict[str, str] | None:
        """The accepted tool hashes of ``server`` (``None`` when none were ever recorded)."""
        found = self._entry(server)
        return dict(found.tools) if found is not None and found.tools is not None else None

    def all(self) -> dict[str, dict[str, str]]:
        """``{server: {tool: hash}}`` of every server with recorded tools."""
        with self._lock:
            self._refresh()
            return {k: dict(v.tools) for k, v in self._data.items() if v.tools is not None}

    def states(self, spec: McpServerSpec, tools: Iterable[Tool]) -> dict[str, TrustState]:
        found = self._entry(spec.name)
        if found is None:
            return classify(spec, tools, None)
        return classify(spec, tools, found.tools, found.legacy)

    def trusted(self, spec: McpServerSpec, tools: Iterable[Tool]) -> dict[str, bool]:
        """``{tool: trusted?}``: stored with the same hash, or new on a user-configured server."""
        return {name: state in (TrustState.TRUSTED, TrustState.NEW)
                for name, state in self.states(spec, tools).items()}

    def launch_trusted(self, spec: McpServerSpec, workspace: Path) -> bool:
        """May cox start ``spec`` (run from ``workspace``)? A user-configured server always; a
        project server only with this exact launch accepted by ``cox mcp trust``."""
        if spec.origin in TRUSTED_ON_FIRST_CONNECT:
            return True
        found = self._entry(spec.name)
        return found is not None and launch_key(launch_record(spec, workspace)) in found.launches

    def launches(self, server: str) -> list[dict[str, Any]]:
        """The launches accepted for ``server``, newest first (to say what changed)."""
        found = self._entry(server)
        if found is None:
            return []
        return sorted(found.launches.values(), key=lambda r: -float(r.get("trusted_at") or 0))

    # -- writing --

    def observe(self, spec: McpServerSpec, tools: Iterable[Tool]) -> None:
        """A server connected with ``tools``: record the ones first seen on a user-configured
        server (and upgrade a version-1 hash that still matches). Stored hashes are never
        replaced here, and project servers are never recorded."""
        if spec.origin not in TRUSTED_ON_FIRST_CONNECT:
            return
        tools = list(tools)
        with self._lock:
            self._refresh()
            current = self._data.get(spec.name)
            states = classify(spec, tools, current.tools if current else None, current.legacy if current else None)
            new = {t.name: tool_hash(t) for t in tools if states[t.name] is TrustState.NEW}
            if not new and current is not None and current.tools is not None:
                return

            def record(data: dict[str, _Entry]) -> None:
                entry = data.setdefault(spec.name, _Entry())
                entry.tools = entry.tools if entry.tools is not None else {}
                for name, digest in new.items():
                    if name not in entry.tools:
                        entry.tools[name] = digest
                        entry.legacy.pop(name, None)

            self._update(record)

    def accept(self, server: str, tools: Iterable[Tool]) -> dict[str, str]:
        """``cox mcp trust <server>``: store the current hashes of ``server`` (replacing the old
        ones, so a tool the server no longer has is forgotten). Returns what was stored."""
        hashes = {t.name: tool_hash(t) for t in tools}

        def store(data: dict[str, _Entry]) -> None:
            entry = data.setdefault(server, _Entry())
            entry.tools = dict(hashes)
            entry.legacy = {}

        with self._lock:
            self._update(store)
        return hashes

    def accept_launch(self, spec: McpServerSpec, workspace: Path) -> dict[str, Any]:
        """The person agreed that ``spec`` may be started as it is now (``cox mcp trust``).
        Earlier launches of the same name stay accepted (the same repository in two folders)."""
        record = launch_record(spec, workspace)
        key = launch_key(record)

        def store(data: dict[str, _Entry]) -> None:
            data.setdefault(spec.name, _Entry()).launches[key] = {**record, "trusted_at": time.time()}

        with self._lock:
            self._update(store)
        return record

    def _update(self, change: Callable[[dict[str, _Entry]], None]) -> None:
        """Re-read, apply ``change`` to the data, write atomically. Called with the lock held;
        an ``flock`` on a sibling file keeps another cox process from writing in between."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{self.path.name}.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._write(change)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, change: Callable[[dict[str, _Entry]], None]) -> None:
        data = self._read(for_writing=True)
        change(data)
        doc = {"version": VERSION, "servers": {k: v.to_json() for k, v in sorted(data.items())}}
        text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
        write_atomic(self.path, text.encode("utf-8"), fsync=True)
        self._data = data
        self._stamp = self._stat()
        self._loaded = True
