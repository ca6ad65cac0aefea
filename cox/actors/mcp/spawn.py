"""How cox spawns a third-party stdio server (an MCP server, a language server): the child
environment allowlist and the sandbox wrap of its command line.

Both kinds of server are programs cox did not write, speaking over pipes for the whole session,
so they get exactly the same treatment: the environment keeps only :data:`ENV_ALLOWLIST` (plus
``LC_*`` and the server's own ``env``), so no API key of cox's leaks into them, and the command
runs inside the sandbox a shell command gets unless the session chose ``danger-full-access``.
No SDK is imported here: the LSP actors use it without the MCP SDK.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from cox.policy.sandbox import SandboxPolicy, bwrap_argv, fail_closed_sentence, harden, read_deny_patterns
from cox.protocol.types import SandboxMode

__all__ = ["ENV_ALLOWLIST", "NoSandbox", "child_env", "sandbox_argv"]

ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "TERM", "TMPDIR", "USER")
"""What a stdio server inherits from cox's environment (plus ``LC_*`` and its own ``env``): no
API keys or tokens of cox's leak into a third-party process."""


class NoSandbox(RuntimeError):
    """There is no working sandbox here for a server that should have one: it is not started."""


def child_env(own: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a stdio server: the allowlisted variables of ``environ`` plus ``own``."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if k in ENV_ALLOWLIST or k.startswith("LC_")}
    env.update(own)
    return env


def sandbox_argv(policy: SandboxPolicy, argv: list[str], *, cwd: Path) -> list[str]:
    """``argv`` inside the sandbox a shell command gets (masks, read-only metadata, no
    capabilities); bare under ``danger-full-access``. Raises :class:`NoSandbox` (its message is
    the sentence to show) when there is no working sandbox here."""
    if policy.mode is SandboxMode.DANGER_FULL_ACCESS:
        return argv
    from cox.actors.store.layout import cox_home
    from cox.actors.tools.shell_env import sandbox_status

    ok, why = sandbox_status()
    if not ok:
        raise NoSandbox(fail_closed_sentence(why, "not started"))
    full = harden(policy, cwd=cwd, home=Path.home(), cox_home=cox_home(), read_deny=read_deny_patterns(()),
                  visible=[shutil.which(argv[0]) or argv[0], *argv[1:]] if argv else ())
    return bwrap_argv(full, argv, cwd=cwd)
