"""MCP prompts as slash commands: ``/mcp__server__prompt args``, as in Claude Code.

A server's ``prompts/list`` gives the commands (each prompt's arguments become its hint);
``prompts/get`` with the typed words mapped onto the prompt's arguments in order (``name=value``
words name one; the last argument takes the rest of the line) gives messages, which become
the user turn. Only a server whose tools would be usable is asked: a project server before
``cox mcp trust``, or one whose tools changed, is not (``resources.server_trusted``). A prompt
is fetched when it is used, so a command works even when the listing was not ready when the
session opened; the listing (for ``/help``, Tab and ``cox ext list``) is made on demand.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .expand import CommandError, words
from .files import RESERVED, Catalog, Command

__all__ = ["PromptGetter", "add_prompts", "fetch_prompts", "prompt_commands"]

_NAMED = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)=(.*)$", re.DOTALL)


def prompt_commands(server: str, prompts: Iterable[Any]) -> list[Command]:
    out: list[Command] = []
    for p in prompts:
        args = list(getattr(p, "arguments", None) or [])
        hint = " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in args)
        out.append(Command(name=f"mcp__{server}__{p.name}", description=(p.description or p.title or "").strip(),
                           body="", scope="mcp", source=f"mcp server {server}", argument_hint=hint,
                           prompt=(server, p.name, tuple((a.name, bool(a.required)) for a in args))))
    return out


def _trusted_servers(manager: Any) -> list[str]:
    from cox.actors.mcp.resources import server_trusted

    return [s for s in manager.servers if s not in manager.untrusted and server_trusted(manager, s)]


def add_prompts(catalog: Catalog, manager: Any, reserved: Iterable[str] = RESERVED, timeout: float = 5.0) -> None:
    """Each trusted server's prompts as commands; a server that cannot list is skipped, named."""
    from .files import Skipped

    for server in _trusted_servers(manager):
        try:
            conn = manager.connection(server, timeout=timeout)
            prompts = conn.list_prompts(timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - one failing server is a line in the listing
            catalog.skipped.append(Skipped(f"mcp__{server}__*", f"mcp server {server}", f"prompts/list failed: {exc}"))
            continue
        for command in prompt_commands(server, prompts):
            catalog.add(command, reserved)


def fetch_prompts(spec: Any, *, startup_timeout_s: float = 30.0, cwd: Any = None, sandbox: Any = None) -> list[Any]:
    """Start ``spec`` once, outside any session (``cox ext list``), and return its prompts; the
    process is killed before this returns. A project server whose launch is not trusted is not
    started (the connection refuses it, as ``fetch_tools`` does)."""
    from cox.actors.mcp.server import Connection
    from cox.actors.mcp.state import McpServerCrashed, ServerSettings

    conn = Connection(spec, ServerSettings(startup_timeout_s=startup_timeout_s, cwd=cwd, sandbox=sandbox),
                      lambda _error: None)
    conn.start()
    try:
        try:
            conn.ready.result(timeout=startup_timeout_s + 2.0)
        except TimeoutError:
            raise McpServerCrashed(f"mcp server '{spec.name}' did not start within {startup_timeout_s:g}s") from None
        prompts: list[Any] = conn.list_prompts(timeout=startup_timeout_s)
        return prompts
    finally:
        conn.close()


class PromptGetter:
    """Gets a prompt and renders its messages as the user turn."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    def resolve(self, name: str) -> Command | None:
        """``mcp__server__prompt`` found by asking its server (the listing may not be loaded)."""
        for server in self.manager.servers:
            prefix = f"mcp__{server}__"
            if not name.startswith(prefix):
                continue
            if server not in _trusted_servers(self.manager):
                raise CommandError(f"/{name}: mcp server '{server}' is not trusted yet; run: cox mcp trust {server}")
            try:
                prompts = self._conn(server).list_prompts(timeout=self.manager.settings.timeout_s)
            except Exception as exc:  # noqa: BLE001 - said to the person
                raise CommandError(f"/{name}: mcp server '{server}' could not list its prompts ({exc})") from None
            for command in prompt_commands(server, prompts):
                if command.name == name:
                    return command
        return None

    def _conn(self, server: str) -> Any:
        return self.manager.connection(server, timeout=self.manager.settings.startup_timeout_s)

    def __call__(self, command: Command, arguments: str) -> str:
        server, prompt, spec = command.prompt
        values = map_arguments(command.name, spec, arguments)
        try:
            result = self._conn(server).get_prompt(prompt, values, timeout=self.manager.settings.timeout_s)
        except Exception as exc:  # noqa: BLE001 - said to the person
            raise CommandError(f"/{command.name}: prompts/get failed ({exc})") from None
        return render(getattr(result, "messages", None) or [])


def map_arguments(name: str, spec: tuple[tuple[str, bool], ...], arguments: str) -> dict[str, str]:
    """The typed words onto the prompt's arguments: ``key=value`` names one, the others fill the
    remaining arguments in order, the last taking every word left."""
    names = [n for n, _ in spec]
    values: dict[str, str] = {}
    loose: list[str] = []
    for word in words(arguments):
        m = _NAMED.match(word)
        if m and m.group(1) in names:
            values[m.group(1)] = m.group(2)
        else:
            loose.append(word)
    free = [n for n in names if n not in values]
    for i, arg in enumerate(free):
        if i >= len(loose):
            break
        values[arg] = " ".join(loose[i:]) if i == len(free) - 1 else loose[i]
    if len(loose) > len(free) and not free:
        raise CommandError(f"/{name} takes {', '.join(names) or 'no arguments'}; got {arguments!r}")
    missing = [n for n, required in spec if required and n not in values]
    if missing:
        hint = " ".join(f"<{n}>" if r else f"[{n}]" for n, r in spec)
        raise CommandError(f"/{name} needs {', '.join(missing)}: /{name} {hint}")
    return values


def render(messages: Iterable[Any]) -> str:
    """A prompt's messages as one user turn: their text (a resource's text, an image named), each
    message after the first headed by its role when the roles differ."""
    parts: list[tuple[str, str]] = []
    for msg in messages:
        content = msg.content
        kind = getattr(content, "type", "")
        if kind == "text":
            text = content.text
        elif kind == "resource":
            res = content.resource
            text = getattr(res, "text", None) or f"[resource {res.uri}: binary, not shown]"
        else:
            text = f"[{kind or 'content'} not shown]"
        parts.append((str(msg.role), text))
    if all(role == "user" for role, _ in parts):
        return "\n\n".join(t for _, t in parts)
    return "\n\n".join(f"[{role}]\n{t}" for role, t in parts)
