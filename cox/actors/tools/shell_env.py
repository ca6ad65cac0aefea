"""What a shell command runs with: the login environment, and whether the sandbox works here.

``bash -lc`` for every call would pay for the user's whole profile each time (100+ ms on a
machine whose ~/.bashrc initialises pyenv or nvm). Like Claude Code's shell snapshot, cox runs
the login shell once per process, keeps the environment it exports, and runs each command with
``bash -c`` in that environment: the login PATH and variables, at the cost of a plain shell.

The sandbox probe runs bubblewrap once and remembers the answer, so a machine where it cannot
work (no bwrap, no user namespaces in a container) is reported once, clearly, and never
mistaken for a failing command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

_lock = threading.Lock()
_login_env: dict[str, str] | None = None
_login_note: str | None = None
_sandbox: tuple[bool, str] | None = None

# Variables that belong to the shell that printed them, not to the commands cox runs.
_SHELL_OWN = {"_", "SHLVL", "PWD", "OLDPWD"}


def login_environment(timeout: float = 10.0) -> tuple[dict[str, str], str | None]:
    """The environment a login shell exports (cached), and a note when it could not be read
    (then cox's own environment is used)."""
    global _login_env, _login_note
    with _lock:
        if _login_env is not None:
            return _login_env, _login_note
        env = dict(os.environ)
        note = None
        try:
            proc = subprocess.run(["bash", "-lc", "env -0"], stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout, start_new_session=True)
            if proc.returncode == 0:
                env = {}
                for item in proc.stdout.split(b"\0"):
                    key, sep, value = item.decode("utf-8", "replace").partition("=")
                    if sep and key and key not in _SHELL_OWN:
                        env[key] = value
            else:
                note = f"the login shell exited {proc.returncode}; commands use cox's own environment"
        except (OSError, subprocess.TimeoutExpired) as exc:
            note = f"the login shell could not be read ({exc}); commands use cox's own environment"
        _login_env, _login_note = env, note
        return env, note


def sandbox_status() -> tuple[bool, str]:
    """(works, why not). Probed once per process with the same flags every command uses."""
    global _sandbox
    with _lock:
        if _sandbox is not None:
            return _sandbox
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            _sandbox = (False, "bubblewrap (bwrap) is not installed: install the 'bubblewrap' package")
            return _sandbox
        try:
            proc = subprocess.run(
                [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net", "--ro-bind", "/",
                 "/", "--dev", "/dev", "--proc", "/proc", "--", "true"],
                stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
            if proc.returncode == 0:
                _sandbox = (True, "bubblewrap works")
            else:
                err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
                _sandbox = (False, f"bubblewrap cannot run here ({err[-1] if err else proc.returncode}); "
                                   "user namespaces may be disabled in this container")
        except (OSError, subprocess.TimeoutExpired) as exc:
            _sandbox = (False, f"bubblewrap cannot run here ({exc})")
        return _sandbox


def reset_for_tests() -> None:
    global _login_env, _login_note, _sandbox
    with _lock:
        _login_env = _login_note = _sandbox = None
