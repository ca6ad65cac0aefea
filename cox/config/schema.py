"""The typed shape of cox's configuration, and every built-in default in one place.

Why pydantic models: the rest of cox reads ``config.core.model`` with types a checker understands,
and ``model_dump`` gives ``cox config show --json`` for free. The models are *not* where a bad
file is reported: the loader (``cox.config.loader``) walks the raw TOML against these same models
first, so an error names the file, the line and the key instead of a pydantic traceback.

A field whose ``json_schema_extra`` holds ``{"cox_internal": True}`` is filled by the loader and
cannot be set from a file, the environment or a flag.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from cox.protocol.types import ApprovalPolicy, PermissionMode, SandboxMode

ProviderName = Literal["auto", "anthropic", "openai", "openai-chat", "scripted"]
ModelProvider = Literal["anthropic", "openai", "openai-chat", "scripted"]
CoreMode = Literal["editor", "architect"]
LogLevel = Literal["debug", "info", "warning", "error"]

_INTERNAL: dict[str, Any] = {"cox_internal": True}


class _Section(BaseModel):
    """Base of every section: unknown fields are an error (the loader reports them first)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class CoreConfig(_Section):
    """What runs: the model, the provider adapter, the editor/architect mode, the turn cap."""

    model: str = "claude-sonnet-4-5"
    provider: ProviderName = "auto"
    mode: CoreMode = "editor"
    max_turns: int = Field(default=50, ge=1)
    script: str = ""  # path of a JSON script for the scripted provider
    cheap_model: str = ""  # summaries and compaction; "" = the provider's cheap tier
    think_model: str = ""  # architect mode's main turns; "" = the provider's think tier


class PermissionsConfig(_Section):
    """Rules for the permission engine. ``allow``/``ask``/``deny`` are merged across layers
    (never replaced), so no layer can drop a deny rule another layer added."""

    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    mode: PermissionMode = PermissionMode.DEFAULT
    approval_policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST
    # rule text -> "file:line" (or env:/flag:) of the first layer that gave it; lets the policy
    # engine name the file a malformed rule came from.
    origins: dict[str, str] = Field(default_factory=dict, exclude=True, json_schema_extra=_INTERNAL)


class SandboxConfig(_Section):
    """How shell commands and stdio servers are confined."""

    mode: SandboxMode = SandboxMode.WORKSPACE_WRITE
    network: bool = False
    writable_roots: list[str] = Field(default_factory=list)


class ToolsConfig(_Section):
    """Timeouts and the head/tail window of what the model sees of a tool's output."""

    bash_timeout_s: int = Field(default=120, ge=1)
    bash_max_timeout_s: int = Field(default=600, ge=1)
    output_head_lines: int = Field(default=40, ge=0)
    output_tail_lines: int = Field(default=40, ge=0)
    visible_max_bytes: int = Field(default=16384, ge=1)


class ContextConfig(_Section):
    """When the context window is compacted, deduplicated and microcompacted."""

    compact_at: float = Field(default=0.75, gt=0, le=1)
    keep_turns: int = Field(default=2, ge=0)
    dedup_window_turns: int = Field(default=8, ge=0)
    microcompact_after_turns: int = Field(default=6, ge=0)


class BudgetConfig(_Section):
    """Spending caps in US dollars; ``None`` means no cap."""

    session_usd: float | None = Field(default=None, ge=0)
    monthly_usd: float | None = Field(default=None, ge=0)


class McpServerConfig(_Section):
    """One MCP server: a stdio ``command`` (with args/env/cwd) or an HTTP ``url`` (with headers)."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    sandbox: bool = True


class McpConfig(_Section):
    """MCP client settings and the user's own servers (a project's go in ``.mcp.json``)."""

    timeout_s: float = Field(default=60.0, gt=0)
    startup_timeout_s: float = Field(default=30.0, gt=0)
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)


class LspServerConfig(_Section):
    """The program that serves one language."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)


class LspConfig(_Section):
    """Language servers (user config only) and the diagnostics timing the tools spec names."""

    servers: dict[str, LspServerConfig] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0)
    quiet_ms: int = Field(default=500, ge=0)
    after_edit: bool = False
    after_edit_ms: int = Field(default=3000, ge=0)


class ModelConfig(_Section):
    """Overrides for one model of the catalog: window sizes and prices in USD per million tokens.
    ``None`` keeps the catalog's value."""

    provider: ModelProvider | None = None
    context_window: int | None = Field(default=None, ge=1)
    max_output: int | None = Field(default=None, ge=1)
    input: float | None = Field(default=None, ge=0)
    output: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    cache_read: float | None = Field(default=None, ge=0)


class LoggingConfig(_Section):
    """The level of ``$COX_HOME/logs/cox.log``."""

    level: LogLevel = "info"


class Config(_Section):
    """The effective configuration: every section, plus where each value came from.

    Built by :func:`cox.config.load_config`; ``Config()`` alone is the built-in defaults.
    """

    core: CoreConfig = Field(default_factory=CoreConfig)
    permissions: PermissionsConfig = Field(default_factory=PermissionsConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    lsp: LspConfig = Field(default_factory=LspConfig)
    hooks: dict[str, Any] = Field(default_factory=dict)  # free-form until the hooks issue
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)
    _warnings: list[str] = PrivateAttr(default_factory=list)
    _files: list[str] = PrivateAttr(default_factory=list)

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
            if isinstance(node, BaseModel) and part in type(node).model_fields:
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
        return self.model_dump(mode="json")

    def flat(self) -> list[tuple[str, Any]]:
        """Every effective leaf as ``(dotted key, value)`` in schema order; an empty table of
        named entries (``mcp.servers``) appears as one ``{}`` leaf so it is still shown."""
        out: list[tuple[str, Any]] = []
        _flatten_model(self, "", out)
        return out


def _flatten_model(model: BaseModel, prefix: str, out: list[tuple[str, Any]]) -> None:
    for name, field in type(model).model_fields.items():
        if is_internal_field(field.json_schema_extra):
            continue
        key = prefix + name
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            _flatten_model(value, key + ".", out)
        elif isinstance(value, dict) and value and all(isinstance(v, BaseModel) for v in value.values()):
            for entry_name, entry in value.items():
                _flatten_model(entry, f"{key}.{entry_name}.", out)
        elif isinstance(value, dict) and key == "hooks" and value:
            for hook_key, hook_value in value.items():
                out.append((f"{key}.{hook_key}", hook_value))
        else:
            out.append((key, value))


def is_internal_field(extra: object) -> bool:
    """True for a field the loader fills (``permissions.origins``): not settable by any layer."""
    return isinstance(extra, dict) and bool(extra.get("cox_internal"))


def _unknown_key_message(key: str) -> str:
    return f"no config key {key!r}"
