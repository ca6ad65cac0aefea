"""The tool contract every built-in tool follows.

A tool has a spec (name, description, JSON schema), a risk and a subject for the permission
engine, says whether it may run in parallel with others, and ``call()`` returns its full output.
Tools never crash the turn: the ToolCall actor turns an exception into an error result.
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.protocol.interfaces import CancelToken
from cox.protocol.types import Risk, ToolCall, ToolResult
from cox.slim import dataclass

if TYPE_CHECKING:
    from cox.policy.reads import ReadGuard
    from cox.policy.rules import Rule


class ToolInputError(ValueError):
    """The model sent input the tool cannot use; the message goes back to the model."""


@dataclass
class ToolEnv:
    """What tools may use while they run. ``output`` streams progress (ToolCallOutput events)."""

    roots: list[Path]
    cwd: Path
    cancel: CancelToken
    output: Callable[[str], None] = lambda chunk: None
    bash_timeout_s: float = 120.0
    bash_max_timeout_s: float = 600.0
    home: Path = field(default_factory=Path.home)
    extra: dict[str, Any] = field(default_factory=dict)
    processes: list[Any] = field(default_factory=list)
    """Processes the call started and has not reaped yet; whoever ends the call early (a crash,
    a kill) ends and reaps these, so no process outlives its call."""
    reads: ReadGuard | None = None
    """The session's Read deny rules, compiled once by its engine (``Engine.read_guard``): the
    file tools never open what they deny. None: cox's built-in rules (see :func:`read_guard`)."""


def read_guard(env: ToolEnv) -> ReadGuard:
    """The Read deny rules the file tools honour: the session's, or — for a tool run without
    them — cox's built-in credential-store rules, so forgetting to pass them fails closed."""
    if env.reads is not None:
        return env.reads
    return _builtin_guard(str(env.home), tuple(os.fspath(r) for r in env.roots))


@functools.lru_cache(maxsize=8)
def _builtin_guard(home: str, roots: tuple[str, ...]) -> ReadGuard:
    from cox.policy.permission import Engine

    return Engine.compile(home=home, roots=list(roots)).read_guard()


def path_denied(env: ToolEnv, raw: str, real: Path, *, below: bool = False) -> Rule | None:
    """The Read deny rule covering a path the model named: as written (``raw``, relative to the
    cwd) or as resolved (``real``, from ``confine``); ``below``: or anything inside that folder."""
    from cox.policy.paths import lexical

    guard = read_guard(env)
    return guard.refuses(lexical(raw, env.cwd, env.home), below=below) or guard.refuses(str(real), below=below)


def read_denied(shown: str, rule: Rule) -> ToolResult:
    """The answer to a file tool asked for a path a Read deny rule covers."""
    return ToolResult.denied(f"{shown}: reading it is denied by {rule.text} (from {rule.origin}); "
                             "files a Read deny rule covers are never read, listed or searched")


class BaseTool(ABC):
    name: str = ""
    description: str = ""
    input_schema: dict[str, Any] = {}
    parallel: bool = False
    required: tuple[str, ...] = ()

    def check(self, call_input: dict[str, Any]) -> None:
        for key in self.required:
            if key not in call_input:
                raise ToolInputError(f"{self.name}: missing required field {key!r}")

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.WRITE

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return ""

    def writes(self, call: ToolCall, env: ToolEnv) -> list[Path] | None:
        """The files this call may change, for checkpoints: ``[]`` for a call that changes
        nothing, the confined paths it names for file tools, ``None`` when it cannot say (bash,
        MCP tools): then the workspace is snapshotted before and after it."""
        return [] if self.risk(call.input) is Risk.READ_ONLY else None

    def describe(self, call: ToolCall, env: ToolEnv) -> ToolCall:
        """Fill the call's risk, subject (and segments for bash) for the permission engine."""
        return replace(call, risk=self.risk(call.input), subject=self.subject(call.input, env))

    @abstractmethod
    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        """Run the call and return its full output (the ToolCall actor caps what the model sees)."""
