"""Hooks in Claude Code's format: programs the person configured, run at the turn's edges and
around every tool call, that may block, rewrite or add context.

Why a package of its own: the session only knows a seam (``Hook.run(point, payload)`` returning a
small answer: ``deny``, ``input``, ``prompt``, ``block``, ``continue``, ``context``); everything
Claude Code specific — where hooks are configured (``spec``, ``sources``), whether a
repository's hooks were accepted (``trust``), how one command runs (``run``), what its exit code
and JSON mean (``answer``) and the object the session calls (``session``) — lives here.

With no hook configured anywhere, a session loads only ``sources`` (which reads the files and
finds none): parsing hooks (``spec``), their trust and the session's object load with the first
hook found.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .session import SessionHooks

__all__ = ["SessionHooks", "open_hooks"]


def open_hooks(user_hooks: Mapping[str, Any], *, settings: Any, transcript_path: Path,
               user_config: str, env: Mapping[str, str] | None = None, flag_settings: Any = (),
               claude_sources: Any = None) -> tuple[SessionHooks | None, list[str]]:
    """The session's hooks from every source (``sources.load``) and the warnings to show; None
    when no hook is in effect (the session then pays nothing at its hook points)."""
    from cox.actors.store.layout import cox_home as default_cox_home

    from .sources import load

    env = os.environ if env is None else env
    home = settings.cox_home or default_cox_home()
    loaded = load(user_hooks, cwd=settings.cwd, user_home=settings.home, cox_home=Path(home), env=env,
                  user_config=user_config, flag_settings=flag_settings, claude_sources=claude_sources)
    if not loaded.specs:
        return None, loaded.warnings
    from .session import open_loaded

    return open_loaded(loaded, settings=settings, transcript_path=transcript_path), loaded.warnings


def __getattr__(name: str) -> Any:
    if name == "SessionHooks":  # the session's object, imported only where a hook is in effect
        from .session import SessionHooks

        return SessionHooks
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
