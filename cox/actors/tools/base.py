"""The one definition of a tool, and what a tool may use while it runs.

Every tool — built-in, MCP, MCP resources, ``tool_search`` — is a :class:`BaseTool`: a spec
(name, description, JSON schema), a risk and a subject for the permission engine, whether it may
run beside others, the files it writes (for checkpoints), and ``call()`` returning its full
output. It is an ABC rather than a ``Protocol`` because the choke point (``execute.py``) calls
``check``/``describe``/``writes`` on every tool and most tools keep the defaults here; a registry
typed ``dict[str, BaseTool]`` makes mypy prove each one conforms.

A tool sees its session through :class:`ToolEnv` (per call) and :class:`ToolServices` (the
session's shared services, typed, each with an empty default so a tool run outside a session —
``cox mcp serve``, a test — gets "none"). A tool never writes session state: what it has to say
back (tools ``tool_search`` enabled, a notice) goes in its :class:`ToolResult`. Tools never crash
the turn: ``execute.run`` turns an exception into an error result.
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from cox.protocol.interfaces import CancelToken
from cox.protocol.types import Risk, SandboxMode, ToolCall, ToolResult
from cox.slim import dataclass

if TYPE_CHECKING:
    import concurrent.futures

    from cox.actors.lsp.pool import LspPool
    from cox.actors.store.checkpoints import Checkpointer
    from cox.agents.runner import AgentRunner
    from cox.policy.reads import ReadGuard
    from cox.policy.rules import Rule

    from .catalog import Spec
    from .jobs import Jobs
    from .shell_env import SessionTmp

ArchivePut = Callable[[bytes], str]
"""Keeps bytes whole and returns their archive id (``cox expand ID``); raises when it cannot."""

Ask = Callable[[dict[str, Any]], "concurrent.futures.Future[dict[str, Any]]"]
"""Puts an MCP server's elicitation to the person (``mcp/elicit.py``); the future settles with
the ``ElicitResult`` fields."""

ApproveWrites = Callable[[str, list[Path], CancelToken], "str | None"]
"""``(call id, files, the call's cancel token)`` → None when every file may be written (a person approved the set if a
rule asked), else the sentence saying which file was refused and why. Blocks the calling thread."""

CallCheckpoint = tuple["Checkpointer", str, int]
"""``(checkpointer, session_id, turn)``: where a writing call's pre-images go."""


class ToolInputError(ValueError):
    """The model sent input the tool cannot use; the message goes back to the model."""


@dataclass(frozen=True)
class DeferredTool:
    """A tool ``tool_search`` can enable: its name and the description it is found by."""

    name: str
    description: str = ""


@dataclass(frozen=True)
class ToolServices:
    """The session's services a tool may use, one field each. The defaults are what a tool run
    outside a session gets: the workspace-write sandbox, no background jobs, no archive, nothing
    deferred, no one to ask. Shared by the session's calls and frozen: a tool cannot write session
    state through it; it answers through its result."""

    sandbox_mode: SandboxMode = SandboxMode.WORKSPACE_WRITE
    writable_roots: tuple[Path, ...] = ()
    """Writable in the sandbox besides the workspace roots (``sandbox.writable_roots``)."""
    network: bool = False
    jobs: Jobs | None = None
    """Background commands (bash ``run_in_background``); None: this surface cannot keep them."""
    archive: ArchivePut | None = None
    """The lossless output archive (bash keeps what it printed, resources their blobs)."""
    deferred_tools: tuple[DeferredTool, ...] = ()
    """What ``tool_search`` searches."""
    loaded: frozenset[str] = frozenset()
    """The deferred tools already enabled when the call started (``tool_search`` says so)."""
    ask: Ask | None = None
    """Puts an MCP server's elicitation to the person; None: the server is declined."""
    session_tmp: SessionTmp | None = None
    """The session's private /tmp (None: the sandbox's own empty tmpfs)."""
    read_deny: tuple[str, ...] | None = None
    """The Read deny patterns the sandbox hides (None: cox's built-in ones)."""
    cox_home: Path | None = None
    """Read-only in the sandbox (None: ``cox_home()``)."""
    env_keep: tuple[str, ...] = ()
    """Variables a command keeps beyond the safe set (``shell.env_keep``)."""
    agents: AgentRunner | None = None
    """The parent session's subagents (``cox.agents.runner``); None: this surface has none."""
    lsp: LspPool | None = None
    """The session's language servers (``cox.actors.lsp.pool``); None: this surface runs none."""
    approve_writes: ApproveWrites | None = None
    """Judges files a call will write that were unknown when it was admitted (rename_symbol):
    None where no session can judge them (``cox mcp serve``)."""


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
    services: ToolServices = field(default_factory=ToolServices)
    processes: list[Any] = field(default_factory=list)
    """Processes the call started and has not reaped yet; whoever ends the call early (a crash,
    a kill) ends and reaps these, so no process outlives its call."""
    reads: ReadGuard | None = None
    """The session's Read deny rules, compiled once by its engine (``Engine.read_guard``): the
    file tools never open what they deny. None: cox's built-in rules (see :func:`read_guard`)."""
    checkpoint: CallCheckpoint | None = None
    """Where this call's pre-images go (a writing call of a session that keeps checkpoints)."""


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
    server: str = ""
    """The MCP server an MCP tool comes from ("" for cox's own)."""
    trusted: bool = True
    """False for an MCP tool whose definition waits for ``cox mcp trust``: it only says so."""
    spec: ClassVar[Spec | None] = None
    """A built-in tool's entry in ``catalog.py``: the class takes its name, description, schema,
    ``parallel`` and ``required`` from there, the one place they are written."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        spec = cls.__dict__.get("spec")
        if spec is not None:
            cls.name, cls.description, cls.input_schema = spec.name, spec.description, spec.input_schema
            cls.parallel, cls.required = spec.parallel, spec.required

    def check(self, call_input: dict[str, Any]) -> None:
        """Required fields present; and, for a schema that allows no others, no field it does not
        name (a field the tool would ignore — ``Read``'s ``pages``, a typo — is refused, so the
        model learns it had no effect instead of trusting it did)."""
        for key in self.required:
            if key not in call_input:
                raise ToolInputError(f"{self.name}: missing required field {key!r}")
        schema = self.input_schema
        known = schema.get("properties")
        if schema.get("additionalProperties") is False and isinstance(known, dict):
            unknown = [k for k in call_input if k not in known]
            if unknown:
                listed = ", ".join(repr(k) for k in unknown)
                raise ToolInputError(f"{self.name}: unknown field{'s' if len(unknown) > 1 else ''} {listed}; "
                                     f"{self.name} takes {', '.join(known) or 'no fields'}")

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
