"""Hooks in Claude Code's format: programs the person configured, run at the turn's edges and
around every tool call, that may block, rewrite or add context.

Why a package of its own: the session only knows a seam (``Hook.run(point, payload)`` returning a
small answer: ``deny``, ``input``, ``prompt``, ``block``, ``continue``, ``context``); everything
Claude Code specific — where hooks are configured (``spec``, ``sources``), whether a
repository's hooks were accepted (``trust``), how one command runs (``run``), what its exit code
and JSON mean (``answer``) and the object the session calls (``session``) — lives here.
"""

from __future__ import annotations

from .session import SessionHooks, open_hooks

__all__ = ["SessionHooks", "open_hooks"]
