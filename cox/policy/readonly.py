"""Rate one simple command (wrappers already stripped) ReadOnly, Exec or Destructive.

ReadOnly is what lets a command run without asking in default mode, so it comes only from the
allowlist of :mod:`cox.policy.options`: a listed program whose every option is a listed read-only
one (long options resolved as GNU getopt and git resolve abbreviations) and whose operands pass
its check. Anything else is Exec: an unknown program, an unknown option, an option that writes or
runs a program, a path-qualified program (``./ls`` is whatever the repository put there), a word
only known when it runs where an option could hide.
Destructive marks the commands that lose data no undo brings back (rm, dd, git reset --hard …);
it only changes what an approval says, never whether one is needed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from cox.protocol.types import Risk

from .options import GIT, PROGRAMS, operands

__all__ = ["rate"]

# git's global options that keep what runs (the others, -c, --exec-path, --config-env … do not)
_GIT_VALUED = frozenset({"-C", "--git-dir", "--work-tree", "--namespace"})
_GIT_FLAGS = frozenset({"--no-pager", "-P", "--no-optional-locks", "--bare", "--literal-pathspecs",
                        "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects"})
_GIT_MODES = {"stash": ("list", "show"), "remote": ("get-url", "show"), "worktree": ("list",), "reflog": ("show",)}
_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color",
                           "--get-colorbool"})
_DESTRUCTIVE = {"rm", "rmdir", "shred", "dd", "wipefs", "fdisk", "sfdisk", "truncate", "mkswap"}


def _git(args: Sequence[str]) -> int | None:
    """Index of the git sub-command in ``args`` past the global options, or None when a global
    option can change what runs (``-c``, ``--exec-path``) or there is no sub-command."""
    i = 0
    while i < len(args):
        a = args[i]
        if a in _GIT_VALUED:
            i += 2
        elif a in _GIT_FLAGS or a.startswith(("--git-dir=", "--work-tree=", "--namespace=")):
            i += 1
        elif a.startswith("-"):
            return None
        else:
            return i
    return None


def _git_read_only(args: Sequence[str], vague: Collection[int]) -> bool:
    sub, rest = args[0], list(args[1:])
    shift = 1
    modes = _GIT_MODES.get(sub)
    if modes is not None and rest and rest[0] in modes:
        sub, rest, shift = f"{sub} {rest[0]}", rest[1:], 2
    elif sub == "reflog" and rest and rest[0] in ("expire", "delete", "exists"):
        return False
    elif sub in ("stash", "worktree") or (sub == "remote" and rest and not rest[0].startswith("-")):
        return False
    spec = GIT.get(sub)
    if spec is None:
        return False
    ops = operands(spec, rest, {k - shift for k in vague if k >= shift} if vague else ())
    if ops is None:
        return False
    if sub == "remote":
        return not ops
    if sub in ("branch", "tag"):  # an operand names a branch or tag to create, unless listing
        return not ops or any(a in ("-l", "--list") or a.startswith("--lis") for a in rest)
    if sub == "config":
        return any(a in _CONFIG_READS or (a.startswith("--get") and "=" not in a) for a in rest)
    return True


def _git_destructive(sub: str, args: Sequence[str]) -> bool:
    if sub == "reset":
        return "--hard" in args or "--merge" in args or "--keep" in args
    if sub == "clean":
        return True
    if sub == "push":
        return any(a in ("-f", "--force", "--mirror", "--delete", "-d", "--prune")
                   or a.startswith(("--force-with-lease", "--force-if-includes", "+", ":"))
                   for a in args)
    if sub == "branch":
        return any(a in ("-D", "-d", "--delete") for a in args)
    if sub == "stash":
        return bool(args) and args[0] in ("drop", "clear")
    if sub == "checkout":
        return "--" in args or "." in args or "-f" in args or "--force" in args
    if sub == "restore":
        return "--staged" not in args or "--worktree" in args
    return False


def rate(words: Sequence[str], vague: Collection[int] = ()) -> Risk:
    """The risk of one command given as its unquoted words, command name first. ``vague`` holds
    the indexes of words whose value is only known when it runs (an expansion, a glob)."""
    if not words:
        return Risk.READ_ONLY
    name, args = words[0], words[1:]
    later: Collection[int] = ()
    if vague:
        if 0 in vague:
            return Risk.EXEC
        later = {k - 1 for k in vague if k > 0}
    if name == "git":
        i = _git(args)
        if i is None:
            return Risk.EXEC
        if _git_destructive(args[i], args[i + 1:]):
            return Risk.DESTRUCTIVE
        if any(k < i for k in later):
            return Risk.EXEC
        return Risk.READ_ONLY if _git_read_only(args[i:], {k - i for k in later} if later else ()) else Risk.EXEC
    if name in _DESTRUCTIVE or name.startswith("mkfs"):
        return Risk.DESTRUCTIVE
    if name == "find":
        return _find(args, later)
    if name == "command":  # ``command -v git`` looks a name up (the wrapper form is stripped earlier)
        return Risk.READ_ONLY if args and args[0] in ("-v", "-V") else Risk.EXEC
    if name == "printf":
        return Risk.EXEC if args and args[0].startswith("-v") else Risk.READ_ONLY
    if name in ("test", "["):
        return Risk.READ_ONLY
    spec = PROGRAMS.get(name)
    if spec is None:
        return Risk.EXEC
    if not args:
        return Risk.READ_ONLY if spec.operands is None or spec.operands([]) else Risk.EXEC
    ops = operands(spec, args, later)
    if ops is None or (spec.operands is not None and not spec.operands(ops)):
        return Risk.EXEC
    return Risk.READ_ONLY


# find's expression: what each read-only primary takes (not -exec, -execdir, -ok, -okdir, -delete,
# -fprint, -fprint0, -fprintf, -fls, -files0-from)
_FIND_NONE = frozenset({
    "-depth", "-d", "-mount", "-xdev", "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race", "-daystart",
    "-follow", "-warn", "-nowarn", "-help", "--help", "-version", "--version", "-empty", "-executable", "-false",
    "-true", "-nogroup", "-nouser", "-readable", "-writable", "-print", "-print0", "-ls", "-prune", "-quit",
    "-not", "!", "-a", "-and", "-o", "-or", ",", "(", ")",
})
_FIND_ONE = frozenset({
    "-maxdepth", "-mindepth", "-regextype", "-amin", "-anewer", "-atime", "-cmin", "-cnewer", "-ctime",
    "-fstype", "-gid", "-group", "-ilname", "-iname", "-inum", "-ipath", "-iregex", "-iwholename", "-links",
    "-lname", "-mmin", "-mtime", "-name", "-newer", "-path", "-perm", "-regex", "-samefile", "-size", "-type",
    "-uid", "-used", "-user", "-wholename", "-xtype", "-context", "-printf",
})


def _find(args: Sequence[str], vague: Collection[int]) -> Risk:
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P"):
        i += 1
    while i < len(args) and not args[i].startswith("-") and args[i] not in ("(", "!"):
        if i in vague:
            return Risk.EXEC  # a starting point only known at run time may be an expression
        i += 1  # the starting points
    risk = Risk.READ_ONLY
    while i < len(args):
        a = args[i]
        if i in vague:
            return Risk.EXEC
        if a == "-delete":
            return Risk.DESTRUCTIVE
        if a in _FIND_NONE:
            i += 1
        elif a in _FIND_ONE or (a.startswith("-newer") and len(a) == 8):
            i += 2
        else:
            risk = Risk.EXEC
            i += 1
    return risk
