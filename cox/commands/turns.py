"""A session's slash commands beyond the built-in ones: what a surface asks to list, complete
and turn a typed ``/name args`` line into the user turn it submits (the TUI, ``--plain`` and
``cox run -p`` share this, so a command means the same everywhere)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from .expand import CommandError, expand, parse_line
from .files import RESERVED, Catalog, Command

__all__ = ["CommandError", "Expanded", "SessionCommands", "open_commands"]


class Expanded(NamedTuple):
    """A typed ``/name args`` made a turn: its text, the model the front matter names (a surface
    switches to it first, as ``/model NAME`` does) and the allow rules the turn pre-approves
    (``UserTurn.allow``; None: none)."""

    text: str
    model: str | None = None
    allow: list[str] | None = None


class SessionCommands:
    def __init__(self, catalog: Catalog, cwd: Path, run: Any = None, prompts: Any = None) -> None:
        self.catalog = catalog
        self.cwd = cwd
        self.run = run
        self.prompts = prompts
        """Gets an MCP prompt's messages (``cox.commands.mcp_prompts``); None: no MCP server."""

    def names(self) -> list[str]:
        return self.catalog.names()

    def help_lines(self) -> list[str]:
        out = []
        for c in self.catalog.commands.values():
            hint = f" {c.argument_hint}" if c.argument_hint else ""
            out.append(f"/{c.name}{hint} — {c.description or '(no description)'} ({c.scope})")
        return out

    def load_prompts(self, timeout: float = 5.0) -> None:
        """Add the MCP servers' prompts to the listing (it waits for the servers: call it from
        a thread of its own, or where waiting is fine)."""
        if self.prompts is not None:
            from .mcp_prompts import add_prompts

            grown = Catalog(dict(self.catalog.commands), list(self.catalog.skipped))
            add_prompts(grown, self.prompts.manager, timeout=timeout)
            self.catalog = grown  # swapped whole: a reader on another thread sees one or the other

    def get(self, name: str) -> Command | None:
        return self.catalog.commands.get(name)

    def turn(self, line: str) -> str | None:
        """The user turn for ``line``: ``/init``'s prompt, or a custom command expanded; None when
        the line names neither (it goes to the model as typed). Raises :class:`CommandError`."""
        got = self.expand(line)
        return got[0] if got is not None else None

    def expand(self, line: str) -> Expanded | None:
        """The turn for ``line`` (:class:`Expanded`), None when it names no command."""
        parsed = parse_line(line)
        if parsed is None:
            return None
        name, arguments = parsed
        if name == "init":
            from .init import init_prompt

            return Expanded(init_prompt(self.cwd))
        command = self.catalog.commands.get(name)
        if command is None and name.startswith("mcp__") and self.prompts is not None:
            command = self.prompts.resolve(name)
        if command is None:
            return None
        if command.prompt is not None:
            if self.prompts is None:
                raise CommandError(f"/{name}: its MCP server is not available in this session")
            text: str = self.prompts(command, arguments)
            return Expanded(text)
        return Expanded(expand(command, arguments, self.run), command.model, command.grants)


def open_commands(cwd: Path, settings: Any, engine: Any, tools: dict[str, Any], *, ask: Any = None,
                  mcp: Any = None, hooks: Any = None, reserved: Iterable[str] = RESERVED,
                  skills: Any = None) -> SessionCommands:
    """The session's commands: its command files, its MCP servers' prompts, and a runner for
    ``!`…``` lines bound to its bash tool, engine and settings. ``skills`` (``cox.agents.skills``):
    a command a skill the person may start shares a name with is skipped (the skill wins)."""
    from .bang import BangRunner
    from .files import load_commands

    reads = engine.read_guard() if hasattr(engine, "read_guard") else None
    named = {s.name: str(s.path) for s in skills.by_name.values() if s.user_invocable} if skills is not None else None
    catalog = load_commands(cwd, home=settings.home, cox_home=settings.cox_home, reserved=reserved, reads=reads,
                            skills=named)
    prompts = None
    if mcp is not None:
        from .mcp_prompts import PromptGetter

        prompts = PromptGetter(mcp)
    bash = tools.get("bash")
    run = BangRunner(bash, engine, settings, ask, hooks) if bash is not None else None
    return SessionCommands(catalog, cwd, run, prompts)
