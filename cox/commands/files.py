"""Command files: where they are, what their names are, and what their front matter says.

Claude Code's layout, and cox's own beside it: every ``*.md`` under ``.cox/commands/`` and
``.claude/commands/`` of the workspace, and under ``$COX_HOME/commands/`` and
``$CLAUDE_CONFIG_DIR/commands/`` (else ``~/.claude/commands/``) of the user; a file in a
sub-folder gets the folder as its namespace (``frontend/component.md`` is
``/frontend:component``). Front matter is optional and read by cox's strict reader
(:mod:`cox.agents.frontmatter`): ``description``, ``argument-hint``, ``allowed-tools``, ``model``.

Who wins a name: a built-in command always; then a skill of that name, as in Claude Code; then
the user's own files over a repository's
(a cloned repository must not put its prompt behind a name the person typed for their own),
and within one owner cox's folder over Claude's. What loses is listed with the reason, as is a
file that cannot be read or parsed, a repository's file that resolves outside the workspace
(a linked file, or a linked commands folder), and one a Read deny rule covers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from cox.slim import dataclass

__all__ = ["BUILTIN", "RESERVED", "Catalog", "Command", "Skipped", "allowed_rules", "load_commands"]

BUILTIN = ("mode", "compact", "rewind", "model", "cost", "agents", "init", "clear", "help", "quit")
"""The built-in slash commands, as the TUI completes them (``cox.surfaces.tui.app.COMMANDS``)."""
RESERVED = (*BUILTIN, "exit")
"""Names no command file may take."""

LIMIT_BYTES = 64 * 1024
"""A command file's characters read; a longer one is cut."""

Scope = Literal["user", "project", "mcp"]
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_HINT = re.compile(r"^argument-hint:[ \t]*(\[.*)$", re.MULTILINE)


def _quoted_hint(m: re.Match[str]) -> str:
    """Claude Code's ``argument-hint: [file] [focus]`` is no YAML list: it is read as the text."""
    value = m.group(1).rstrip()
    return "argument-hint: '" + value.replace("'", "''") + "'"


@dataclass(frozen=True, slots=True)
class Command:
    """One custom command. ``allowed_tools``: the front matter's list in cox's rule spelling
    (None: not given); a user's own command pre-approves them for the turn it starts
    (:attr:`grants`). ``source``: where it came from, as ``cox ext list`` shows it."""

    name: str
    description: str
    body: str
    scope: Scope
    source: str
    argument_hint: str = ""
    allowed_tools: tuple[str, ...] | None = None
    model: str | None = None
    path: Path | None = None
    prompt: Any = None
    """An MCP prompt's (server, name, argument names); None for a file's command."""

    @property
    def grants(self) -> list[str] | None:
        """What the turn this command starts pre-approves: the ``allowed-tools`` of the person's
        own file, as in Claude Code. A repository's file only narrows (its ``!`…``` lines), never
        grants: a cloned repository may not approve calls for the model, as its settings may not."""
        return list(self.allowed_tools) if self.scope == "user" and self.allowed_tools else None


@dataclass(frozen=True, slots=True)
class Skipped:
    name: str
    source: str
    reason: str


@dataclass
class Catalog:
    commands: dict[str, Command] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)

    def add(self, command: Command, reserved: Iterable[str] = (), skills: Mapping[str, str] | None = None) -> None:
        """Adds ``command`` unless a built-in, a skill (``skills``: name → its file; a skill wins a
        shared name, as in Claude Code) or an earlier command has its name."""
        if command.name in set(reserved):
            self.skipped.append(Skipped(command.name, command.source, f"/{command.name} is a built-in command"))
        elif skills and command.name in skills:
            self.skipped.append(Skipped(command.name, command.source,
                                        f"the skill {command.name!r} ({skills[command.name]}) has this name, "
                                        "and a skill wins"))
        elif command.name in self.commands:
            first = self.commands[command.name]
            self.skipped.append(Skipped(command.name, command.source,
                                        f"/{command.name} is already {first.source}'s"))
        else:
            self.commands[command.name] = command

    def names(self) -> list[str]:
        return sorted(self.commands)


def folders(cwd: Path, home: Path, cox_home: Path, env: Mapping[str, str]) -> list[tuple[Path, Scope]]:
    """The command folders, the winning owner first."""
    from cox.config.readfile import user_claude_dir

    claude = user_claude_dir(home, env)
    return [(cox_home / "commands", "user"), (claude / "commands", "user"),
            (cwd / ".cox" / "commands", "project"), (cwd / ".claude" / "commands", "project")]


