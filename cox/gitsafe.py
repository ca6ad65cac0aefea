"""Git on a checkout cox does not trust: nothing the repository configures gets to run.

A repository's ``.git/config`` (and ``.git/info/attributes``, a ``.gitattributes``, an embedded
bare repository) is code: ``git status`` and ``git diff`` run ``core.fsmonitor`` on every index
read, a clean filter on every stat-dirty file, hooks when the index is written, textconv and
external diff drivers, a pager; a partial clone fetches missing objects through whatever
transport (``ext::`` runs a command) and ``core.sshCommand`` the config names. The TUI's status
probe, the file listings of ``glob``/``grep`` and every other git cox runs in a user's workspace
(the checkpoints keep a private repository of their own, with these same overrides) go through
:func:`git_command`:

- :data:`OVERRIDES` (fsmonitor off, hooks from ``/dev/null``, no pager, no external diff, no
  transport, no credential helper or askpass, no gpg, no embedded bare repositories, no auto gc)
  are passed as command-line-level configuration through ``GIT_CONFIG_COUNT``/``KEY_n``/
  ``VALUE_n``, which beats every config file, reaches the git processes git starts (submodules),
  and needs no quoting of ``=`` in a name;
- every filter driver the repository's configuration defines is blanked (``filter.<name>.clean``,
  ``.smudge``, ``.process`` empty, ``.required`` false), since attributes can name any driver;
- sub-commands that can show a diff get ``--no-ext-diff --no-textconv`` right after their name
  (``blame`` ``--no-textconv``): an attribute may name any diff driver, whose ``command`` and
  ``textconv`` come from the config;
- the inherited ``GIT_*`` variables are dropped (cox run from a hook must not be redirected to
  another repository), and ``--no-pager`` leads the argv.

The user's own global and system configuration still apply (their excludes, ``safe.directory``):
they are the user's, not the repository's, and git's ownership check stays on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

from cox.slim import dataclass

__all__ = ["OVERRIDES", "GitCommand", "filter_drivers", "find_git", "git_command", "run_git", "safe_env"]

OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.useBuiltinFSMonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("diff.ignoreSubmodules", "all"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    ("protocol.allow", "never"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("log.showSignature", "false"),
    ("safe.bareRepository", "explicit"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)

_NO_DRIVERS = ("--no-ext-diff", "--no-textconv")
SUBCOMMAND_FLAGS: dict[str, tuple[str, ...]] = {
    **{name: _NO_DRIVERS for name in ("diff", "log", "show", "whatchanged", "format-patch", "range-diff")},
    "blame": ("--no-textconv",),
    "annotate": ("--no-textconv",),
}

_FILTER_KEYS = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class GitCommand:
    """What to hand to ``subprocess``: ``argv`` and ``env``."""

    argv: list[str]
    env: dict[str, str]


def find_git(path: str | None = None) -> str | None:
    """The git on ``path`` (default ``$PATH``), searching absolute folders only: an empty or
    relative entry would make the current folder (a workspace that ships its own ``git``) count."""
    entries = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    return shutil.which("git", path=os.pathsep.join(e for e in entries if os.path.isabs(e)))


def safe_env(base: Mapping[str, str] | None = None,
             config: Sequence[tuple[str, str]] = OVERRIDES) -> dict[str, str]:
    """``base`` (default ``os.environ``) without any ``GIT_*`` variable, with ``config`` as
    command-line configuration and no prompt, no lazy fetch, no optional locks."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith("GIT_")}
    env.pop("SSH_ASKPASS", None)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_NO_LAZY_FETCH="1", GIT_OPTIONAL_LOCKS="0",
               GIT_PROTOCOL_FROM_USER="0", GIT_CONFIG_COUNT=str(len(config)))
    for i, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def filter_drivers(git: str, cwd: str | os.PathLike[str], env: Mapping[str, str]) -> list[str]:
    """The filter driver names the configuration seen in ``cwd`` defines (``git config`` runs
    nothing); ``[]`` when there are none or git cannot say."""
    try:
        proc = subprocess.run([git, "--no-pager", "config", "--null", "--name-only", "--get-regexp", r"^filter\."],
                              cwd=cwd, env=dict(env), capture_output=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    names: list[str] = []
    for raw in proc.stdout.split(b"\0"):
        key = os.fsdecode(raw)
        if not key.startswith("filter.") or key.count(".") < 2:
            continue
        name = key[len("filter."):key.rindex(".")]
        if name not in names:
            names.append(name)
    return names


def git_command(cwd: str | os.PathLike[str], *args: str, git: str | None = None,
                base_env: Mapping[str, str] | None = None, filters: bool = True) -> GitCommand | None:
    """``git --no-pager -C cwd ARGS`` made safe for an untrusted checkout, or None without git.
    ``filters=False`` skips looking up filter drivers (one ``git config`` process) for commands
    that never read file contents (``ls-files``, ``check-ignore``, ``rev-parse``)."""
    exe = git or find_git()
    if exe is None:
        return None
    env = safe_env(base_env)
    if filters:
        drivers = filter_drivers(exe, cwd, env)
        if drivers:
            extra = [(f"filter.{d}.{k}", v) for d in drivers for k, v in _FILTER_KEYS]
            env = safe_env(base_env, (*OVERRIDES, *extra))
    return GitCommand([exe, "--no-pager", "-C", os.fspath(cwd), *_with_flags(args)], env)


def _with_flags(args: Sequence[str]) -> list[str]:
    """``args`` with :data:`SUBCOMMAND_FLAGS` inserted after the sub-command (found past the
    global options; ``-c KEY=VALUE`` and ``-C DIR`` take a value)."""
    out = list(args)
    i = 0
    while i < len(out) and out[i].startswith("-"):
        i += 2 if out[i] in ("-c", "-C") else 1
    if i < len(out):
        out[i + 1:i + 1] = SUBCOMMAND_FLAGS.get(out[i], ())
    return out


def run_git(cwd: str | os.PathLike[str], *args: str, timeout: float = TIMEOUT_S, stdin: bytes | None = None,
            filters: bool = True, base_env: Mapping[str, str] | None = None
            ) -> subprocess.CompletedProcess[bytes] | None:
    """Run :func:`git_command` (never through a shell), bounded by ``timeout``; None when git is
    missing, cannot start or times out."""
    cmd = git_command(cwd, *args, filters=filters, base_env=base_env)
    if cmd is None:
        return None
    try:
        return subprocess.run(cmd.argv, env=cmd.env, capture_output=True, timeout=timeout, check=False,
                              input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
