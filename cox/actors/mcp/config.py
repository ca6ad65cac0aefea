"""Where MCP servers come from: the user config, ``~/.claude.json`` and the project's ``.mcp.json``.

Each server keeps its origin because trust depends on it: a server the user configured is
started as configured and its tools are trusted on first connect; one a repository brought along
(``.mcp.json``) is not started at all until the person ran ``cox mcp trust <name>`` (``launch.py``),
and its tools then stay pending until trusted too. When two sources name the same server the user
config wins over ``~/.claude.json``, which wins over the project (a checked-out repository must not
be able to replace a server the user set up). A project ``.cox/config.toml`` cannot declare servers
at all (the config loader drops its ``[mcp.servers]`` with a warning).

A repository cannot loosen how its server runs: a project server always runs inside the sandbox,
so ``"sandbox": false`` (or any other field that would widen what the server may do) is ignored,
with a warning naming the server and the field (``McpServerSpec.warnings``, which the surfaces
print). A relative ``cwd`` of a project server is taken relative to the folder of its
``.mcp.json``, so what the person trusted is the folder it really runs in.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import field
from enum import StrEnum
from pathlib import Path
from typing import Any

from cox.config.schema import McpConfig, McpServerConfig
from cox.slim import dataclass

__all__ = ["McpServerSpec", "Origin", "load_servers", "parse_servers"]

log = logging.getLogger(__name__)


class Origin(StrEnum):
    """Which file declared a server; decides whether it is trusted without asking."""

    USER = "user"
    CLAUDE = "claude"
    PROJECT = "project"


@dataclass(frozen=True)
class McpServerSpec:
    """One server as cox runs it: stdio (``command``), streamable HTTP (``url``) or, for an entry of
    ``"type": "sse"``, MCP's older HTTP+SSE transport (``url`` with ``sse``)."""

    name: str
    origin: Origin
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    sandbox: bool = True
    source: str = ""
    """The file that declared it (shown by ``cox mcp trust``)."""
    warnings: tuple[str, ...] = field(default=(), compare=False)
    """What was ignored of its entry, one sentence each (``"sandbox": false`` from a project)."""
    relay: Any = field(default=None, compare=False)
    """An in-process server reached through the caller (the Claude Agent SDK's ``type: "sdk"``
    servers, over its control channel): an object whose ``transport(closed)`` is the async
    context manager yielding the session's streams. No process is started; nothing is cached."""
    sse: bool = False
    """``url`` speaks the HTTP+SSE transport (an event stream plus a POST endpoint it names)."""

    @property
    def transport(self) -> str:
        if self.relay is not None:
            return "sdk"
        return ("sse" if self.sse else "http") if self.url else "stdio"

    @classmethod
    def from_config(cls, name: str, cfg: McpServerConfig, origin: Origin = Origin.USER,
                    source: str = "") -> McpServerSpec:
        return cls(name=name, origin=origin, command=cfg.command, args=tuple(cfg.args), env=dict(cfg.env),
                   cwd=cfg.cwd, url=cfg.url, headers=dict(cfg.headers), sandbox=cfg.sandbox, source=source)


WIDENING_FIELDS = ("sandbox", "sandboxMode", "sandbox_mode", "writableRoots", "writable_roots", "network",
                   "dangerouslySkipPermissions", "alwaysAllow", "autoApprove", "trust", "trusted")
"""Fields of a server entry that would loosen its sandbox or its approvals. From a project source
each is ignored with a warning (cox reads only ``sandbox`` of them, from the user's own files)."""


def _widening(name: str, entry: dict[str, Any], source: str) -> tuple[str, ...]:
    """The warnings for the widening fields of a project server's ``entry``."""
    out = []
    for key in WIDENING_FIELDS:
        if key not in entry or (key == "sandbox" and entry[key] is True):
            continue
        out.append(f"{source}: mcp server {name!r}: ignored {key!r}: a project's server always runs inside "
                   "the sandbox, with the session's approvals")
    return tuple(out)


