"""What a shell command runs with: the login environment, and whether the sandbox works here.

``bash -lc`` for every call would pay for the user's whole profile each time (100+ ms on a
machine whose ~/.bashrc initialises pyenv or nvm). Like Claude Code's shell snapshot, cox runs
the login shell once per process, keeps the environment it exports, and runs each command with
``bash -c`` in that environment: the login PATH and variables, at the cost of a plain shell.

Commands never get the login environment whole: ``command_environment`` removes the variables
whose names look secret (``cox.policy.sandbox.scrub_env``) unless the user's config keeps them.

Each session has a private ``/tmp`` (``SessionTmp``): a host folder made on first use, bound at
``/tmp`` inside the sandbox and removed with the session, so one session's files never meet
another's or the host's.

The sandbox probe runs bubblewrap once and remembers the answer, so a machine where it cannot
work (no bwrap, no user namespaces in a container) is reported once, clearly, and never
mistaken for a failing command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

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


def command_environment(keep: Sequence[str] = ()) -> tuple[dict[str, str], list[str]]:
    """The environment a command runs with: the login environment without secret-looking
    variables (except those ``keep`` names), and the names removed."""
    from cox.policy.sandbox import scrub_env

    env, _ = login_environment()
    return scrub_env(env, keep)


class SessionTmp:
    """The session's private ``/tmp``: made (mode 0700) on first use, removed by ``remove``.
    Once removed it stays gone: a call still finishing as the session ends gets None (and an
    empty tmpfs), never a new folder nobody would remove."""

    def __init__(self, session_id: str = "") -> None:
        self._prefix = f"cox-tmp-{session_id[-12:]}-" if session_id else "cox-tmp-"
        self._path: Path | None = None
        self._removed = False
        self._lock = threading.Lock()

    def path(self) -> Path | None:
        import tempfile  # with the session's first command

        with self._lock:
            if self._removed:
                return None
            while self._path is None or not self._path.is_dir():
                # The name is kept before the folder is made, so an exception landing in between
                # (a killed call) cannot leave a folder that ``remove`` does not know about.
                self._path = Path(tempfile.gettempdir()) / f"{self._prefix}{os.urandom(6).hex()}"
                try:
                    os.mkdir(self._path, 0o700)  # fails on anything already there, a planted link too
                except FileExistsError:
                    self._path = None
            return self._path

    def remove(self) -> None:
        with self._lock:
            path, self._path, self._removed = self._path, None, True
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)

    def done_with(self, path: Path | None) -> None:
        """A command that used ``path`` has ended: if the session was removed meanwhile (its
        sandbox may still have been making mount points there), remove what is left."""
        with self._lock:
            removed = self._removed
        if removed and path is not None:
            shutil.rmtree(path, ignore_errors=True)


def sandbox_status() -> tuple[bool, str]:
    """(works, why not). Probed once per process with the same flags every command uses."""
    global _sandbox
    with _lock:
        if _sandbox is not None:
            return _sandbox
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            _sandbox = (False, "bwrap is not on PATH")
            return _sandbox
        try:
            root = ["--unshare-user", "--cap-drop", "ALL"] if os.geteuid() == 0 else []
            proc = subprocess.run(
                [bwrap, "--die-with-parent", "--unshare-pid", *root, "--unshare-net", "--ro-bind", "/",
                 "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"],
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


def sandbox_warning() -> str | None:
    """What a session tells the person before its first shell command when the sandbox cannot
    run here (commands then fail closed), or None when it works."""
    ok, why = sandbox_status()
    if ok:
        return None
    from cox.policy.sandbox import fail_closed_sentence

    return f"shell commands are {fail_closed_sentence(why)} (`cox doctor` checks it again)"


def reset_for_tests() -> None:
    global _login_env, _login_note, _sandbox
    with _lock:
        _login_env = _login_note = _sandbox = None