def load_commands(cwd: Path, *, home: Path | None = None, cox_home: Path | None = None,
                  env: Mapping[str, str] | None = None, reserved: Iterable[str] = RESERVED,
                  reads: Any = None, skills: Mapping[str, str] | None = None) -> Catalog:
    """Every command file of the user and of the workspace (see the module's docstring).
    ``reads``: the session's Read deny rules (``Engine.read_guard``): a file they cover is
    skipped, since its text would go to the model. ``skills``: the skills the person may start
    (name → file): a command of the same name is skipped, since the skill wins."""
    env = os.environ if env is None else env
    home = home or Path.home()
    if cox_home is None:
        from cox.actors.store.layout import cox_home as default_home

        cox_home = default_home(dict(env))
    reserved = tuple(reserved)
    catalog = Catalog()
    for folder, scope in folders(cwd, home, cox_home, env):
        for path in _md_files(folder):
            got = read_command(path, folder, scope, inside=cwd if scope == "project" else None, reads=reads)
            if isinstance(got, Skipped):
                catalog.skipped.append(got)
            else:
                catalog.add(got, reserved, skills)
    return catalog


def _md_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):  # never follows a linked folder
        dirnames.sort()
        out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".md")]
    return out


def read_command(path: Path, folder: Path, scope: Scope, *, inside: Path | None = None,
                 reads: Any = None) -> Command | Skipped:
    """One file's command. ``inside``: the folder a repository's file must resolve inside (its
    workspace: neither the file nor a linked commands folder may lead out of it)."""
    from cox.agents.frontmatter import Block, FrontMatterError, split

    rel = path.relative_to(folder).with_suffix("")
    parts = list(rel.parts)
    name = ":".join(parts)
    source = str(path)
    if not all(_SEGMENT.match(p) for p in parts):
        return Skipped(name, source, "a command name is letters, digits, '_', '.' and '-' (one word per folder)")
    real = os.path.realpath(path)
    if inside is not None and not real.startswith(os.path.realpath(inside).rstrip("/") + "/"):
        return Skipped(name, source, f"it resolves to {real}, outside the workspace")
    if reads is not None and (reads.refuses(str(path)) or reads.refuses(real)):
        return Skipped(name, source, "a Read deny rule covers it")
    try:
        with open(real, encoding="utf-8", errors="replace") as fh:
            text = fh.read(LIMIT_BYTES)
    except OSError as exc:
        return Skipped(name, source, f"it could not be read ({exc.strerror})")
    fields: dict[str, Any] = {}
    body = text.strip()
    if text.removeprefix("\ufeff").startswith("---"):
        try:
            raw, body = split(_HINT.sub(_quoted_hint, text, count=1))
        except FrontMatterError as exc:
            return Skipped(name, source, f"its front matter is not valid: {exc}")
        fields = {k: v for k, (_, v) in raw.items()}
    for key, value in fields.items():
        if isinstance(value, Block) and key in ("description", "argument-hint", "allowed-tools", "model"):
            return Skipped(name, source, f"line {value.line}: '{key}' must be a text or a list")
    description = _text(fields.get("description")) or _first_line(body)
    hint = fields.get("argument-hint")
    hint_text = _text(hint)
    allowed = fields.get("allowed-tools")
    tools: tuple[str, ...] | None = None
    if allowed is not None:
        got = allowed_rules(allowed)
        if isinstance(got, str):
            return Skipped(name, source, got)
        tools = got
    return Command(name=name, description=description, body=body, scope=scope, source=source,
                   argument_hint=hint_text, allowed_tools=tools, model=_text(fields.get("model")) or None, path=path)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(value)
    return str(value).strip() if isinstance(value, str) else ""


def _first_line(body: str) -> str:
    line = next((x.strip().lstrip("#").strip() for x in body.splitlines() if x.strip()), "")
    return line if len(line) <= 80 else line[:79] + "…"


def allowed_rules(value: Any) -> tuple[str, ...] | str:
    """``allowed-tools`` (``Bash(git add:*), Read`` or a list) in cox's rule spelling, or why not."""
    from cox.config.claude import translate
    from cox.policy.rules import parse_rule

    items = value if isinstance(value, list) else _split_commas(str(value))
    out: list[str] = []
    for item in items:
        rule, why = translate(item, "allow")
        if rule is None:
            if why:
                return f"allowed-tools {item!r}: {why}"
            continue  # a Claude tool cox does not have: it allows nothing here
        try:
            parse_rule(rule, "allowed-tools", home="/", roots=["/"])
        except ValueError as exc:
            return f"allowed-tools {item!r} is not a rule: {exc}"
        out.append(rule)
    return tuple(out)


def _split_commas(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for c in text:
        if c == "," and depth == 0:
            items.append(current.strip())
            current = ""
            continue
        depth += (c == "(") - (c == ")")
        current += c
    items.append(current.strip())
    return [i for i in items if i]
