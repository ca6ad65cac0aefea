"""``cox hooks list`` and ``cox hooks trust``: which hooks are in effect, and the person's yes to a
repository's.

A project's ``.cox/config.toml`` and ``.claude/settings*.json`` may name hooks; they are programs
the repository's author chose, so none runs until ``cox hooks trust`` showed every one of them
(event, matcher, command, timeout, exactly as they would run) and the person agreed. What was
accepted is hashed (``cox.hooks.trust``): a hook added or changed later waits for trust again.
Everything shown is made safe for the terminal first (a command may hold escapes).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from cox.actors.mcp.launch import show_text


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "hooks", help="hooks: list those in effect (and a project's waiting for trust), trust a project's")
    sub = parser.add_subparsers(dest="hooks_command", required=True)
    listing = sub.add_parser("list", help="every hook in effect with its source, and a project's untrusted ones")
    listing.add_argument("--cwd", default=None, help="the workspace folder (default: the current one)")
    trust = sub.add_parser("trust", help="show a project's hooks and accept them (asked first)")
    trust.add_argument("--cwd", default=None, help="the workspace folder (default: the current one)")
    trust.add_argument("--yes", action="store_true", help="accept without asking (needed without a terminal)")
    return parser


def _describe(obj: Any, source: str) -> list[str]:
    from cox.hooks.spec import parse_hooks

    specs, warnings = parse_hooks(obj, source)
    lines = [f"  {s.event:<18} {show_text(s.matcher or '*'):<16} {show_text(s.command)}  (timeout {s.timeout_s:g} s)"
             for s in specs]
    return lines + [f"  skipped: {show_text(w)}" for w in warnings]


def _loaded(cwd: Path) -> Any:
    from cox.actors.store.layout import cox_home
    from cox.config import load_config
    from cox.hooks.sources import load

    home = cox_home()
    config = load_config(cwd, cox_home=home)
    return load(config.hooks, cwd=cwd, user_home=Path.home(), cox_home=home, env=os.environ,
                user_config=str(home / "config.toml")), home


def run(args: argparse.Namespace) -> int:
    from cox.config import ConfigError

    cwd = Path(args.cwd or os.getcwd()).resolve()
    try:
        loaded, home = _loaded(cwd)
    except ConfigError as exc:
        print(f"cox hooks: config error: {exc}", file=sys.stderr)
        return 1
    if args.hooks_command == "list":
        return _list(loaded)
    return _trust(loaded, home, yes=args.yes)


def _list(loaded: Any) -> int:
    if not loaded.specs and not loaded.project:
        print("no hooks are configured (cox's [hooks], ~/.claude/settings.json, or a trusted project file)")
    by_source: dict[str, list[Any]] = {}
    for spec in loaded.specs:
        by_source.setdefault(spec.source, []).append(spec)
    for source, specs in by_source.items():
        print(f"{show_text(source)}:")
        for s in specs:
            print(f"  {s.event:<18} {show_text(s.matcher or '*'):<16} {show_text(s.command)}  (timeout {s.timeout_s:g} s)")
    for project in loaded.project:
        if not project.trusted:
            print(f"{show_text(project.path)} (not trusted: these do not run; `cox hooks trust` accepts them):")
            for line in _describe(project.hooks, project.path):
                print(line)
    if not loaded.sandbox:
        print("hooks run unconfined ([hooks] sandbox = false in your config)")
    for warning in loaded.warnings:
        if "not trusted" not in warning:
            print(f"warning: {show_text(warning)}", file=sys.stderr)
    return 0


def _trust(loaded: Any, home: Path, *, yes: bool) -> int:
    from cox.hooks.trust import HookTrust

    waiting = [p for p in loaded.project if not p.trusted]
    if not waiting:
        print("no project hooks wait for trust")
        return 0
    store = HookTrust(home)
    for project in waiting:
        print(f"{show_text(project.path)} asks to run:")
        for line in _describe(project.hooks, project.path):
            print(line)
        from cox.hooks.trust import named_files

        for script in named_files(project.hooks, project.root):
            print(f"  script (its content is part of what you trust): {show_text(script)}")
        print(f"  sandbox: {'as a bash call of the session' if loaded.sandbox else 'none ([hooks] sandbox = false)'}")
        if not yes:
            if not sys.stdin.isatty():
                print(f"cox hooks trust: {show_text(project.path)} is a file of the repository; nothing was "
                      "trusted. Run this on a terminal to answer, or pass --yes to trust the hooks shown above",
                      file=sys.stderr)
                return 2
            print("trust these hooks? [y/N] ", end="", file=sys.stderr, flush=True)
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                print(f"the hooks of {show_text(project.path)} stay untrusted", file=sys.stderr)
                return 1
        store.accept(project.path, project.hooks, project.root)
        print(f"trusted the hooks of {show_text(project.path)}")
    return 0
