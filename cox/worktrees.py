"""Worktrees: a session (or a subagent) that must not touch the main checkout works in a linked
git worktree of its own, ``_worktrees/<repo>-<name>`` on branch ``<name>``.

Why one module: the placement rule, the branch, the owner lock and removal are one idea that the
command line (``cox --worktree NAME``), resume and ``agent(isolation: "worktree")`` share.

- Placement (:func:`place`): the nearest ancestor of the repository that already holds a
  ``_worktrees/`` folder; else ``$WT_ROOT`` when it is set (the folder the worktrees go in);
  else a new ``_worktrees/`` next to the repository.
- The branch is the name in lower case, cut from a freshly fetched ``origin/<default>`` with no
  upstream when the repository has an ``origin`` remote, else from ``HEAD``. A fetch that fails
  (no network, a remote that hangs: it is bounded) falls back to the last fetched
  ``origin/<default>``, or ``HEAD``, and says so in :attr:`Worktree.notices`.
- The worktree is locked with a reason naming its owner (``cox / pid 123 | t42 | 2026-09-22``).
  A worktree locked by anyone else (``Cursor / grok | …``, or a lock with no reason) is never
  reused, unlocked or removed; one of cox's is reused and its lock renewed.
- :func:`remove` removes a clean worktree and never deletes its branch: merging is the user's.

The repository is not trusted: every git runs through :mod:`cox.gitsafe` (no hook, fsmonitor,
filter, pager, credential helper or transport the repository names), bounded in time. The one
command that needs a transport, the fetch, gets exactly the ones that run no program
(``file``, ``git``, ``http(s)``, and ``ssh`` as ``ssh -o BatchMode=yes``), git's own
``git-upload-pack``, a pinned refspec that writes only ``refs/remotes/origin/*``, and is killed with
its whole process group when it outlives its bound.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from cox.gitdirs import git_dirs
from cox.gitsafe import OVERRIDES, git_command, run_git, safe_env
from cox.slim import dataclass

__all__ = ["Worktree", "WorktreeError", "WorktreeGone", "branch_name", "is_clean", "main_checkout", "open_worktree",
           "owner", "place", "remove", "reopen"]

FOLDER = "_worktrees"
GIT_TIMEOUT_S = 30.0  # a checkout of a large tree takes a while; a hang still ends
FETCH_TIMEOUT_S = 30.0
NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
FETCH_CONFIG: tuple[tuple[str, str], ...] = (
    ("protocol.file.allow", "always"),
    ("protocol.git.allow", "always"),
    ("protocol.http.allow", "always"),
    ("protocol.https.allow", "always"),
    ("protocol.ssh.allow", "always"),
    ("core.sshCommand", "ssh -o BatchMode=yes -o ConnectTimeout=10"),
    ("fetch.recurseSubmodules", "false"),
)
"""What the fetch adds to :data:`cox.gitsafe.OVERRIDES` (later entries win): transports that run
no program the repository names. ``remote.origin.uploadpack`` is a first-wins key (the
repository's own value would beat one given here), so the fetch pins it by ``--upload-pack``."""


class WorktreeError(Exception):
    """A worktree cannot be opened, reused or removed; ``str()`` says why and what to do."""


class WorktreeGone(WorktreeError):
    """The worktree a stored session worked in has been removed (resume never makes it again)."""


@dataclass(frozen=True, slots=True)
class Worktree:
    path: Path
    branch: str
    repo: Path
    """The main checkout: the session's read-only second root."""
    created: bool
    notices: tuple[str, ...] = ()
    """For the person: the fetch that failed and where the branch started instead."""

    @property
    def name(self) -> str:
        """The name ``cox --worktree`` takes (the folder without its ``<repo>-`` prefix)."""
        prefix = f"{self.repo.name}-"
        leaf = self.path.name
        return leaf[len(prefix):] if leaf.startswith(prefix) else leaf


def owner() -> str:
    """This process as the owner a lock names: ``cox / pid 123``."""
    return f"cox / pid {os.getpid()}"


def branch_name(name: str) -> str:
    """``name`` in lower case, checked to be a plain branch and folder name."""
    low = name.strip().lower()
    if not NAME.fullmatch(low) or ".." in low or low.endswith((".lock", ".")):
        raise WorktreeError(f"worktree name {name!r} cannot be used: use letters, digits, '.', '_' and '-' "
                            "(at most 63, starting with a letter or digit), like t42 or fix-login")
    return low


def main_checkout(path: Path) -> Path | None:
    """The main checkout of the repository ``path`` lives in (a linked worktree's too), read from
    its ``.git`` files without running git; None outside a repository or for a bare one."""
    found = git_dirs(Path(os.path.abspath(path)))
    if found is None:
        return None
    common = Path(os.path.realpath(found[1]))
    if common.name != ".git":
        return None
    return common.parent


def place(repo: Path, name: str, env: Mapping[str, str] | None = None) -> Path:
    """Where the worktree ``name`` of ``repo`` goes (see the module's rule)."""
    env = os.environ if env is None else env
    repo = Path(os.path.abspath(repo))
    leaf = f"{repo.name}-{branch_name(name)}"
    for d in repo.parents:
        if (d / FOLDER).is_dir():
            return d / FOLDER / leaf
    root = env.get("WT_ROOT", "")
    if root:
        return Path(os.path.abspath(os.path.expanduser(root))) / leaf
    return repo.parent / FOLDER / leaf


def _git(cwd: Path, *args: str, timeout: float = GIT_TIMEOUT_S) -> subprocess.CompletedProcess[bytes]:
    proc = run_git(cwd, *args, timeout=timeout)
    if proc is None:
        raise WorktreeError(f"git {args[0]} in {cwd} could not run (no git on PATH, or it took more than "
                            f"{timeout:g} s)")
    return proc


def _out(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stdout.decode("utf-8", "replace").strip()


def _why(proc: subprocess.CompletedProcess[bytes]) -> str:
    lines = [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit {proc.returncode}"


@dataclass(frozen=True, slots=True)
class _Listed:
    path: str
    branch: str
    locked: bool
    reason: str


def _listed(repo: Path) -> dict[str, _Listed]:
    """The repository's worktrees by real path (``git worktree list --porcelain -z``)."""
    proc = _git(repo, "worktree", "list", "--porcelain", "-z")
    if proc.returncode != 0:
        raise WorktreeError(f"git worktree list failed in {repo}: {_why(proc)}")
    out: dict[str, _Listed] = {}
    for block in proc.stdout.decode("utf-8", "replace").split("\0\0"):
        fields = [f for f in block.split("\0") if f]
        if not fields or not fields[0].startswith("worktree "):
            continue
        path = fields[0][len("worktree "):]
        branch, locked, reason = "", False, ""
        for f in fields[1:]:
            if f.startswith("branch "):
                branch = f[len("branch "):].removeprefix("refs/heads/")
            elif f == "locked" or f.startswith("locked "):
                locked, reason = True, f[len("locked "):] if f != "locked" else ""
        out[os.path.realpath(path)] = _Listed(path, branch, locked, reason)
    return out


def _ours(reason: str) -> bool:
    return reason == "cox" or reason.startswith("cox /")


def _refuse_foreign(entry: _Listed, path: Path) -> None:
    if entry.locked and not _ours(entry.reason):
        held = entry.reason or "no reason given"
        raise WorktreeError(f"worktree {path} is locked by another owner ({held}); cox never reuses or removes "
                            f"another owner's worktree: pick another name, or unlock it yourself "
                            f"(git worktree unlock {path}) if you know it is free")


def _relock(repo: Path, path: Path, entry: _Listed, reason: str) -> None:
    if entry.locked:
        _git(repo, "worktree", "unlock", str(path))
    proc = _git(repo, "worktree", "lock", "--reason", reason, str(path))
    if proc.returncode != 0:
        raise WorktreeError(f"could not lock worktree {path}: {_why(proc)}")


def _has_ref(repo: Path, ref: str) -> bool:
    proc = run_git(repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", filters=False)
    return proc is not None and proc.returncode == 0


def _fetch(repo: Path, timeout: float) -> str | None:
    """Fetch ``origin``'s branches into ``refs/remotes/origin/``; None when it worked, else why
    not. The configured refspec is not used (``--refmap=``): a hostile one could write local
    branches. The whole process group is killed at ``timeout``."""
    cmd = git_command(repo, "fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head",
                      "--refmap=", "--upload-pack=git-upload-pack", "origin", "+refs/heads/*:refs/remotes/origin/*",
                      filters=False)
    if cmd is None:
        return "git is not on PATH"
    env = safe_env(None, (*OVERRIDES, *FETCH_CONFIG))
    env.update(GIT_SSH_VARIANT="ssh", GIT_HTTP_LOW_SPEED_LIMIT="1", GIT_HTTP_LOW_SPEED_TIME=str(int(timeout)))
    try:
        proc = subprocess.Popen(cmd.argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return f"git could not start ({exc})"
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild that left the group holds the pipe
            pass
        return f"it took more than {timeout:g} s"
    if proc.returncode != 0:
        lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1].strip() if lines else f"exit {proc.returncode}"
    return None


def _default_remote_branch(repo: Path) -> str | None:
    """``origin/<default>``: what ``origin/HEAD`` names, else ``origin/main``, ``origin/master``,
    or the current branch on origin; None when there is none of them."""
    proc = run_git(repo, "symbolic-ref", "-q", "refs/remotes/origin/HEAD", filters=False)
    if proc is not None and proc.returncode == 0:
        ref = _out(proc).removeprefix("refs/remotes/")
        if ref.startswith("origin/") and _has_ref(repo, f"refs/remotes/{ref}"):
            return ref
    current = run_git(repo, "symbolic-ref", "-q", "--short", "HEAD", filters=False)
    names = ["main", "master"] + ([_out(current)] if current is not None and current.returncode == 0 else [])
    for name in names:
        if name and _has_ref(repo, f"refs/remotes/origin/{name}"):
            return f"origin/{name}"
    return None


def _base(repo: Path, fetch_timeout: float) -> tuple[str, tuple[str, ...]]:
    """Where a new branch starts, and what the person should know about it."""
    remotes = run_git(repo, "remote", filters=False)
    if remotes is None or remotes.returncode != 0 or "origin" not in _out(remotes).split():
        return "HEAD", ()
    failed = _fetch(repo, fetch_timeout)
    ref = _default_remote_branch(repo)
    if failed is None and ref is not None:
        return ref, ()
    if failed is None:
        return "HEAD", ("origin has no default branch cox can find (origin/HEAD, main, master); "
                        "the branch starts from HEAD",)
    start = f"the last fetched {ref}" if ref else "HEAD"
    return ref or "HEAD", (f"could not fetch origin ({failed}); the branch starts from {start}",)


def open_worktree(repo: Path, name: str, owner: str, *, env: Mapping[str, str] | None = None,
                  fetch_timeout: float = FETCH_TIMEOUT_S) -> Worktree:
    """The worktree ``name`` of ``repo``, created (with its branch, when that does not exist
    yet) or reused, and locked for ``owner``; :class:`WorktreeError` when it cannot be."""
    main = main_checkout(repo)
    if main is None:
        raise WorktreeError(f"{repo} is not inside a git checkout; a worktree needs one "
                            "(run cox in your repository, or pass --cwd)")
    branch = branch_name(name)
    path = place(main, branch, env)
    reason = f"{owner} | {branch} | {time.strftime('%Y-%m-%d', time.gmtime())}"
    entry = _listed(main).get(os.path.realpath(path))
    if entry is not None:
        _refuse_foreign(entry, path)
        if path.is_dir():
            _relock(main, path, entry, reason)
            return Worktree(path, entry.branch or branch, main, created=False)
        if entry.locked:  # ours, its folder gone: forget it so it can be made again
            _git(main, "worktree", "unlock", str(path))
        _git(main, "worktree", "prune")
    if os.path.lexists(path):
        raise WorktreeError(f"{path} exists and is not a worktree of {main}; move it away or pick another name")
    notices: tuple[str, ...] = ()
    if _has_ref(main, f"refs/heads/{branch}"):
        base = branch
        args = ["worktree", "add", "--lock", "--reason", reason, str(path), branch]
    else:
        base, notices = _base(main, fetch_timeout)
        args = ["worktree", "add", "--no-track", "--lock", "--reason", reason, "-b", branch, str(path), base]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorktreeError(f"cannot make {path.parent} for the worktree: {exc.strerror}") from None
    proc = _git(main, *args)
    if proc.returncode != 0:
        raise WorktreeError(f"git worktree add {path} ({branch} from {base}) failed: {_why(proc)}")
    return Worktree(path, branch, main, created=True, notices=notices)


def reopen(path: Path, repo: Path, owner: str) -> Worktree:
    """The worktree at ``path`` of ``repo`` once more (a resumed session's), its lock renewed for
    ``owner``; :class:`WorktreeGone` when it is no longer there — it is never made again here."""
    entry = _listed(repo).get(os.path.realpath(path)) if repo.is_dir() else None
    if entry is None or not path.is_dir():
        raise WorktreeGone(f"worktree {path} is gone")
    _refuse_foreign(entry, path)
    branch = entry.branch or path.name
    _relock(repo, path, entry, f"{owner} | {branch} | {time.strftime('%Y-%m-%d', time.gmtime())}")
    return Worktree(path, branch, repo, created=False)


def is_clean(wt: Worktree) -> bool:
    """No change and no untracked file in the worktree (False when git cannot say)."""
    proc = run_git(wt.path, "status", "--porcelain=v1", "-z", "--untracked-files=normal", timeout=GIT_TIMEOUT_S)
    return proc is not None and proc.returncode == 0 and not proc.stdout.strip(b"\0")


def remove(wt: Worktree) -> None:
    """Remove a clean worktree of cox's; its branch stays. Raises :class:`WorktreeError` for a
    dirty one or one another owner holds (both are kept)."""
    entry = _listed(wt.repo).get(os.path.realpath(wt.path))
    if entry is None:
        raise WorktreeError(f"{wt.path} is not a worktree of {wt.repo} (`git worktree list` shows them)")
    _refuse_foreign(entry, wt.path)
    if not is_clean(wt):
        raise WorktreeError(f"worktree {wt.path} has uncommitted changes; it is kept (branch {wt.branch})")
    if entry.locked:
        _git(wt.repo, "worktree", "unlock", str(wt.path))
    proc = _git(wt.repo, "worktree", "remove", str(wt.path))
    if proc.returncode != 0:
        raise WorktreeError(f"git worktree remove {wt.path} failed: {_why(proc)}; it is kept")
