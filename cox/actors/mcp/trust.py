"""Which MCP tool definitions the user has accepted: ``$COX_HOME/mcp-trust.json``.

A tool's description and annotations come from the server, so they are untrusted input. cox hashes
each tool's name, description and canonical input schema (annotations excluded) and keeps the
accepted hashes as ``{server: {tool: hash}}``:

- a server the user configured (``Origin.USER``, ``Origin.CLAUDE``) is recorded the first time it
  connects (and a tool it adds later is recorded when first seen);
- a server a repository brought (``Origin.PROJECT``, later plugins) stays *pending* until
  ``cox mcp trust <server>`` stores its current hashes;
- a tool whose hash differs from the stored one is *changed*. A change never replaces the stored
  hash by itself: only ``cox mcp trust <server>`` does.

A pending or changed tool reaches the model only as the pending sentence, is a Write, and a call of
it never reaches the server (see ``McpTool``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import threading
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from cox.atomic import write_atomic

from .config import McpServerSpec, Origin

if TYPE_CHECKING:
    import mcp_types

    from .cache import ToolDef

    Tool: TypeAlias = mcp_types.Tool | ToolDef
    """A live definition or the cached one (``cache.py``): both hash the same."""

__all__ = ["TRUST_FILE", "TrustState", "TrustStore", "canonical_schema", "classify", "tool_hash"]

log = logging.getLogger(__name__)

TRUST_FILE = "mcp-trust.json"

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
    """``sha256`` over name, description and canonical input schema (annotations excluded)."""
    payload = canonical_schema([tool.name, tool.description or "", dict(tool.input_schema)])
    return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


def classify(spec: McpServerSpec, tools: Iterable[Tool],
             stored: Mapping[str, str] | None) -> dict[str, TrustState]:
    """Each tool's trust state, given what the store holds for this server (``None``: nothing)."""
    stored = stored or {}
    out: dict[str, TrustState] = {}
    for tool in tools:
        known = stored.get(tool.name)
        if known is None:
            out[tool.name] = TrustState.NEW if spec.origin in TRUSTED_ON_FIRST_CONNECT else TrustState.PENDING
        else:
            out[tool.name] = TrustState.TRUSTED if known == tool_hash(tool) else TrustState.CHANGED
    return out


class TrustStore:
    """The trust file, shared by the threads of one process and safe against other processes'
    writes: every change re-reads the file, merges, and replaces it atomically."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._data: dict[str, dict[str, str]] = {}
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

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            log.warning("%s: not readable (%s); every mcp tool counts as untrusted", self.path, err)
            return {}
        if not isinstance(raw, dict):
            return {}
        return {str(server): {str(t): str(h) for t, h in tools.items()}
                for server, tools in raw.items() if isinstance(tools, dict)}

    def stored(self, server: str) -> dict[str, str] | None:
        """The accepted hashes of ``server`` (``None`` when it was never recorded)."""
        with self._lock:
            self._refresh()
            found = self._data.get(server)
            return dict(found) if found is not None else None

    def all(self) -> dict[str, dict[str, str]]:
        with self._lock:
            self._refresh()
            return {k: dict(v) for k, v in self._data.items()}

    def states(self, spec: McpServerSpec, tools: Iterable[Tool]) -> dict[str, TrustState]:
        return classify(spec, tools, self.stored(spec.name))

    def trusted(self, spec: McpServerSpec, tools: Iterable[Tool]) -> dict[str, bool]:
        """``{tool: trusted?}``: stored with the same hash, or new on a user-configured server."""
        return {name: state in (TrustState.TRUSTED, TrustState.NEW)
                for name, state in self.states(spec, tools).items()}

    # -- writing --

    def observe(self, spec: McpServerSpec, tools: Iterable[Tool]) -> None:
        """A server connected with ``tools``: record the ones first seen on a user-configured
        server. Stored hashes are never replaced here, and project servers are never recorded."""
        if spec.origin not in TRUSTED_ON_FIRST_CONNECT:
            return
        tools = list(tools)
        with self._lock:
            self._refresh()
            current = self._data.get(spec.name, {})
            new = {t.name: tool_hash(t) for t in tools if t.name not in current}
            if not new and spec.name in self._data:
                return
            self._update(lambda data: data.setdefault(spec.name, {}).update(
                {k: v for k, v in new.items() if k not in data.get(spec.name, {})}))

    def accept(self, server: str, tools: Iterable[Tool]) -> dict[str, str]:
        """``cox mcp trust <server>``: store the current hashes of ``server`` (replacing the old
        entry, so a tool the server no longer has is forgotten). Returns what was stored."""
        hashes = {t.name: tool_hash(t) for t in tools}
        with self._lock:
            self._update(lambda data: data.__setitem__(server, dict(hashes)))
        return hashes

    def _update(self, change: Any) -> None:
        """Re-read, apply ``change`` to the data, write atomically. Called with the lock held;
        an ``flock`` on a sibling file keeps another cox process from writing in between."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{self.path.name}.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._write(change)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, change: Any) -> None:
        data = self._read()
        change(data)
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
        write_atomic(self.path, text.encode("utf-8"), fsync=True)
        self._data = data
        self._stamp = self._stat()
        self._loaded = True
