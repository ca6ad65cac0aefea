"""Layered TOML configuration with the source of every value.

defaults → ``$COX_HOME/config.toml`` → Claude Code's ``~/.claude/settings.json`` (permissions) →
``<workspace>/.cox/config.toml`` → ``<workspace>/.claude/settings.json`` and ``settings.local.json``
(both restricted: a project may narrow trust, never widen it) → ``COX_<SECTION>_<KEY>``
environment variables → command-line flags. See docs/config.md for every key, its default and the env-var table.
"""

from .loader import FLAG_NAMES, ConfigError, default_cox_home, env_vars, flags_from_args, load_config
from .schema import (
    BudgetConfig,
    Config,
    ContextConfig,
    CoreConfig,
    LoggingConfig,
    LspConfig,
    LspServerConfig,
    McpConfig,
    McpServerConfig,
    ModelConfig,
    PermissionsConfig,
    ProviderConfig,
    SandboxConfig,
    ToolsConfig,
)

__all__ = [
    "FLAG_NAMES",
    "BudgetConfig",
    "Config",
    "ConfigError",
    "ContextConfig",
    "CoreConfig",
    "LoggingConfig",
    "LspConfig",
    "LspServerConfig",
    "McpConfig",
    "McpServerConfig",
    "ModelConfig",
    "PermissionsConfig",
    "ProviderConfig",
    "SandboxConfig",
    "ToolsConfig",
    "default_cox_home",
    "env_vars",
    "flags_from_args",
    "load_config",
]
