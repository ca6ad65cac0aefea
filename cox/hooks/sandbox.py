"""The wrapper a hook's ``sh -c`` line runs in: the sandbox a bash call of the same session
gets (``cox.policy.sandbox``: workspace roots writable, ``.git`` metadata, ``.cox`` and
``COX_HOME`` read-only, masks, no capabilities, the session's network setting), computed once
per session. Without a working sandbox a hook does not run (a warning says why), as a bash call
fails closed; ``[hooks] sandbox = false`` in the user config runs hooks unconfined instead.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from cox.protocol.types import SandboxMode

from .run import Wrap


class NoSandbox(Exception):
    pass


def _visible(commands: Sequence[str]) -> list[str]:
    """Absolute paths named in the commands (a script under a home in /tmp must stay visible)."""
    out: list[str] = []
    for command in commands:
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        out += [w for w in words if w.startswith("/") and os.path.exists(w)]
    return out


def hook_wrapper(mode: SandboxMode, roots: Sequence[Path], *, network: bool, cwd: Path, home: Path,
                 cox_home: Path, commands: Sequence[str]) -> Wrap:
    from cox.actors.tools.shell_env import login_environment, sandbox_status
    from cox.policy.sandbox import SandboxPolicy, bwrap_argv, fail_closed_sentence, harden, read_deny_patterns

    if mode is SandboxMode.DANGER_FULL_ACCESS:
        return lambda argv: argv
    ok, why = sandbox_status()
    if not ok:
        sentence = fail_closed_sentence(why, "not run")

        def refuse(argv: list[str]) -> list[str]:
            raise NoSandbox(sentence)
        return refuse
    base, visible, path_env = SandboxPolicy(mode, tuple(roots), network), _visible(commands), login_environment()[0].get("PATH", "")

    def wrap(argv: list[str]) -> list[str]:
        # Hardened at each use, as a bash call's is: a .git made since (git init) is protected too.
        # The program and any absolute path among its arguments stay visible under the private
        # /tmp (the hook sandbox's own server: cox's interpreter and source in a checkout there).
        named = [a for a in argv if a.startswith("/") and "\n" not in a]
        policy = harden(base, cwd=cwd, home=home, cox_home=cox_home, read_deny=read_deny_patterns(()),
                        visible=[*visible, *named], path_env=path_env)
        return bwrap_argv(policy, argv, cwd=cwd)
    return wrap
