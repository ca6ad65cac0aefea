"""The shell sandbox: what a command may see, write and inherit — the boundary, not the classifier.

A wrong guess by the classifier must be harmless, so every sandboxed command (bash calls and
stdio MCP servers) runs under bubblewrap with:

- the whole file system read-only (``--ro-bind / /``), a fresh ``/dev`` and ``/proc``;
- ``/tmp`` private to the session (a host folder of the session bound at ``/tmp``, or an empty
  tmpfs when there is none), bound *before* the workspace so a workspace under ``/tmp`` stays
  visible;
- ``workspace-write``: the workspace roots and extra writable roots bound writable — except when
  the call was rated read-only: then nothing at all is writable (``/tmp`` included);
  ``read-only`` mode: nothing writable but the private ``/tmp``;
- inside the writable roots, the repository's code-bearing metadata read-only (``.git/config``,
  ``.git/hooks``, ``.git/info``, the same of submodules under ``.git/modules``, a worktree's
  ``.git`` file and the git directories it points at) and ``.cox/`` (a later mount covers an
  earlier one); each git directory is itself a mount point, so it cannot be renamed away and
  replaced by a planted one;
- the deny-read paths masked: cox's built-in secret paths and the literal part of every ``Read``
  deny rule (a directory becomes an empty tmpfs whose writes vanish with the command, a file a
  read-only ``/dev/null``); a rule whose literal part
  would hide the system, the workspace or the home directory is not masked (``describe`` says so);
- the sockets of daemons that run programs for whoever connects (docker, containerd, podman, the
  system and session bus, systemd) masked with ``/dev/null``: a read-only mount does not stop
  ``connect()``;
- ``COX_HOME`` hidden (an empty tmpfs, as a mask), or read-only when a workspace lies inside it;
- as root, ``--unshare-user --cap-drop ALL``: without them the command keeps every capability and
  ``mount -o remount,rw /`` undoes all of the above;
- ``--unshare-net`` unless the network is allowed, ``--unshare-pid`` (when the command exits, the
  namespace dies and takes ``setsid``/double-forked leftovers with it), ``--die-with-parent``.
  No ``--new-session``: the caller starts bwrap in a session of its own with no terminal, and
  keeping the sandbox in bwrap's process group is what lets one ``killpg`` end all of it.

The environment is scrubbed in every mode (danger-full-access included): variables whose names
look secret are removed unless the user's own config names them (``sandbox.env_keep``).

``danger-full-access`` has no wrapper. Everything here is pure except :func:`harden`, which looks
at the disk (``stat`` and ``realpath`` only) to turn rules into mounts; :func:`describe` is what
``cox doctor`` and ``cox policy check`` print.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from cox.protocol.types import SandboxMode
from cox.slim import dataclass

from .env_keep import env_keep_of  # the sandbox's setting, read at start-up from its own module

__all__ = ["Mask", "SandboxPolicy", "bwrap_argv", "describe", "describe_dict", "env_keep_of", "explain", "fail_closed_sentence", "harden",
           "is_secret_name", "read_deny_patterns", "remove_planted", "scrub_env"]

# Names that hold keys: any variable whose name contains one of these words (upper-cased), and
# the named ones below (which the words cover, listed so the intent is plain).
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE")
SECRET_NAMES = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY",
                          "AWS_SESSION_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "SSH_AUTH_SOCK"})

# Sockets whose daemon runs programs for whoever connects (a container engine, the system bus,
# systemd): a read-only file system does not stop connect(), so each is masked with /dev/null.
# ``{uid}`` is the user cox runs as.
PRIVILEGED_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/containerd/containerd.sock",
                      "/run/podman/podman.sock", "/run/dbus/system_bus_socket", "/run/systemd/private",
                      "/run/user/{uid}/bus", "/run/user/{uid}/docker.sock", "/run/user/{uid}/podman/podman.sock",
                      "/run/user/{uid}/systemd/private")

# Folders a mask must never hide (nor any folder above them): the programs a command runs with.
_SYSTEM = ("/usr/bin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/share", "/bin", "/sbin", "/lib",
           "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc", "/sys", "/run", "/tmp", "/var", "/opt",
           "/usr/local")


@dataclass(frozen=True, slots=True)
class Mask:
    """A path the command must not read: a directory becomes an empty tmpfs, a file /dev/null."""

    path: str
    is_dir: bool


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """One command's sandbox. The first three fields are the session's choice; :func:`harden`
    fills the rest from the disk and the rules."""

    mode: SandboxMode
    writable_roots: tuple[Path, ...] = ()
    network: bool = False
    frozen: bool = False
    """The call was rated read-only: the whole file system is read-only, ``/tmp`` too."""
    tmp: Path | None = None
    """The host folder bound at ``/tmp`` (the session's private tmp); None: an empty tmpfs."""
    pinned: tuple[str, ...] = ()
    """Git directories inside the writable roots, bound onto themselves so they cannot be moved."""
    must_not_appear: tuple[str, ...] = ()
    """Files git would obey that no mount can guard without breaking git (``.git/commondir`` of a
    repository that has none): the caller removes any a command created (``remove_planted``)."""
    protected: tuple[str, ...] = ()
    """Read-only inside the writable roots: git metadata, ``.cox``."""
    masks: tuple[Mask, ...] = ()
    cox_home: str | None = None
    cox_home_over_roots: bool = False
    """COX_HOME holds a writable root: bound read-only below the roots instead of hidden."""
    drop_caps: bool = False
    """cox runs as root: a user namespace and no capabilities."""
    unmasked: tuple[tuple[str, str], ...] = ()
    """(deny rule pattern, why it is not masked), for ``describe``."""
    shown: tuple[str, ...] = ()
    """Host folders under ``/tmp`` that hold the command's own environment (a ``HOME``, ``PATH``
    entries such as a virtualenv, an MCP server's program): bound read-only over the private
    ``/tmp`` so a checkout or home that lives in ``/tmp`` still works."""


def _roots(policy: SandboxPolicy) -> list[str]:
    out: list[str] = []
    for root in policy.writable_roots:
        path = str(root)
        if path not in out and path != "/":
            out.append(path)
    return out


def bwrap_argv(policy: SandboxPolicy, argv: Sequence[str], *, cwd: Path, bwrap: str = "bwrap") -> list[str]:
    """``argv`` wrapped in bubblewrap under ``policy`` (``argv`` itself for danger-full-access)."""
    if policy.mode is SandboxMode.DANGER_FULL_ACCESS:
        return list(argv)
    out = [bwrap, "--die-with-parent", "--unshare-pid"]
    if policy.drop_caps:
        out += ["--unshare-user", "--cap-drop", "ALL"]
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    # The private /tmp first, so roots under /tmp are bound over it and stay visible; made
    # read-only (for a call rated read-only) only once everything below it is in place.
    roots = _roots(policy)
    under_tmp = [r for r in roots if _within(r, "/tmp")]
    below_tmp = under_tmp or policy.shown  # mounted below the private /tmp
    if policy.tmp is None:
        out += ["--tmpfs", "/tmp"]
    else:  # read-only at once when nothing has to be mounted below it
        out += ["--ro-bind" if policy.frozen and not below_tmp else "--bind", str(policy.tmp), "/tmp"]
    for path in policy.shown:
        out += ["--ro-bind", path, path]

    def hidden(path: str) -> bool:  # under the private /tmp and in no root: not visible anyway
        return _within(path, "/tmp") and not any(_within(path, r) for r in (*roots, *policy.shown))

    if policy.cox_home and policy.cox_home_over_roots:
        out += ["--ro-bind", policy.cox_home, policy.cox_home]
    writable = policy.mode is SandboxMode.WORKSPACE_WRITE and not policy.frozen
    for root in roots if writable else under_tmp:  # a read-only root is bound only to show it over /tmp
        out += ["--bind" if writable else "--ro-bind", root, root]
    if writable:
        for path in policy.pinned:
            out += ["--bind", path, path]
        for path in policy.protected:
            out += ["--ro-bind", path, path]
    for mask in policy.masks:
        if not hidden(mask.path):
            # (an empty tmpfs: what a command writes there vanishes with it; one mount, not two)
            out += ["--tmpfs", mask.path] if mask.is_dir else ["--ro-bind", "/dev/null", mask.path]
    if policy.cox_home and not policy.cox_home_over_roots and not hidden(policy.cox_home):
        out += ["--tmpfs", policy.cox_home]
    if policy.frozen and (policy.tmp is None or below_tmp):
        out += ["--remount-ro", "/tmp"]
    if not policy.network:
        out.append("--unshare-net")
    out += ["--chdir", str(cwd), "--", *argv]
    return out


# ---------------------------------------------------------------------------------- environment

def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return upper in SECRET_NAMES or any(word in upper for word in SECRET_WORDS)


def scrub_env(env: Mapping[str, str], keep: Iterable[str] = ()) -> tuple[dict[str, str], list[str]]:
    """``env`` without its secret-looking variables, and the names removed (sorted). ``keep``
    names (or ``fnmatch`` patterns) the user passes through on purpose."""
    kept = tuple(keep)
    out: dict[str, str] = {}
    removed: list[str] = []
    for name, value in env.items():
        if is_secret_name(name) and not any(fnmatch.fnmatchcase(name, k) for k in kept):
            removed.append(name)
        else:
            out[name] = value
    return out, sorted(removed)


# ---------------------------------------------------------------------------------- from rules

def read_deny_patterns(rules: Iterable[object]) -> list[str]:
    """The path patterns of the ``Read`` deny rules among ``rules`` (an engine's ``deny``), with
    cox's built-in secret paths always included."""
    from .defaults import DEFAULT_DENY

    out = [text[len("Read("):-1] for text in DEFAULT_DENY if text.startswith("Read(")]
    for r in rules:
        if getattr(r, "tool", None) == "Read" and getattr(r, "kind", None) == "path":
            value = str(getattr(r, "value", ""))
            if value and value not in out:
                out.append(value)
    return out


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _git_dirs(root: str) -> tuple[list[str], list[str]]:
    """(git directories, ``.git`` files) of the repository at ``root``: ``root/.git``, or for a
    worktree the ``.git`` file, the directory it names and that one's common directory."""
    dot = posixpath.join(root, ".git")
    if os.path.isdir(dot):
        return [dot], []
    if not os.path.isfile(dot):
        return [], []
    dirs: list[str] = []
    try:
        with open(dot, encoding="utf-8", errors="replace") as f:
            line = f.read(4096).strip()
    except OSError:
        return [], [dot]
    if line.startswith("gitdir:"):
        gitdir = os.path.realpath(posixpath.join(root, line[len("gitdir:"):].strip()))
        if os.path.isdir(gitdir):
            dirs.append(gitdir)
            try:
                with open(posixpath.join(gitdir, "commondir"), encoding="utf-8", errors="replace") as f:
                    common = os.path.realpath(posixpath.join(gitdir, f.read(4096).strip()))
                if os.path.isdir(common) and common not in dirs:
                    dirs.append(common)
            except OSError:
                pass
    return dirs, [dot]


def _submodules(gitdir: str) -> list[str]:
    """The git directories of submodules kept under ``gitdir/modules`` (nested ones too)."""
    out: list[str] = []
    stack = [posixpath.join(gitdir, "modules")]
    while stack and len(out) < 256:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            if not e.is_dir(follow_symlinks=False):
                continue
            if os.path.isfile(posixpath.join(e.path, "config")) and os.path.isdir(posixpath.join(e.path, "objects")):
                out.append(e.path)
                stack.append(posixpath.join(e.path, "modules"))
            else:
                stack.append(e.path)  # a submodule named a/b lives at modules/a/b
    return out


def _protected(roots: Sequence[str], make: bool = True) -> tuple[list[str], list[str]]:
    """(pinned, read-only) inside writable roots (only what lies inside one of them).

    Read-only: the code-bearing git metadata and ``.cox``. Pinned: each git directory, bound onto
    itself, so a command cannot rename it away and put a ``.git`` of its own in its place (a
    mount point cannot be moved). Missing folders a command could plant code in are made first
    (git's ``hooks``/``info``, an empty ``.cox``), since only an existing path can be bound;
    with ``make`` false (a description) they are listed as if made."""
    out: list[str] = []
    pinned: list[str] = []
    made: set[str] = set()

    def inside(path: str) -> bool:
        return any(_within(path, r) for r in roots)

    for root in roots:
        if make:
            with contextlib.suppress(OSError):
                os.mkdir(posixpath.join(root, ".cox"))
        made.add(posixpath.join(root, ".cox"))
        dirs, files = _git_dirs(root)
        dirs += [m for g in dirs for m in _submodules(g)]
        candidates = list(files)
        for g in dirs:
            if not inside(g):
                continue  # read-only already (under ``--ro-bind / /``): nothing to guard, nothing to make
            if g not in pinned:
                pinned.append(g)
            for name in ("hooks", "info"):
                made.add(posixpath.join(g, name))
                if make:
                    with contextlib.suppress(OSError):
                        os.mkdir(posixpath.join(g, name))
            candidates += [posixpath.join(g, n) for n in ("config", "config.worktree", "hooks", "info")]
        candidates.append(posixpath.join(root, ".cox"))
        for path in candidates:
            if path in out or not (os.path.lexists(path) or path in made and not make):
                continue
            if inside(path):
                out.append(path)
    return pinned, out


def _literal(pattern: str, home: str, roots: Sequence[str]) -> list[str]:
    """The absolute literal paths a Read pattern starts with (one per root for a relative one):
    the path itself when it has no glob, else the folder before the first glob character."""
    from .reads import path_base

    bases = [path_base(pattern, home, root) for root in roots] if roots else [path_base(pattern, home)]
    return list(dict.fromkeys(b for b in bases if b))


def _why_unsafe(path: str, keep: Sequence[str]) -> str | None:
    for k in keep:
        if _within(k, path):
            return f"it would hide {k}"
    for s in _SYSTEM:
        if _within(s, path):
            return "it would hide the system's programs"
    return None


def harden(policy: SandboxPolicy, *, cwd: Path, home: Path, cox_home: Path | None,
           read_deny: Sequence[str] = (), tmp: Path | None = None, frozen: bool = False,
           euid: int | None = None, prepare: bool = True,
           sockets: Sequence[str] = PRIVILEGED_SOCKETS, visible: Sequence[str] = (),
           path_env: str | None = None, read_roots: Sequence[str | os.PathLike[str]] = ()) -> SandboxPolicy:
    """``policy`` with its mounts filled in from the disk: the protected metadata of the writable
    roots, the masks of ``read_deny`` patterns (see :func:`read_deny_patterns`), ``COX_HOME``,
    the session's ``tmp``, the folders under ``/tmp`` the command's environment needs (``home``,
    the ``PATH`` entries of ``path_env`` — cox's own PATH by default — and ``visible``: an MCP
    server's program and arguments) and whether capabilities must be dropped. ``read_roots`` are
    roots the command reads but never writes (a worktree session's main checkout): read-only like
    the rest of the file system, shown when under ``/tmp``, and masked by the ``read_deny``
    patterns as the writable roots are. Stats paths; writes nothing
    but git's own ``hooks``/``info`` folders and an empty ``.cox`` where they are missing (not
    even those with ``prepare`` false, for a description)."""
    if policy.mode is SandboxMode.DANGER_FULL_ACCESS:
        return policy
    roots = [os.path.realpath(r) for r in _roots(policy) if os.path.isdir(r)]  # bwrap cannot bind what is not there
    readable = [r for r in (os.path.realpath(x) for x in read_roots) if os.path.isdir(r) and r not in roots]
    home_s, cwd_s = os.path.realpath(home), os.path.realpath(cwd)
    keep = [*roots, *readable, cwd_s, home_s]
    masks: list[Mask] = []
    unmasked: list[tuple[str, str]] = []
    seen: set[str] = set()
    for pattern in read_deny:
        for base in _literal(pattern, str(home), [*roots, *readable]):
            path = os.path.realpath(base)
            if path in seen or not os.path.lexists(path):
                continue
            seen.add(path)
            why = _why_unsafe(path, keep)
            if why is not None:
                unmasked.append((pattern, why))
                continue
            masks.append(Mask(path, os.path.isdir(path)))
    uid = os.geteuid() if euid is None else euid
    for socket in sockets:
        path = os.path.realpath(socket.format(uid=uid))
        if path not in seen and os.path.lexists(path) and not os.path.isdir(path):
            seen.add(path)
            masks.append(Mask(path, False))
    box = os.path.realpath(cox_home) if cox_home is not None else None
    over = box is not None and any(_within(r, box) for r in (*roots, cwd_s))
    if box is not None and not os.path.exists(box) and not over:
        box = None  # nothing there to hide (and bwrap would have to create it)
    frozen = frozen or policy.frozen
    writable = policy.mode is SandboxMode.WORKSPACE_WRITE and not frozen
    pinned, protected = _protected(roots, prepare) if writable else ([], [])
    planted = tuple(c for g in pinned if not os.path.lexists(c := posixpath.join(g, "commondir")))
    shown = _shown_under_tmp([str(home), *readable], [*(os.environ.get("PATH", "") if path_env is None else path_env).split(":"),
                                           *visible], roots, tmp)
    return replace(policy, writable_roots=tuple(Path(r) for r in roots), frozen=frozen, shown=shown,
                   tmp=tmp, pinned=tuple(pinned), must_not_appear=planted, protected=tuple(protected), masks=tuple(masks), cox_home=box,
                   cox_home_over_roots=over, drop_caps=uid == 0, unmasked=tuple(unmasked))


def _shown_under_tmp(exact: Iterable[str], tops: Iterable[str], roots: Sequence[str],
                     tmp: Path | None) -> tuple[str, ...]:
    """Folders under ``/tmp`` the command's environment needs: each of ``exact`` (a home) as it
    is, and for each of ``tops`` (PATH entries, a program and its arguments) its top folder under
    ``/tmp`` (``/tmp/x`` for ``/tmp/x/.venv/bin``: a virtualenv needs its whole tree, a script its
    checkout). Left out: what a root already shows, ``/tmp`` itself and cox's session folders
    (one session must never see another's private /tmp)."""
    out: list[str] = []
    own = os.path.realpath(tmp) if tmp is not None else None
    for p, whole in [*((p, True) for p in exact), *((p, False) for p in tops)]:
        if not p or not p.startswith("/"):
            continue
        real = os.path.realpath(p)
        if not _within(real, "/tmp") or real == "/tmp":
            continue
        top = "/tmp/" + real[len("/tmp/"):].split("/", 1)[0]
        path = real if whole else top
        if not os.path.isdir(path):
            path = os.path.dirname(path)
        if path in out or path == "/tmp" or top == own or os.path.basename(top).startswith("cox-tmp-") or \
                any(_within(path, r) for r in (*roots, *out)):
            continue
        out.append(path)
    return tuple(out)


def remove_planted(paths: Iterable[str]) -> list[str]:
    """Remove what a command planted among ``paths`` (a ``.git/commondir`` would send git to a
    config of the command's choosing, hooks and fsmonitor included); returns what was removed."""
    removed = []
    for path in paths:
        if os.path.lexists(path):
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed.append(path)
    return removed


# ---------------------------------------------------------------------------------- messages

def fail_closed_sentence(why: str, what: str = "not run") -> str:
    """Why a shell command (or stdio MCP server) did not run: there is no working sandbox."""
    return (f"{what}: there is no working sandbox ({why}); install bubblewrap (the 'bubblewrap' package) "
            "or set sandbox.mode = \"danger-full-access\" explicitly to run commands unconfined")


def describe_dict(rows: Sequence[tuple[str, str]]) -> dict[str, str]:
    """``describe``'s rows as one JSON object (a repeated row's values joined with "; ")."""
    out: dict[str, str] = {}
    for key, value in rows:
        out[key] = f"{out[key]}; {value}" if key in out else value
    return out


def describe(policy: SandboxPolicy, removed_env: Sequence[str] = (), *, working: tuple[bool, str] = (True, ""),
             ) -> list[tuple[str, str]]:
    """What a call's sandbox would be, as (what, value) rows for ``cox doctor`` and ``cox policy
    check``. ``working`` is the probe's (works, why not)."""
    env_row = ("env removed", ", ".join(removed_env) if removed_env else "none")
    if policy.mode is SandboxMode.DANGER_FULL_ACCESS:
        return [("sandbox", "none (danger-full-access): the command runs with cox's own rights"), env_row]
    if not working[0]:
        return [("sandbox", fail_closed_sentence(working[1])), env_row]
    writable = policy.mode is SandboxMode.WORKSPACE_WRITE and not policy.frozen
    roots = _roots(policy)
    tmp = (f"private to the session ({policy.tmp}, removed when it ends)" if policy.tmp is not None
           else "private (empty, per call)")
    rows = [
        ("sandbox", f"bubblewrap, {policy.mode.value}" + (", call rated read-only" if policy.frozen else "")),
        ("writable", ", ".join(roots) if writable and roots else "nothing" if policy.frozen else "nothing but /tmp"),
        ("read-only", "everything" if policy.frozen else ", ".join(["everything else", *(policy.protected if writable
                                                                                          else ())])),
        ("masked", ", ".join(m.path + ("/" if m.is_dir else "") for m in policy.masks) or "nothing"),
    ]
    if policy.cox_home:
        rows.append(("cox home", f"{policy.cox_home} " + ("read-only" if policy.cox_home_over_roots else "hidden")))
    for pattern, why in policy.unmasked:
        rows.append(("not masked", f"Read({pattern}): {why}"))
    if policy.shown:
        rows.append(("shown read-only", ", ".join(policy.shown) + " (your environment under /tmp)"))
    rows += [
        ("/tmp", tmp + (", read-only" if policy.frozen else "")),
        ("network", "allowed" if policy.network else "off"),
        ("user", "user namespace, all capabilities dropped (cox runs as root)" if policy.drop_caps
         else "your own user, no capabilities"),
        ("processes", "own pid namespace: leftovers end with the call"),
        env_row,
    ]
    return rows


def explain(mode: SandboxMode, *, roots: Sequence[Path], cwd: Path, home: Path, cox_home: Path | None,
            read_deny: Sequence[str], env: Mapping[str, str], env_keep: Sequence[str] = (),
            writable_roots: Sequence[Path] = (), network: bool = False, frozen: bool = False,
            working: tuple[bool, str] = (True, "")) -> list[tuple[str, str]]:
    """``describe`` of the sandbox a call would get, built the way the bash tool builds it but
    without preparing anything on disk: what ``cox doctor`` and ``cox policy check`` show."""
    import tempfile

    policy = harden(SandboxPolicy(SandboxMode(mode), (*roots, *writable_roots), network), cwd=cwd, home=home,
                    cox_home=cox_home, read_deny=read_deny, frozen=frozen, prepare=False,
                    tmp=Path(tempfile.gettempdir()) / "cox-tmp-<session>-…")
    _, removed = scrub_env(env, env_keep)
    return describe(policy, removed, working=working)
