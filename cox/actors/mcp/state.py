"""What the MCP client shares without the SDK: its errors, its settings and the status board.

Kept apart from ``server.py`` (which imports the mcp SDK, about 0.4 s) so that a session whose
servers have a cached tool listing builds its MCP tools, and sends its first model request,
before the SDK is imported at all: ``McpManager``, ``McpTool`` and the resource tools import this
module, never ``server.py``, until a server is really started or called.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    import mcp_types

    from cox.policy.sandbox import SandboxPolicy

    from .config import McpServerSpec

__all__ = ["McpCallCancelled", "McpCallError", "McpNotTrusted", "McpServerCrashed", "ServerSettings", "StatusBoard",
           "not_trusted_sentence"]


class McpCallError(Exception):
    """A call did not produce a result; the message is written for the model to read."""


class McpServerCrashed(McpCallError):
    """The server died, closed the connection or stopped answering during the call."""


class McpCallCancelled(McpCallError):
    """The caller's cancel scope was cancelled while the call ran."""


class McpNotTrusted(McpCallError):
    """A project server whose launch the person has not trusted: it is not started, nothing is
    sent to it, and it is not restarted (``cox mcp trust <name>`` first)."""

    cox_no_restart = True


def not_trusted_sentence(server: str) -> str:
    return f"not trusted; run: cox mcp trust {server}"


@dataclass(frozen=True)
class ServerSettings:
    """What every server of one manager shares."""

    timeout_s: float = 60.0
    startup_timeout_s: float = 30.0
    cwd: Path | None = None
    """Working directory for servers without ``cwd`` (the workspace) and the sandbox's chdir."""
    sandbox: SandboxPolicy | None = None
    """The session's sandbox; ``None`` runs stdio servers unwrapped."""
    log_dir: Path | None = None
    """Where each stdio server's stderr goes (``mcp-<name>.log``); ``None`` discards it."""
    elicitation: bool = False
    """Declare elicitation (form and url): only where a person can answer (TUI, --plain);
    otherwise a server that elicits anyway gets decline (``elicit.py``)."""
    auth: Callable[[McpServerSpec], Any] | None = None
    """How HTTP servers authenticate (``auth.py``): ``spec -> httpx2.Auth | None``; ``None`` means
    the stored OAuth tokens, refreshed as needed, never a browser (``auth.SessionAuth``)."""
    trust: Any = None
    """The ``TrustStore`` that must hold a project server's launch before a connection starts it
    (``None``: ``$COX_HOME/mcp-trust.json``). Checked by every connection, whoever made it."""


@dataclass
class _ServerStatus:
    phase: str = "starting"  # starting | ready | failed
    error: str | None = None
    tools: list[mcp_types.Tool] | None = None
    lives: int = 0


@dataclass
class StatusBoard:
    """What each server actor publishes for the manager: phase, last error, last tool list.

    Lives outside the actors so it survives their restarts: the manager reads it without asking
    an actor (which may be busy starting), and the tool list of a server being restarted stays
    known, so its tools do not vanish from a session mid-turn.
    """

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _servers: dict[str, _ServerStatus] = field(default_factory=dict)

    def update(self, name: str, **changes: Any) -> None:
        with self._lock:
            status = self._servers.setdefault(name, _ServerStatus())
            for key, value in changes.items():
                setattr(status, key, value)

    def starting(self, name: str) -> None:
        with self._lock:
            status = self._servers.setdefault(name, _ServerStatus())
            status.lives += 1
            if status.phase != "failed":
                status.phase = "starting"

    def get(self, name: str) -> _ServerStatus:
        with self._lock:
            status = self._servers.get(name, _ServerStatus())
            return _ServerStatus(status.phase, status.error, status.tools, status.lives)

