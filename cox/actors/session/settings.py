"""What a session is started with: its folder and roots, model tiers, modes, limits and budgets.

Made by the surfaces from the loaded config (``surfaces/wiring.py``); read by the session's
machine and interpreter, never changed by them (the live mode and model are the machine's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode
from cox.slim import dataclass


@dataclass
class SessionSettings:
    session_id: str
    cwd: Path
    roots: list[Path]
    model: str
    permission_mode: PermissionMode = PermissionMode.DEFAULT
    approval_policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST
    sandbox_mode: SandboxMode = SandboxMode.WORKSPACE_WRITE
    max_turns: int = 50
    budget_usd: float | None = None
    limits: dict[str, int] = field(default_factory=dict)
    bash_timeout_s: float = 120.0
    bash_max_timeout_s: float = 600.0
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    home: Path = field(default_factory=Path.home)
    writable_roots: list[Path] = field(default_factory=list)
    network: bool = False
    dedup_window_turns: int = 8
    microcompact_after_turns: int = 6
    checkpoints: bool = True
    cox_home: Path | None = None
    env_keep: list[str] = field(default_factory=list)
    """Secret-looking variables the user's own config passes to commands (``sandbox.env_keep``)."""
    cheap_model: str = ""
    think_model: str = ""
    preset: str = "editor"  # architect | editor (core.mode)
    compact_at: float = 0.75
    keep_turns: int = 2
    think_budget_tokens: int = 16_000
    model_overrides: dict[str, Any] = field(default_factory=dict)
    monthly_budget_usd: float | None = None
    agent_prompt: str = ""
    """A subagent's role, told after cox's system prompt (its type's or its agent file's body)."""
    system_prompt: str = ""
    """``--system-prompt``: told instead of cox's system prompt ("" = cox's own)."""
    append_system_prompt: str = ""
    """``--append-system-prompt`` (and ``--json-schema``'s instruction): told after the system prompt."""
    fallback_model: str = ""
    """``--fallback-model``: main turns move to it, for the rest of the session, when a request to the
    main model fails as overloaded or unavailable after its retries."""
    max_agent_depth: int = 1
    """How deep subagents may nest (``agents.max_depth``): a session at that depth has no agent tool."""
    lsp: Any = None
    """``[lsp]`` of the config (``LspConfig``): the session's language servers; None: the defaults."""
    open_url: Callable[[str], str | None] | None = None
    """Opens a URL an MCP server asked for, once the person chose open (URL elicitation); returns
    why it could not, or None. Default: the system browser (``questions.open_in_browser``)."""

    def main_model(self, preset: str) -> str:
        """The model main turns start on under ``preset`` (architect: the think tier), for a
        surface's status before the session says (``TurnMachine.main_model`` is the live
        answer, which every report of "the model" uses: session_started, usage, the window)."""
        return self.think_model if preset == "architect" and self.think_model else self.model
