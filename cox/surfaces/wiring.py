"""Turn the effective config and the command line into a running session's parts: settings,
provider, tools and the permission engine. Shared by every surface that opens a session."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cox.actors.session.actor import SessionSettings
from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode, new_ulid


class SetupError(Exception):
    """A problem the user must fix before a session can start; the message says how."""


def choose_provider(config: Any, script: str | None, env: dict[str, str] | None = None) -> Any:
    """The scripted model when a script is given, else a real provider from the environment."""
    env = dict(os.environ) if env is None else env
    provider = config.core.provider
    script = script or config.core.script or None
    if script or provider == "scripted":
        if not script:
            raise SetupError("core.provider is 'scripted' but no script was given; pass --script FILE")
        from cox.actors.provider.scripted import ScriptedProvider, ScriptError

        try:
            return ScriptedProvider(script)
        except ScriptError as exc:
            raise SetupError(str(exc)) from None
    has_anthropic = bool(env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"))
    has_openai = bool(env.get("OPENAI_API_KEY"))
    if provider in ("anthropic", "openai", "openai-chat") or has_anthropic or has_openai:
        name = provider if provider != "auto" else ("anthropic" if has_anthropic else "openai")
        raise SetupError(
            f"the {name} adapter is not in this build of cox yet (it arrives with the providers issue); "
            "run `cox demo` or pass --script FILE to use the scripted model")
    raise SetupError(
        "no model is configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, "
        "or pass --script FILE to run a scripted model (`cox demo` shows one)")


def build_engine(config: Any, cwd: Path, home: Path) -> Any:
    from cox.policy.permission import Engine

    p = config.permissions
    return Engine.compile(p.allow, p.ask, p.deny, home=home, roots=[cwd], origins=p.origins)


def settings_from(config: Any, cwd: Path, *, session_id: str | None = None, model: str | None = None,
                  approval_policy: str | None = None, permission_mode: str | None = None,
                  max_turns: int | None = None, home: Path | None = None) -> SessionSettings:
    t = config.tools
    return SessionSettings(
        session_id=session_id or new_ulid(),
        cwd=cwd,
        roots=[cwd],
        model=model or config.core.model,
        permission_mode=PermissionMode(permission_mode or config.permissions.mode),
        approval_policy=ApprovalPolicy(approval_policy or config.permissions.approval_policy),
        sandbox_mode=SandboxMode(config.sandbox.mode),
        max_turns=max_turns or config.core.max_turns,
        budget_usd=config.budget.session_usd,
        limits={"visible_max_bytes": t.visible_max_bytes, "output_head_lines": t.output_head_lines,
                "output_tail_lines": t.output_tail_lines},
        bash_timeout_s=float(t.bash_timeout_s),
        bash_max_timeout_s=float(t.bash_max_timeout_s),
        home=home or Path.home(),
        writable_roots=[Path(p).expanduser() for p in config.sandbox.writable_roots],
        network=bool(config.sandbox.network),
        dedup_window_turns=config.context.dedup_window_turns,
        microcompact_after_turns=config.context.microcompact_after_turns,
    )
