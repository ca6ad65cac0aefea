"""The command-line flags that add configuration to one session, as Claude Code spells them:
``--mcp-config``, ``--strict-mcp-config``, ``--settings``, ``--setting-sources`` and ``--add-dir``.

Why one module: ``cox run`` and ``cox exec`` (and Claude Code's own entry points) take the same
flags, and each flag widens or narrows what the session may do, so what it may and may not do is
decided once, here (:func:`add_config_flags` registers them, :func:`read_config_flags` reads
them into :class:`ConfigFlags`, which ``commands.prepare`` hands to the config loader, the MCP
launcher and the hooks).

What each is trusted with: everything on the command line is the person's own, so it is trusted
like their user config — with two limits, because a flag names a file or a folder that may be
the repository's:

- ``--mcp-config FILE|JSON`` (repeatable): Claude Code's ``{"mcpServers": {...}}``. Its stdio and
  HTTP servers are the user's (started as configured, their tools recorded on first connect) and
  win a name clash over every file. A ``FILE`` that is the workspace's own ``.mcp.json`` stays the
  repository's: naming it on a command line does not skip ``cox mcp trust``. A ``"type": "sdk"``
  server (an in-process server of a Claude Agent SDK app) is never started here: it is listed in
  :attr:`ConfigFlags.sdk_servers`, marked, for the Claude Code dialect's driver. A ``"type":
  "sse"`` server speaks MCP's older HTTP+SSE transport (``cox.actors.mcp.auth.http_transport``).
  ``--strict-mcp-config``: only these servers; the user config, ``~/.claude.json`` and
  ``.mcp.json`` are not read.
- ``--settings FILE|JSON``: a Claude Code settings object, read as if it were your
  ``~/.claude/settings.json`` and layered right above it (``cox.config.claude``): its
  ``permissions`` (allow, ask, deny; ``defaultMode`` only when as strict as yours — a looser mode
  is ``--permission-mode``'s job) and its ``hooks`` (run as your Claude settings' hooks are). Every
  other key (``env``, ``model``, ``apiKeyHelper``, ``sandbox`` …) is ignored with one warning
  naming them, as cox ignores them in the settings files: they name programs, endpoints and
  environment that cox takes from its own config.
- ``--setting-sources user,project,local``: which of Claude Code's settings files are read (for
  permissions and hooks); empty: none. cox's own ``config.toml`` files are not Claude Code's.
- ``--add-dir DIR`` (repeatable): one more workspace root, writable by the file tools and the
  sandbox. It cannot make a protected place writable: a folder that is or lies inside ``.git``
  or ``.cox``, a git directory itself, ``COX_HOME`` or a folder inside it, or ``/`` is refused
  with a sentence; inside a root, ``.git`` and ``.cox`` stay read-only as in the first root.

Each problem with a flag's value is one sentence that names the flag (``FlagError``), and the
run ends with the usage exit code: nothing starts on a half-read command line.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.slim import dataclass

from .compat_flags import FlagError

if TYPE_CHECKING:
    from cox.actors.mcp.config import McpServerSpec

SETTING_SOURCES = ("user", "project", "local")
SETTINGS_KEYS = frozenset({"permissions", "hooks"})
"""The keys of a ``--settings`` object cox reads (the others are ignored with a warning)."""
SERVER_TYPES = ("stdio", "http", "sse", "sdk")


@dataclass
class ConfigFlags:
    """What the flags of this module add to a session (all empty when none was given)."""

    overrides: list[tuple[str, str]] = field(default_factory=list)
    """``cox exec -c KEY=VALUE`` pairs, for ``load_config(overrides=…)``."""
    settings: list[tuple[str, str]] = field(default_factory=list)
    """``--settings`` documents as ``(name, JSON text)``, for ``load_config(settings=…)``."""
    settings_hooks: list[tuple[Any, str]] = field(default_factory=list)
    """Their ``hooks`` objects with their names, for ``open_hooks(flag_settings=…)``."""
    sources: frozenset[str] | None = None
    """``--setting-sources``: which Claude Code settings files are read; None: all of them."""
    mcp: dict[str, McpServerSpec] = field(default_factory=dict)
    """The stdio and HTTP servers of ``--mcp-config``, started with the session's."""
    sdk_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The ``"type": "sdk"`` servers of ``--mcp-config``, by name, each its entry plus
    ``"sdk": True`` and ``"source"``: served by the SDK app over the control protocol, never
    started by cox (the Claude Code dialect's driver answers for them)."""
    strict_mcp: bool = False
    add_dirs: list[Path] = field(default_factory=list)
    """``--add-dir``: extra writable workspace roots, resolved."""
    warnings: list[str] = field(default_factory=list)


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """Register this module's flags on a sub-command's parser (``cox run``, ``cox exec``)."""
    parser.add_argument("--mcp-config", action="append", default=None, metavar="FILE|JSON",
                        help='MCP servers in Claude Code\'s {"mcpServers": {...}} shape, a file or the JSON itself '
                             "(repeatable); they are yours, like your config's servers")
    parser.add_argument("--strict-mcp-config", action="store_true",
                        help="use only the --mcp-config servers (not your config's, ~/.claude.json's or .mcp.json's)")
    parser.add_argument("--settings", metavar="FILE|JSON",
                        help="a Claude Code settings object read as your ~/.claude/settings.json "
                             "(its permissions and hooks)")
    parser.add_argument("--setting-sources", metavar="LIST",
                        help="which Claude Code settings files are read: a comma list of user, project, local "
                             "(empty: none; default: all)")
    parser.add_argument("--add-dir", action="append", default=None, metavar="DIR",
                        help="one more writable workspace folder (repeatable); .git, .cox and cox's home stay read-only")


def read_config_flags(args: Any, cwd: Path, *, cox_home: Path) -> ConfigFlags:
    """The flags on ``args`` read and checked (a namespace without them reads as none). Relative
    paths are relative to the current folder, as a shell would read them; ``cwd`` is the
    session's workspace (its ``.mcp.json`` stays the repository's)."""
    out = ConfigFlags(overrides=list(getattr(args, "overrides", None) or []))
    for value in getattr(args, "mcp_config", None) or []:
        _read_mcp(value, cwd, out)
    out.strict_mcp = bool(getattr(args, "strict_mcp_config", False))
    if getattr(args, "settings", None) is not None:
        _read_settings(args.settings, out)
    sources = getattr(args, "setting_sources", None)
    if sources is not None:
        names = [s.strip() for s in sources.split(",") if s.strip()]
        bad = [n for n in names if n not in SETTING_SOURCES]
        if bad:
            raise FlagError(f"--setting-sources: unknown source {bad[0]!r}; it takes a comma list of "
                            f"{', '.join(SETTING_SOURCES)} (empty: none)")
        out.sources = frozenset(names)
    for value in getattr(args, "add_dir", None) or []:
        folder = _add_dir(value, cox_home)
        if folder != cwd.resolve() and folder not in out.add_dirs:
            out.add_dirs.append(folder)
    return out


# ------------------------------------------------------------------------------ file or JSON

def _document(flag: str, value: str) -> tuple[Any, str, Path | None]:
    """The JSON a ``FILE|JSON`` flag names: ``(data, name, file or None)``."""
    if value.lstrip().startswith(("{", "[")):
        text, name, path = value, f"{flag} (JSON)", None
    else:
        from cox.config.readfile import NotASettingsFile, read_settings_bytes

        path = Path(value).expanduser().absolute()
        name = f"{flag} {path}"
        try:
            text = read_settings_bytes(path).decode("utf-8-sig")
        except FileNotFoundError:
            raise FlagError(f"{flag}: {value} does not exist; pass a file or the JSON itself") from None
        except NotASettingsFile as exc:
            raise FlagError(f"{flag}: {value} cannot be read: it {exc.strerror}; pass a regular file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise FlagError(f"{flag}: {value} cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FlagError(f"{name}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise FlagError(f"{name}: expected a JSON object, got {type(data).__name__}")
    return data, name, path


# ------------------------------------------------------------------------------ --mcp-config

def _read_mcp(value: str, cwd: Path, out: ConfigFlags) -> None:
    from cox.actors.mcp.config import Origin, parse_servers

    data, name, path = _document("--mcp-config", value)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        raise FlagError(f'{name}: expected {{"mcpServers": {{NAME: {{...}}}}}}, as Claude Code writes it')
    origin = Origin.USER
    if path is not None and _same(path, cwd / ".mcp.json"):
        origin = Origin.PROJECT  # the repository's file: it keeps its trust step (cox mcp trust)
    for server, entry in servers.items():
        where = f"{name}: mcp server {server!r}"
        if not isinstance(entry, dict):
            raise FlagError(f"{where}: expected an object, got {type(entry).__name__}")
        if not server or "/" in server or "__" in server:
            raise FlagError(f"{where}: a server name may not be empty or hold '/' or '__'")
        kind = entry.get("type") or ("http" if "url" in entry and "command" not in entry else "stdio")
        if kind not in SERVER_TYPES:
            raise FlagError(f"{where}: unknown type {kind!r} (it takes {', '.join(SERVER_TYPES)})")
        if kind == "sdk":
            out.sdk_servers[server] = {**entry, "sdk": True, "source": name}
            out.mcp.pop(server, None)
            continue
        _check_entry(where, kind, entry)
        spec = parse_servers({server: entry}, origin, str(path) if path is not None else name)[server]
        out.mcp[server] = spec
        out.sdk_servers.pop(server, None)
        out.warnings.extend(spec.warnings)


def _check_entry(where: str, kind: str, entry: dict[str, Any]) -> None:
    need = "command" if kind == "stdio" else "url"
    if not isinstance(entry.get(need), str) or not entry[need]:
        raise FlagError(f"{where}: a {kind} server needs a {need} string")
    if "args" in entry and not (isinstance(entry["args"], list) and all(isinstance(a, str) for a in entry["args"])):
        raise FlagError(f"{where}: args must be a list of strings")
    for key in ("env", "headers"):
        if key in entry and not (isinstance(entry[key], dict) and all(isinstance(v, str) for v in entry[key].values())):
            raise FlagError(f"{where}: {key} must be an object of strings")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


# ------------------------------------------------------------------------------ --settings

def _read_settings(value: str, out: ConfigFlags) -> None:
    data, name, _ = _document("--settings", value)
    ignored = sorted(k for k in data if k not in SETTINGS_KEYS)
    if ignored:
        out.warnings.append(f"{name}: ignored {', '.join(map(repr, ignored))}: cox reads only permissions and hooks "
                            "from Claude Code settings (the rest comes from cox's own config)")
    out.settings.append((name, json.dumps({k: v for k, v in data.items() if k == "permissions"})))
    if data.get("hooks") is not None:
        out.settings_hooks.append((data["hooks"], name))


# ------------------------------------------------------------------------------ --add-dir

def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _add_dir(value: str, cox_home: Path) -> Path:
    raw = Path(value).expanduser()
    if not raw.is_dir():
        raise FlagError(f"--add-dir: {value} is not a folder; pass an existing folder")
    folder = Path(os.path.realpath(raw))
    home = Path(os.path.realpath(cox_home))
    if folder == Path("/"):
        raise FlagError("--add-dir: / cannot be a workspace root (the whole file system would be writable); "
                        "name the folder the work needs")
    if _inside(folder, home):
        raise FlagError(f"--add-dir: {value} is inside cox's home ({home}), which configures the next session; "
                        "it stays read-only")
    protected = next((p for p in folder.parts if p in (".git", ".cox")), None)
    if protected is not None:
        what = "git metadata (its config and hooks run programs)" if protected == ".git" else "cox's project configuration"
        raise FlagError(f"--add-dir: {value} is inside {protected}/, {what}; it stays read-only")
    if (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir():
        raise FlagError(f"--add-dir: {value} is a git directory (its config and hooks run programs); it stays "
                        "read-only: add the checkout instead")
    return folder
