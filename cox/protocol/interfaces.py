"""The seams between the core and the outside world, as ``typing.Protocol`` classes.

The session is written against these, so a test can hand it a scripted provider or an
in-memory archive without touching the real implementations. A tool has no Protocol here: its
one definition is ``cox.actors.tools.base.BaseTool`` (the choke point relies on its defaults).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from .model import ModelRequest, StreamDelta


class CancelToken(Protocol):
    """What a running piece of work sees of its turn's cancel scope."""

    @property
    def cancelled(self) -> bool: ...

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]: ...


class Provider(Protocol):
    """Streams one model request. ``stream`` yields provider-neutral deltas; cancelling the
    token must make the blocked read return promptly (close the response, shut the socket)."""

    name: str

    def stream(self, request: ModelRequest, cancel: CancelToken) -> Iterator[StreamDelta]: ...


class Archive(Protocol):
    def put(self, data: bytes, *, kind: str = "tool_output") -> str: ...

    def get(self, archive_id: str) -> bytes: ...


class Store(Protocol):
    def rollout_append(self, session_id: str, line: str) -> None: ...

    def rollout_sync(self, session_id: str) -> None: ...


class Hook(Protocol):
    """A hook point (SessionStart, UserPromptSubmit, PreToolUse, PermissionRequest, Notification,
    PostToolUse, PostToolUseFailure, Stop, PreCompact, SessionEnd): the session calls ``run`` at
    each and may be told to block, rewrite or add context (``SessionActor._hook``; the command
    hooks of Claude Code's format are ``cox.hooks.SessionHooks``)."""

    def run(self, point: str, payload: dict[str, Any]) -> dict[str, Any] | None: ...
