"""The typed shape of cox's configuration, and every built-in default in one place.

Why records (slotted dataclasses, ``cox.protocol.record``): the rest of cox reads
``config.core.model`` with types a checker understands, and ``to_plain`` gives ``cox config show
--json``. The records are *not* where a bad file is reported: the loader (``cox.config.loader``)
walks the raw TOML against these same records first, so an error names the file, the line and
the key. (They were pydantic models; building them cost ~30 ms of every start-up.)

A field declared ``field(internal=True)`` is filled by the loader and cannot be set from a file,
the environment or a flag.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from cox.protocol.record import Record, field, is_record, record, specs, to_plain
from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode

ProviderName = Literal["auto", "anthropic", "openai", "openai-chat", "scripted"]
ModelProvider = Literal["anthropic", "openai", "openai-chat", "scripted"]
CoreMode = Literal["editor", "architect"]
LogLevel = Literal["debug", "info", "warning", "error"]



class _Section(Record):
    """Base of every section: unknown fields are an error (the loader reports them first)."""

    __slots__ = ()


@record
class CoreConfig(_Section):
    """What runs: the model, the provider adapter, the editor/architect mode, the turn cap."""

    model: str = "claude-sonnet-4-5"
    provider: ProviderName = "auto"
    mode: CoreMode = "editor"
    max_turns: int = field(default=50, ge=1)
    script: str = ""  # path of a JSON script for the scripted provider
    cheap_model: str = ""  # summaries and compaction; "" = the provider's cheap tier
    think_model: str = ""  # architect mode's main turns; "" = the provider's think tier


@record
class PermissionsConfig(_Section):
    """Rules for the permission engine. ``allow``/``ask``/``deny`` are merged across layers
    (never replaced), so no layer can drop a deny rule another layer added."""

    allow: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    mode: PermissionMode = PermissionMode.DEFAULT
    approval_policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST
    # rule text -> "file:line" (or env:/flag:) of the first layer that gave it; lets the policy
    # engine name the file a malformed rule came from.
    origins: dict[str, str] = field(default_factory=dict, internal=True)


@record
class SandboxConfig(_Section):
    """How shell commands and stdio servers are confined."""

    mode: SandboxMode = SandboxMode.WORKSPACE_WRITE
    network: bool = False
    writable_roots: list[str] = field(default_factory=list)
    # Secret-looking variables (names or fnmatch patterns) commands still get; honoured only
    # from the user's own config, the environment or a flag, never from a project's.
    env_keep: list[str] = field(default_factory=list)


@record
class ToolsConfig(_Section):
    """Timeouts and the head/tail window of what the model sees of a tool's output."""

    bash_timeout_s: int = field(default=120, ge=1)
    bash_max_timeout_s: int = field(default=600, ge=1)
    output_head_lines: int = field(default=40, ge=0)
    output_tail_lines: int = field(default=40, ge=0)
    visible_max_bytes: int = field(default=16384, ge=1)


@record
class ContextConfig(_Section):
    """When the context window is compacted, deduplicated and microcompacted."""

    compact_at: float = field(default=0.75, gt=0, le=1)
    keep_turns: int = field(default=2, ge=0)
    dedup_window_turns: int = field(default=8, ge=0)
    microcompact_after_turns: int = field(default=6, ge=0)


@record
class BudgetConfig(_Section):
    """Spending caps in US dollars; ``None`` means no cap."""

    session_usd: float | None = field(default=None, ge=0)
    monthly_usd: float | None = field(default=None, ge=0)


@record
class McpServerConfig(_Section):
    """One MCP server: a stdio ``command`` (with args/env/cwd) or an HTTP ``url`` (with headers)."""

    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    sandbox: bool = True


@record
class McpConfig(_Section):
    """MCP client settings and the user's own servers (a project's go in ``.mcp.json``)."""

    timeout_s: float = field(default=60.0, gt=0)
    startup_timeout_s: float = field(default=30.0, gt=0)
    max_loaded_tools: int = field(default=40, ge=0)  # MCP tools past it wait behind tool_search
    servers: dict[str, McpServerConfig] = field(default_factory=dict)


@record
class LspServerConfig(_Section):
    """The program that serves one language."""

    command: str | None = None
    args: list[str] = field(default_factory=list)


@record
class LspConfig(_Section):
    """Language servers (user config only) and the diagnostics timing the tools spec names."""

    servers: dict[str, LspServerConfig] = field(default_factory=dict)
    timeout_s: float = field(default=30.0, gt=0)
    quiet_ms: int = field(default=500, ge=0)
    after_edit: bool = False
    after_edit_ms: int = field(default=3000, ge=0)