def _valid_name(name: str) -> bool:
    # The name becomes part of a tool name (mcp__<server>__<tool>) and of a registry path.
    return bool(name) and "/" not in name and "__" not in name


def parse_servers(raw: Any, origin: Origin, source: str) -> dict[str, McpServerSpec]:
    """Servers from a Claude Code style ``mcpServers`` mapping. Bad entries are skipped with a
    warning: one broken server must not stop the others (or cox) from starting."""
    out: dict[str, McpServerSpec] = {}
    if not isinstance(raw, dict):
        if raw is not None:
            log.warning("%s: mcpServers is not an object; ignored", source)
        return out
    for name, entry in raw.items():
        if not isinstance(name, str) or not _valid_name(name) or not isinstance(entry, dict):
            log.warning("%s: mcp server %r ignored: bad name or entry", source, name)
            continue
        kind = entry.get("type")
        command, url = entry.get("command"), entry.get("url")
        if kind == "sse" and not isinstance(url, str):
            log.warning("%s: mcp server %r of type sse has no url; ignored", source, name)
            continue
        if not isinstance(command, str) and not isinstance(url, str):
            log.warning("%s: mcp server %r has neither command nor url; ignored", source, name)
            continue
        args = entry.get("args") or []
        env = entry.get("env") or {}
        headers = entry.get("headers") or {}
        if not (isinstance(args, list) and isinstance(env, dict) and isinstance(headers, dict)):
            log.warning("%s: mcp server %r: args/env/headers have the wrong type; ignored", source, name)
            continue
        cwd = entry.get("cwd") if isinstance(entry.get("cwd"), str) else None
        warnings: tuple[str, ...] = ()
        sandbox = bool(entry.get("sandbox", True))
        if origin is Origin.PROJECT:
            warnings = _widening(name, entry, source)
            for text in warnings:  # the surfaces print them (a warning here would print twice)
                log.info("%s", text)
            sandbox = True
            if cwd is not None:
                cwd = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(source)), cwd))
        out[name] = McpServerSpec(
            name=name, origin=origin,
            command=command if isinstance(command, str) else None,
            args=tuple(str(a) for a in args),
            env={str(k): str(v) for k, v in env.items()},
            cwd=cwd,
            url=url if isinstance(url, str) and not isinstance(command, str) else None,
            headers={str(k): str(v) for k, v in headers.items()},
            sandbox=sandbox, source=source, warnings=warnings, sse=kind == "sse",
        )
    return out


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        log.warning("%s: not readable as JSON (%s); its MCP servers are ignored", path, err)
        return None


def load_servers(mcp: McpConfig, cwd: Path, *, home: Path | None = None,
                 flagged: Mapping[str, McpServerSpec] | None = None, strict: bool = False) -> dict[str, McpServerSpec]:
    """Every configured server, by name: user config, then ``~/.claude.json``, then ``<cwd>/.mcp.json``
    (earlier sources win on a name clash). ``home`` defaults to ``Path.home()``. ``flagged``: the
    servers of ``--mcp-config`` (``cox.surfaces.config_flags``), which come first; ``strict``
    (``--strict-mcp-config``): only those, no file is read."""
    servers: dict[str, McpServerSpec] = dict(flagged or {})
    if strict:
        return servers
    from . import server_files

    home = Path.home() if home is None else home
    project_path, claude_path = server_files(cwd, home)
    project = _read_json(project_path)
    claude = _read_json(claude_path)
    layers = [
        {n: McpServerSpec.from_config(n, c, Origin.USER, "your cox config") for n, c in mcp.servers.items()
         if _valid_name(n)},
        parse_servers(claude.get("mcpServers") if isinstance(claude, dict) else None, Origin.CLAUDE,
                      str(claude_path)),
        parse_servers(project.get("mcpServers") if isinstance(project, dict) else None, Origin.PROJECT,
                      str(project_path)),
    ]
    for layer in layers:
        for name, spec in layer.items():
            if name in servers:
                log.warning("mcp server %r from %s is shadowed by the one from %s", name, spec.origin,
                            servers[name].origin)
                continue
            servers[name] = spec
    return servers
