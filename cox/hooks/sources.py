"""Where hooks come from, in this order: cox's ``[hooks]`` in the user config, Claude Code's user
``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR``), then the project's ``.cox/config.toml``,
``.claude/settings.json`` and ``.claude/settings.local.json`` — a project file's hooks only once
``cox hooks trust`` accepted them (``trust``); until then each such file is one warning naming it.

A file that cannot be read or parsed is a warning and cox goes on without its hooks: hooks
never stop a session from opening.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.slim import dataclass

if TYPE_CHECKING:  # parsing hooks and their trust load with the first hooks object found
    from .spec import HookSpec
    from .trust import HookTrust


@dataclass
class ProjectFile:
    """A repository's hooks, as ``cox hooks trust`` shows and accepts them."""

    path: str
    hooks: Any
    trusted: bool
    root: Path
    """The project the file belongs to (where its commands' scripts are looked for)."""


@dataclass
class Loaded:
    specs: list[HookSpec] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    project: list[ProjectFile] = field(default_factory=list)
    sandbox: bool = True
    """False only when the user config says ``[hooks] sandbox = false``."""


def project_files(cwd: Path) -> list[Path]:
    return [cwd / ".cox" / "config.toml", cwd / ".claude" / "settings.json", cwd / ".claude" / "settings.local.json"]


def read_hooks_object(path: Path) -> tuple[Any, str | None]:
    """The ``hooks`` of one settings file (JSON) or cox config (TOML); None when it has none."""
    from cox.config.readfile import read_settings_bytes

    try:  # never a plain read: a repository's settings.json may be a link to /dev/zero or a FIFO
        raw = read_settings_bytes(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{path}: cannot be read ({exc.strerror}); its hooks are skipped"
    try:
        if path.suffix == ".toml":
            import tomllib  # here: a run without a TOML file to read never pays for the parser

            data = tomllib.loads(raw.decode())
        else:
            data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'JSON'} ({exc}); its hooks are skipped"
    return (data.get("hooks") if isinstance(data, dict) else None), None


def load(user_hooks: Mapping[str, Any], *, cwd: Path, user_home: Path, cox_home: Path,
         env: Mapping[str, str], user_config: str = "config.toml", flag_settings: Sequence[tuple[Any, str]] = (),
         claude_sources: Collection[str] | None = None) -> Loaded:
    """``flag_settings``: the ``hooks`` of ``--settings`` documents with their names, the user's
    own like their ``~/.claude/settings.json``'s; ``claude_sources`` (``--setting-sources``,
    None: all) which of Claude Code's files are read: ``user``, ``project``
    (``.claude/settings.json``), ``local`` (``.claude/settings.local.json``)."""
    from cox.config.readfile import user_settings_path

    out = Loaded()
    if user_hooks:
        sandbox = user_hooks.get("sandbox", True)
        if isinstance(sandbox, bool):
            out.sandbox = sandbox
        else:
            out.warnings.append(f"{user_config}: hooks.sandbox must be true or false; hooks stay sandboxed")
        _add(out, dict(user_hooks), f"{user_config} [hooks]")
    sources = {"user", "project", "local"} if claude_sources is None else set(claude_sources)
    claude_user = user_settings_path(user_home, env)
    obj, problem = read_hooks_object(claude_user) if "user" in sources else (None, None)
    if problem:
        out.warnings.append(problem)
    if obj is not None:
        _add(out, obj, str(claude_user))
    for obj, source in flag_settings:
        if obj is not None:
            _add(out, obj, source)
    trust: HookTrust | None = None
    seen = {claude_user.absolute()}
    skip = {name for name, source in (("settings.json", "project"), ("settings.local.json", "local"))
            if source not in sources}
    for path in project_files(cwd.absolute()):
        if path.absolute() in seen:  # the project is the home folder: its settings are the user's
            continue
        if path.parent.name == ".claude" and path.name in skip:
            continue
        obj, problem = read_hooks_object(path)
        if problem:
            out.warnings.append(problem)
        if not obj:
            continue
        root = cwd.absolute()
        if trust is None:
            from .trust import HookTrust

            trust = HookTrust(cox_home)
        trusted = trust.trusted(str(path), obj, root)
        out.project.append(ProjectFile(str(path), obj, trusted, root))
        if trusted:
            _add(out, obj, str(path))
        else:
            out.warnings.append(f"{path} names hooks that are not trusted, so they do not run; "
                                "`cox hooks list` shows them, `cox hooks trust` accepts them")
    return out


def _add(out: Loaded, obj: Any, source: str) -> None:
    from .spec import parse_hooks

    specs, warnings = parse_hooks(obj, source)
    out.specs += specs
    out.warnings += warnings
