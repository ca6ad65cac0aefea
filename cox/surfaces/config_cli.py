"""``cox config show [--sources] [--json]``: print the effective configuration.

Why it exists: with seven layers (defaults, user file, Claude Code's user settings, project file,
the project's Claude settings, environment, flags) and project files that are partly ignored, "why
does cox do X" is answered by showing each value with the file and line it came from. Warnings
(ignored settings) go to stderr; with ``--sources`` they are also listed at the end of the output as
``# ignored …`` comments (``"warnings"`` in JSON), next to the files that were read. A config error
is one line, ``cox: config error: ...``, and exit code 2.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import unicodedata
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

from cox.config import Config, ConfigError, flags_from_args, load_config

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_RULE_KEYS = ("permissions.allow", "permissions.ask", "permissions.deny")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``config`` (and its ``show`` action) on the ``cox`` command's subparsers.

    ``cox config`` alone behaves as ``cox config show``. The parser's ``func`` default is
    :func:`run`, for an entry point that dispatches with ``args.func(args)``.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "config",
        help="show the effective configuration",
        description="Show the effective configuration: defaults, ~/.cox/config.toml, ~/.claude/settings.json "
        "(permissions), the project's .cox/config.toml and .claude/settings*.json, COX_* environment variables "
        "and flags, merged.",
    )
    actions = parser.add_subparsers(dest="config_command", metavar="ACTION")
    show = actions.add_parser("show", help="print every effective key = value")
    show.add_argument("--sources", dest="config_sources", action="store_true",
                      help="say where each value came from (file:line, env:VAR, flag:--x, default)")
    show.add_argument("--json", dest="config_json", action="store_true", help="print JSON instead")
    parser.set_defaults(func=run, config_command="show")
    return parser


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``cox config <action>``; returns the exit code (0, or 2 for a config error)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    cwd = Path(getattr(args, "cwd", None) or Path.cwd())
    try:
        config = load_config(cwd, flags=flags_from_args(args))
    except ConfigError as exc:
        err.write(f"cox: config error: {exc}\n")
        return 2
    for warning in config.warnings:
        err.write(f"cox: warning: {_safe(warning)}\n")
    sources = bool(getattr(args, "config_sources", False))
    if getattr(args, "config_json", False):
        payload: dict[str, Any] = {"config": config.as_dict()}
        if sources:
            payload["sources"] = config.sources()
            payload["origins"] = dict(config.permissions.origins)
            payload["files"] = list(config.files)
            payload["warnings"] = list(config.warnings)
        out.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(render(config, sources=sources))
    return 0


def render(config: Config, *, sources: bool = False) -> str:
    """The effective config as TOML-ish ``key = value`` lines, with ``# from <source>`` comments
    when ``sources``; permission rules are then listed one per line with their own origin."""
    lines: list[str] = []
    origins = config.permissions.origins
    for key, value in config.flat():
        shown = _safe(key)
        if sources and key in _RULE_KEYS and value:
            lines.append(f"{shown} = [  # from {_safe(config.source(key))}")
            lines.extend(f"  {_value(rule)},  # from {_safe(origins.get(rule, '?'))}" for rule in value)
            lines.append("]")
            continue
        line = f"{shown} = {_value(value)}"
        if sources:
            line += f"  # from {_safe(config.source(key))}"
        lines.append(line)
    if sources:
        lines.append(f"# files read: {_safe(', '.join(config.files)) or 'none (defaults only)'}")
        lines.extend(f"# ignored: {_safe(warning)}" for warning in config.warnings)
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    """A value written the way TOML would (strings escaped, so nothing reaches the terminal raw)."""
    if value is None:
        return "(unset)"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _safe(json.dumps(value, ensure_ascii=False))
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    return _safe(json.dumps(str(value), ensure_ascii=False))


def _key(name: str) -> str:
    return name if name and all(ch in _BARE for ch in name) else _safe(json.dumps(name, ensure_ascii=False))


def _safe(text: str) -> str:
    """Escape control and format characters (ESC, bidi overrides) so a value read from a
    repository's config file cannot drive or disguise the terminal."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() or unicodedata.category(ch) == "Zs" else f"\\u{ord(ch):04x}" for ch in text
    )
