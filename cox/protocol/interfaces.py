"""The seams between the core and the outside world, as ``typing.Protocol`` classes.

The session is written against these, so a test can hand it a scripted provider, a tool that
raises, or an in-memory archive without touching the real implementations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from .model import ModelRequest, StreamDelta
from .types import Risk, ToolCall, ToolResult


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


class ToolContext(Protocol):
    """What a tool may use while it runs: the workspace roots, the cancel token, a way to
    stream progress, the archive and the session's sandbox settings."""

    @property
    def roots(self) -> list[str]: ...

    @property
    def cwd(self) -> str: ...

    @property
    def cancel(self) -> CancelToken: ...

    def output(self, chunk: str) -> None: ...


class Tool(Protocol):
    name: str
    description: str
    input_schema: dict[str, Any]
    parallel: bool

    def risk(self, call_input: dict[str, Any]) -> Risk: ...

    def subject(self, call_input: dict[str, Any], ctx: ToolContext) -> str: ...

    def call(self, call: ToolCall, ctx: ToolContext) -> ToolResult: ...


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
