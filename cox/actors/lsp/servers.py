"""Which language a file is in, and which program serves it.

Servers come from the user's own config (``[lsp.servers.<lang>]``, command and args) and
otherwise from the defaults below, the first one found on PATH. A project's config can never
name one (``cox.config.project`` ignores ``lsp.servers`` there with a warning): a repository
must not choose programs cox runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cox.slim import dataclass

__all__ = ["DEFAULTS", "LANGUAGES", "ServerCommand", "language_of", "resolve", "status"]

LANGUAGES: dict[str, tuple[str, str]] = {
    ".py": ("python", "python"), ".pyi": ("python", "python"),
    ".ts": ("typescript", "typescript"), ".tsx": ("typescript", "typescriptreact"),
    ".mts": ("typescript", "typescript"), ".cts": ("typescript", "typescript"),
    ".js": ("typescript", "javascript"), ".jsx": ("typescript", "javascriptreact"),
    ".mjs": ("typescript", "javascript"), ".cjs": ("typescript", "javascript"),
    ".rs": ("rust", "rust"), ".go": ("go", "go"),
}
"""Extension → (the language a server serves, the document's languageId)."""

DEFAULTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "python": (("basedpyright-langserver", "--stdio"), ("pyright-langserver", "--stdio"), ("pylsp",)),
    "typescript": (("typescript-language-server", "--stdio"),),
    "rust": (("rust-analyzer",),),
    "go": (("gopls",),),
}
"""The default servers per language, in order of preference (the first on PATH wins)."""


@dataclass(frozen=True)
class ServerCommand:
    language: str
    argv: tuple[str, ...]
    source: str
    """"config" (the user's ``[lsp.servers]``) or "default"."""


def language_of(path: Path) -> tuple[str, str] | None:
    """(language, languageId) of a file by its extension, or None."""
    return LANGUAGES.get(path.suffix.lower())


def _configured(servers: Mapping[str, Any], language: str) -> ServerCommand | None:
    entry = servers.get(language)
    if entry is None:
        return None
    command = getattr(entry, "command", None) or (entry.get("command") if isinstance(entry, dict) else None)
    args = getattr(entry, "args", None)
    if args is None and isinstance(entry, dict):
        args = entry.get("args")
    if not command:
        return None
    return ServerCommand(language, (str(command), *[str(a) for a in args or ()]), "config")


def resolve(servers: Mapping[str, Any], language: str, path: str | None = None) -> ServerCommand | None:
    """The server for ``language``: the user's, else the first default on PATH (``path``: that
    search path instead of this process's), else None."""
    configured = _configured(servers, language)
    if configured is not None:
        return configured
    for argv in DEFAULTS.get(language, ()):
        if shutil.which(argv[0], path=path):
            return ServerCommand(language, argv, "default")
    return None


def status(servers: Mapping[str, Any], path: str | None = None) -> list[tuple[str, str, bool]]:
    """(language, what serves it or what was looked for, found) for ``cox doctor``."""
    rows = []
    for language in sorted({*DEFAULTS, *servers}):
        configured = _configured(servers, language)
        if configured is not None:
            found = shutil.which(configured.argv[0], path=path) is not None
            rows.append((language, f"{' '.join(configured.argv)} (from your config)", found))
            continue
        chosen = resolve({}, language, path)
        if chosen is not None:
            rows.append((language, " ".join(chosen.argv), True))
        else:
            wanted = " or ".join(a[0] for a in DEFAULTS.get(language, ()))
            rows.append((language, f"{wanted} not on PATH", False))
    return rows
