"""What every LSP tool does first: the file it is about, its language, and a call on that
language's server that survives one death of the server (it is started again once per call).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from cox.actors.tools.base import ToolEnv, ToolInputError, path_denied
from cox.actors.tools.files import display, resolve

from .rpc import RpcClosed
from .servers import language_of

__all__ = ["Target", "target", "use"]

T = TypeVar("T")


class Target:
    """The confined file a call names, as shown to the model, and its language."""

    def __init__(self, path: Path, shown: str, language: str, language_id: str) -> None:
        self.path, self.shown, self.language, self.language_id = path, shown, language, language_id


def target(call_input: dict[str, Any], env: ToolEnv, tool: str) -> Target:
    """Raises ToolInputError (the sentence for the model) for a path no server can take."""
    path = resolve(call_input, env)
    shown = display(path, env)
    rule = path_denied(env, str(call_input.get("path", "")), path)
    if rule is not None:
        raise ToolInputError(f"{shown}: reading it is denied by {rule.text} (from {rule.origin}); "
                             f"{tool} does not show it to a language server")
    if not path.is_file():
        raise ToolInputError(f"{shown} is not a file" if path.exists() else f"{shown} does not exist")
    lang = language_of(path)
    if lang is None:
        raise ToolInputError(f"{tool}: no language server handles {path.suffix or 'extension-less'} files "
                             "(cox knows Python, TypeScript/JavaScript, Rust and Go); run the project's own "
                             "checker with bash instead")
    return Target(path, shown, *lang)


def use(pool: Any, language: str, fn: Callable[[Any], T], *, start: bool) -> T | None:
    """``fn(server)`` on ``language``'s server: None when none runs and this call may not start
    one (``start``; a server this session started before that has died is started again). A
    server is started again at most once per call: one that dies during ``fn`` is restarted and
    ``fn`` runs again, unless this call already restarted it."""
    server = pool.running(language)
    restarted = False
    if server is None:
        if not (start or pool.has_started(language)):
            return None
        restarted = pool.has_started(language)
        server = pool.server(language, start=True, restart=True)
    try:
        return fn(server)
    except RpcClosed:
        if restarted:
            raise
        server = pool.server(language, start=False, restart=True)
        if server is None:
            raise
        return fn(server)
