"""Turn the effective config and the command line into a running session's parts: settings,
provider, tools and the permission engine. Shared by every surface that opens a session."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.protocol.record import to_plain
from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode, new_ulid
from cox.slim import dataclass

if TYPE_CHECKING:  # imported where used, so `cox policy check` does not load the session actor
    from cox.actors.session.actor import SessionSettings


class SetupError(Exception):
    """A problem the user must fix before a session can start; the message says how."""


@dataclass
class Chosen:
    provider: Any
    model: str
    kind: str  # anthropic | openai | openai-chat | scripted
    cheap_model: str = ""
    think_model: str = ""


OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE = "https://api.anthropic.com"


def choose_provider(config: Any, script: str | None, env: dict[str, str] | None = None,
                    model: str | None = None) -> Chosen:
    """The provider for this run, from the config, the flags and the environment.

    ``core.provider = auto`` follows the model's family (claude-* → Anthropic, gpt-*/o* →
    OpenAI); with the default model and only an OpenAI key, the OpenAI code tier is used. An
    ``OPENAI_BASE_URL`` that is not OpenAI's means an OpenAI-compatible server, spoken to through
    Chat Completions (what vLLM, Ollama and most gateways implement). A missing key is one line
    that names the variable."""
    from cox.actors.provider.catalog import describe, guess_provider, tier_model

    env = dict(os.environ) if env is None else env
    kind = config.core.provider
    script = script or config.core.script or None
    if script or kind == "scripted":
        if not script:
            raise SetupError("core.provider is 'scripted' but no script was given; pass --script FILE")
        from cox.actors.provider.scripted import ScriptedProvider, ScriptError

        try:
            scripted = ScriptedProvider(script)
        except ScriptError as exc:
            raise SetupError(str(exc)) from None
        named = model or scripted.model  # the script plays whatever is asked: tiers are names only
        return Chosen(scripted, named, "scripted", config.core.cheap_model or named,
                      config.core.think_model or named)
    anthropic_key = env.get("ANTHROPIC_API_KEY") or None
    anthropic_token = env.get("ANTHROPIC_AUTH_TOKEN") or None
    openai_key = env.get("OPENAI_API_KEY") or None
    openai_base = env.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE
    name = model or config.core.model
    model_is_default = model is None and config.source("core.model") == "default"
    if kind == "auto":
        kind = describe(name, config.models).provider
        if kind == "anthropic" and not (anthropic_key or anthropic_token) and openai_key and model_is_default:
            kind, name = "openai", tier_model("openai", "code")
        if kind == "openai" and "api.openai.com" not in openai_base:
            kind = "openai-chat"
        if kind == "scripted":
            raise SetupError(f"models.{name}.provider is 'scripted' but no script was given; "
                             "pass --script FILE (or set core.script)")
    elif model_is_default and guess_provider(name) != kind and kind != "openai-chat":
        name = tier_model(kind, "code")
    cheap = tier_model(kind, "cheap", config.core.cheap_model) if kind != "openai-chat" else name
    think = tier_model(kind, "think", config.core.think_model) if kind != "openai-chat" else name
    if kind == "anthropic":
        if not (anthropic_key or anthropic_token):
            raise SetupError("no Anthropic key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), "
                             "or run `cox demo` to try cox offline")
        from cox.actors.provider.anthropic import AnthropicProvider

        return Chosen(AnthropicProvider(name, api_key=anthropic_key, auth_token=anthropic_token,
                                        base_url=env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_DEFAULT_BASE,
                                        waits=config.provider),
                      name, kind, cheap, think)
    if kind in ("openai", "openai-chat"):
        if not openai_key and "api.openai.com" in openai_base:
            raise SetupError("no OpenAI key: set OPENAI_API_KEY, or run `cox demo` to try cox offline")
        if kind == "openai":
            from cox.actors.provider.openai_responses import OpenAIResponsesProvider

            return Chosen(OpenAIResponsesProvider(name, api_key=openai_key, base_url=openai_base,
                                                  waits=config.provider), name, kind, cheap, think)
        from cox.actors.provider.openai_chat import OpenAIChatProvider

        return Chosen(OpenAIChatProvider(name, api_key=openai_key, base_url=openai_base, waits=config.provider),
                      name, kind, cheap, think)
    raise SetupError(f"unknown provider {kind!r}")


def build_engine(config: Any, cwd: Path, home: Path, *, roots: Sequence[Path] | None = None) -> Any:
    """The permission engine of a session in ``cwd``: the rules of every layer ``load_config``
    merged (cox's files, Claude Code's settings, env, flags), each with its origin, in the
    config's mode. The one place they are compiled: ``cox policy check`` calls it too, so it
    explains the decision a session makes. ``roots`` (default ``[cwd]``) anchor relative rules."""
    from cox.policy.permission import Engine

    p = config.permissions
    return Engine.compile(p.allow, p.ask, p.deny, mode=p.mode, home=home, roots=list(roots or [cwd]),
                          origins=p.origins)


def _env_keep(config: Any, cwd: Path) -> list[str]:
    from cox.policy.env_keep import env_keep_of

    keep, ignored = env_keep_of(config, cwd)
    if ignored:
        import sys

        print(f"cox: warning: {ignored}", file=sys.stderr)  # as the loader's own warnings are shown
    return keep


def settings_from(config: Any, cwd: Path, *, session_id: str | None = None, model: str | None = None,
                  approval_policy: str | None = None, permission_mode: str | None = None,
                  max_turns: int | None = None, home: Path | None = None,
                  roots: Sequence[Path] | None = None) -> SessionSettings:
    """``roots`` (default ``[cwd]``): the first is where the session writes; any further one is
    read-only (a worktree session's main checkout: ``cox.policy.paths.write_roots``)."""
    from cox.actors.session.actor import SessionSettings

    t = config.tools
    return SessionSettings(
        session_id=session_id or new_ulid(),
        cwd=cwd,
        roots=list(roots or [cwd]),
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
        env_keep=_env_keep(config, cwd),
        model_overrides={k: to_plain(v) for k, v in config.models.items()},
        monthly_budget_usd=config.budget.monthly_usd,
        compact_at=config.context.compact_at,
        keep_turns=config.context.keep_turns,
        dedup_window_turns=config.context.dedup_window_turns,
        microcompact_after_turns=config.context.microcompact_after_turns,
        max_agent_depth=config.agents.max_depth,
        lsp=config.lsp,
    )