@record
class ModelConfig(_Section):
    """Overrides for one model of the catalog: window sizes and prices in USD per million tokens.
    ``None`` keeps the catalog's value."""

    provider: ModelProvider | None = None
    context_window: int | None = field(default=None, ge=1)
    max_output: int | None = field(default=None, ge=1)
    input: float | None = field(default=None, ge=0)
    output: float | None = field(default=None, ge=0)
    cache_write: float | None = field(default=None, ge=0)
    cache_read: float | None = field(default=None, ge=0)


@record
class ProviderConfig(_Section):
    """How long one model request may wait, so its worst case is known: the server's
    ``retry-after`` (above the cap the request fails at once instead of sleeping), a stream that
    sends no event (keep-alive pings do not count), and all its attempts together before an
    answer starts. Only your own layers set these: a project's values are ignored, so a
    repository cannot make cox wait longer."""

    max_retry_after_s: float = field(default=60.0, ge=0)
    stream_idle_timeout_s: float = field(default=90.0, gt=0)
    request_timeout_s: float = field(default=600.0, gt=0)


@record
class AgentsConfig(_Section):
    """Subagents (the ``agent`` tool): how deep they may nest."""

    max_depth: int = field(default=1, ge=0)
    """0: no agent tool; 1: the person's session may start agents, which may not start more."""


@record
class LoggingConfig(_Section):
    """The level of ``$COX_HOME/logs/cox.log``."""

    level: LogLevel = "info"


@record
class ServeConfig(_Section):
    """``cox serve``: where it listens. Only your own layers set these (a project may not expose
    your sessions on the network): 127.0.0.1 unless you say otherwise."""

    host: str = "127.0.0.1"
    port: int = field(default=8765, ge=0, le=65535)


@record
class Config(_Section):
    """The effective configuration: every section, plus where each value came from.

    Built by :func:`cox.config.load_config`; ``Config()`` alone is the built-in defaults.
    """

    core: CoreConfig = field(default_factory=CoreConfig)
    permissions: PermissionsConfig = field(default_factory=PermissionsConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    lsp: LspConfig = field(default_factory=LspConfig)
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    hooks: dict[str, Any] = field(default_factory=dict)  # free-form until the hooks issue
    models: dict[str, ModelConfig] = field(default_factory=dict)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    agents: AgentsConfig = field(default_factory=AgentsConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)

    _sources: dict[str, str] = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)
    _warnings: list[str] = dataclasses.field(default_factory=list, init=False, repr=False, compare=False)
    _files: list[str] = dataclasses.field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def warnings(self) -> list[str]:
        """Settings the loader ignored (project restrictions), one line each, file named."""
        return self._warnings

    @property
    def files(self) -> list[str]:
        """The config files that were read, lowest precedence first."""
        return self._files

    def get(self, key: str) -> Any:
        """The effective value at a dotted key (``"permissions.allow"``, ``"mcp.servers.x.url"``);
        a section or table key returns the section model or dict."""
        node: Any = self
        for part in key.split("."):
            if is_record(node) and any(spec.name == part for spec in specs(type(node))):
                node = getattr(node, part)
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise KeyError(_unknown_key_message(key))
        return node

    def source(self, key: str) -> str:
        """Where the value at ``key`` came from: ``file:line``, ``env:COX_X``, ``flag:--x`` or
        ``default``. A permission list merged from several layers names each, comma-separated."""
        if key in self._sources:
            return self._sources[key]
        self.get(key)  # raises KeyError for a key that does not exist
        prefix = key + "."
        inner = [src for k, src in self._sources.items() if k.startswith(prefix)]
        if inner:
            return ", ".join(dict.fromkeys(inner))
        return "default"

    def sources(self) -> dict[str, str]:
        """The source of every effective leaf key, in schema order."""
        return {key: self.source(key) for key, _ in self.flat()}

    def as_dict(self) -> dict[str, Any]:
        """The effective values as plain JSON-able data (enums as strings, rule origins left out)."""
        return to_plain(self)

    def flat(self) -> list[tuple[str, Any]]:
        """Every effective leaf as ``(dotted key, value)`` in schema order; an empty table of
        named entries (``mcp.servers``) appears as one ``{}`` leaf so it is still shown."""
        out: list[tuple[str, Any]] = []
        _flatten_model(self, "", out)
        return out


def _flatten_model(model: Record, prefix: str, out: list[tuple[str, Any]]) -> None:
    for spec in specs(type(model)):
        if spec.internal:
            continue
        key = prefix + spec.name
        value = getattr(model, spec.name)
        if is_record(value):
            _flatten_model(value, key + ".", out)
        elif isinstance(value, dict) and value and all(is_record(v) for v in value.values()):
            for entry_name, entry in value.items():
                _flatten_model(entry, f"{key}.{entry_name}.", out)
        elif isinstance(value, dict) and key == "hooks" and value:
            for hook_key, hook_value in value.items():
                out.append((f"{key}.{hook_key}", hook_value))
        else:
            out.append((key, value))


def _unknown_key_message(key: str) -> str:
    return f"no config key {key!r}"
