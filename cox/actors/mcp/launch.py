"""A server's launch: exactly what cox would start, or connect to, for it — what the person trusts
before a repository's server may run at all.

A project server (``.mcp.json``) is never started, and no request is sent to it, before the
person ran ``cox mcp trust <name>`` and agreed to *this* launch: for a stdio server the command,
its arguments, the folder it runs in, and the names of its environment variables with a hash of
their values; for an HTTP server the URL and the header names. The trust store keeps the
:func:`launch_record` of each launch the person accepted under its :func:`launch_key`, so a
launch that changed afterwards (another command, an added argument, a new environment value, the
same ``.mcp.json`` in another folder) is a launch nobody accepted, and the server is not started
again until it is trusted again. Values are hashed, never stored: the trust file holds no
secrets the ``.mcp.json`` may carry.

:func:`describe` is what ``cox mcp trust`` shows before it asks: every argument quoted as a
shell would need it, with control and bidi characters written as escapes (``$'\\x1b[2J'``), so
what the person reads is what would run.

:func:`sandbox_for` decides which sandbox a server's process gets: a repository's server always
gets one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import McpServerSpec, Origin

if TYPE_CHECKING:
    from cox.policy.sandbox import SandboxPolicy

__all__ = ["describe", "launch_cwd", "launch_key", "launch_record", "sandbox_for", "show_arg", "show_text"]


def launch_cwd(spec: McpServerSpec, workspace: Path) -> str:
    """The folder a stdio server runs in: its own ``cwd`` (a project's is absolute by now,
    ``config.py``), else the session's workspace."""
    return str(Path(spec.cwd) if spec.cwd else Path(workspace).absolute())


def sandbox_for(spec: McpServerSpec, session: SandboxPolicy | None, workspace: Path) -> SandboxPolicy | None:
    """The sandbox ``spec``'s process runs in (``None``: none), given the session's.

    A server the user configured gets the session's sandbox unless its own config says
    ``sandbox = false`` (the user's call). A server a repository brought always runs inside one,
    whatever its entry or the session says: the session's sandbox, or, where the session has
    none or chose ``danger-full-access``, ``workspace-write`` on the workspace — the person
    trusted a command line, not everything that program might do. (Without a working
    bubblewrap such a server then does not start: the wrapping fails closed.)"""
    if spec.url:
        return None
    if spec.origin is not Origin.PROJECT:
        return session if spec.sandbox else None
    from cox.policy.sandbox import SandboxPolicy
    from cox.protocol.types import SandboxMode

    if session is None:
        return SandboxPolicy(SandboxMode.WORKSPACE_WRITE, (Path(workspace).absolute(),), True)
    if session.mode is SandboxMode.DANGER_FULL_ACCESS:
        return dataclasses.replace(session, mode=SandboxMode.WORKSPACE_WRITE)
    return session


def _digest(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def launch_record(spec: McpServerSpec, workspace: Path) -> dict[str, Any]:
    """What decides which program runs (or which endpoint is reached) for ``spec``, as JSON."""
    if spec.relay is not None:
        return {"transport": "sdk", "name": spec.name}
    if spec.url:
        return {"transport": spec.transport, "url": spec.url, "headers": sorted(spec.headers)}
    return {"transport": "stdio", "command": spec.command, "args": list(spec.args),
            "cwd": launch_cwd(spec, workspace), "env": sorted(spec.env), "env_values": _digest(dict(spec.env))}


def launch_key(record: dict[str, Any]) -> str:
    """The record's identity: equal keys, equal launches."""
    return _digest(record)


def show_text(text: str) -> str:
    """``text`` as one line safe for a terminal: printable characters as they are, anything else
    (controls, newlines, escapes, bidi overrides) as a backslash escape."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def show_arg(arg: str) -> str:
    """One argument as a shell would read it back: ``shlex.quote`` for printable text, bash's
    ``$'…'`` quoting with escapes when it holds anything a terminal would interpret."""
    if all(ch.isprintable() for ch in arg):
        return shlex.quote(arg)
    return "$'" + show_text(arg).replace("'", "\\'") + "'"


def describe(spec: McpServerSpec, workspace: Path) -> list[str]:
    """The lines ``cox mcp trust`` shows about the launch it asks for."""
    record = launch_record(spec, workspace)
    lines = [f"mcp server '{show_text(spec.name)}', from {show_text(spec.source or str(spec.origin))}"]
    if record["transport"] == "http":
        lines.append(f"  connects to: {show_text(str(spec.url))}")
        if spec.headers:
            lines.append(f"  headers:     {', '.join(show_text(h) for h in sorted(spec.headers))}")
        return lines
    lines.append(f"  runs:        {' '.join(show_arg(a) for a in [str(spec.command), *spec.args])}")
    lines.append(f"  in:          {show_arg(record['cwd'])}")
    for name in sorted(spec.env):
        lines.append(f"  env:         {show_arg(name)}={show_arg(spec.env[name])}")
    return lines
