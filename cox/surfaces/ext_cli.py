"""``cox ext list``: everything that extends cox in this workspace, each with its source — the
hooks (and a repository's waiting for trust), the instruction files sent to the model, the MCP
servers, the agent types (built-in and from agent files, with what was skipped), the skills, and the slash commands — so a person can see at once what runs and what reaches the
model before they start a session. Each part comes from the module that decides it (no second
reading of any file); everything shown is made safe for the terminal.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from cox.actors.mcp.launch import show_arg, show_text
from cox.commands.files import BUILTIN as COMMANDS

__all__ = ["COMMANDS", "add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ext", help="extensions: every hook, instruction file, MCP server, agent and command in effect, with its source")
    sub = parser.add_subparsers(dest="ext_command", required=True)
    listing = sub.add_parser("list", help="every hook, instruction file, MCP server, agent and command, with its source")
    listing.add_argument("--cwd", default=None, help="the workspace folder (default: the current one)")
    return parser


def run(args: argparse.Namespace) -> int:
    from cox.actors.mcp.config import load_servers
    from cox.actors.session.instructions import instruction_files
    from cox.actors.store.layout import cox_home
    from cox.config import ConfigError, load_config
    from cox.hooks.sources import load

    cwd = Path(args.cwd or os.getcwd()).resolve()
    home = cox_home()
    try:
        config = load_config(cwd, cox_home=home)
    except ConfigError as exc:
        print(f"cox ext: config error: {exc}", file=sys.stderr)
        return 1
    hooks = load(config.hooks, cwd=cwd, user_home=Path.home(), cox_home=home, env=os.environ,
                 user_config=str(home / "config.toml"))
    print("hooks:")
    for s in hooks.specs:
        print(f"  {s.event} {show_text(s.matcher or '*')}: {show_text(s.command)}  — {show_text(s.source)}")
    for p in hooks.project:
        if not p.trusted:
            print(f"  (not trusted, not run: {show_text(p.path)}; `cox hooks list` shows them, `cox hooks trust` accepts)")
    if not hooks.specs and not any(not p.trusted for p in hooks.project):
        print("  none")
    print("instruction files (sent to the model, in this order):")
    files = instruction_files(cwd, home=Path.home(), cox_home=home)
    for f in files:
        indent = "  " * (f.depth + 1)
        via = f"  (imported by {show_text(str(f.via))})" if f.via is not None and f.left_out is None else ""
        why = f"  ({'skipped' if f.via is not None else 'left out'}: {show_text(f.left_out)})" if f.left_out else ""
        print(f"{indent}{show_text(f.label)}: {show_text(str(f.path))}{via}{why}")
    if not files:
        print("  none")
    print("mcp servers:")
    try:
        servers = load_servers(config.mcp, cwd)
    except Exception as exc:  # a malformed .mcp.json names itself
        servers = {}
        print(f"  (could not be read: {show_text(str(exc))})")
    for spec in servers.values():
        what = spec.url if spec.url else " ".join(show_arg(a) for a in (spec.command or "", *spec.args))
        print(f"  {show_text(spec.name)} ({spec.origin.value}): {show_text(what or '')}  — {show_text(spec.source)}")
    if not servers:
        print("  none")
    from cox.agents.defs import load_agents

    agents = load_agents(cwd, Path.home(), cox_home=home, parent_model=config.core.model, models=config.models)
    print("agents:")
    for defn in agents.defs.values():
        tools = "all tools" if defn.tools is None else (", ".join(defn.tools) or "no tools")
        model = defn.model or "the parent's model"
        print(f"  {show_text(defn.name)}{' (read-only)' if defn.read_only else ''}: {tools}; {show_text(model)}"
              f"  — {show_text(defn.source)}")
    for warning in agents.warnings:
        print(f"  ({show_text(warning)})")
    _print_skills(cwd, home)
    print("commands (built in): " + " ".join(f"/{c}" for c in COMMANDS))
    _custom_commands(cwd, home, config, servers)
    return 0


def _print_skills(cwd: Path, home: Path) -> None:
    """The skills (``cox.agents.skills``): each with who may start it, the tools it names, its
    source, and what was skipped and why."""
    from cox.agents.skills import grants, load_skills

    skills = load_skills(cwd, Path.home(), cox_home=home)
    print("skills (names and descriptions sent to the model; a body only when loaded):")
    for name, skill in sorted(skills.by_name.items()):
        who = {(True, True): "", (False, True): f" (you only, as /{name})", (True, False): " (the model only)",
               (False, False): " (neither you nor the model can start it)"}[(skill.model_invocable, skill.user_invocable)]
        granted = "pre-approved for the turn that loads it" if grants(skill) else "granted nothing"
        tools = f"; names tools {', '.join(skill.allowed_tools)} ({granted})" if skill.allowed_tools else ""
        print(f"  {show_text(name)}{who}: {show_text(skill.description[:120])}{show_text(tools)}"
              f"  — {show_text(skill.source)}")
    for warning in skills.warnings:
        print(f"  ({show_text(warning)})")
    if not skills.by_name and not skills.warnings:
        print("  none")


def _custom_commands(cwd: Path, home: Path, config: Any, servers: dict[str, Any]) -> None:
    """The command files (user's first: they win a name) and each MCP server's prompts; the
    servers are started once to list them, as ``cox mcp list`` does (an untrusted project
    server is not started)."""
    from cox.agents.skills import load_skills
    from cox.commands.files import load_commands
    from cox.commands.mcp_prompts import fetch_prompts, prompt_commands
    from cox.surfaces.mcp_cli import session_sandbox

    skills = load_skills(cwd, Path.home(), cox_home=home)  # a skill wins a name it shares with a command
    catalog = load_commands(cwd, home=Path.home(), cox_home=home,
                            skills={s.name: str(s.path) for s in skills.by_name.values() if s.user_invocable})
    failed: list[str] = []
    for spec in servers.values():
        try:
            prompts = fetch_prompts(spec, startup_timeout_s=config.mcp.startup_timeout_s, cwd=cwd,
                                    sandbox=session_sandbox(config, cwd))
        except Exception as exc:  # noqa: BLE001 - one line per server that could not list
            failed.append(f"mcp server {spec.name}: prompts not listed ({exc})")
            continue
        for command in prompt_commands(spec.name, prompts):
            catalog.add(command)
    print("commands (custom, and MCP prompts):")
    for c in catalog.commands.values():
        hint = f" {c.argument_hint}" if c.argument_hint else ""
        what = f" — {c.description}" if c.description else ""
        granted = " (pre-approved for its turn)" if c.grants else ""
        extra = (f"; allowed-tools: {', '.join(c.allowed_tools) or 'none'}{granted}" if c.allowed_tools is not None
                 else "") + (
            f"; model: {c.model}" if c.model else "")
        print(f"  /{show_text(c.name)}{show_text(hint)}{show_text(what)}{show_text(extra)}  — {show_text(c.source)}")
    for skipped in catalog.skipped:
        print(f"  (skipped /{show_text(skipped.name)}: {show_text(skipped.reason)}  — {show_text(skipped.source)})")
    for line in failed:
        print(f"  ({show_text(line)})")
    if not catalog.commands and not catalog.skipped and not failed:
        print("  none")
