"""Rate one simple command (wrappers already stripped) ReadOnly, Exec or Destructive.

ReadOnly is what lets a command run without asking in default mode, so the list is short and
each entry excludes the options that make it write a file or run another program
(``find -exec``, ``sort -o``, ``rg --pre``, ``git diff --output`` …). Anything not listed is Exec.
Destructive marks the commands that lose data no undo brings back (rm, dd, git reset --hard …);
it only changes what an approval says, never whether one is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cox.protocol.types import Risk

__all__ = ["rate"]

Check = Callable[[Sequence[str]], bool]


def _any(args: Sequence[str]) -> bool:
    return True


def _without(*bad: str) -> Check:
    """Read-only unless an argument is (or starts with ``opt=``) one of ``bad``."""

    def check(args: Sequence[str]) -> bool:
        for a in args:
            if a in bad or (a.startswith("--") and a.split("=", 1)[0] in bad):
                return False
            # short option clusters: ``-ao file`` holds ``-o``
            if len(a) > 2 and a[0] == "-" and a[1] != "-" and any(f"-{ch}" in bad for ch in a[1:]):
                return False
        return True

    return check


def _no_args(args: Sequence[str]) -> bool:
    return not args


def _at_most_one_operand(args: Sequence[str]) -> bool:
    """``uniq IN OUT`` writes OUT."""
    return sum(1 for a in args if not a.startswith("-")) <= 1


_SIMPLE: dict[str, Check] = {
    name: _any
    for name in (
        "ls", "cat", "head", "tail", "wc", "pwd", "echo", "printf", "true", "false", ":", "whoami",
        "id", "uname", "basename", "dirname", "realpath", "readlink", "file", "stat", "du", "df",
        "which", "type", "cut", "tr", "diff", "cmp", "comm", "nl", "tac", "rev", "md5sum", "sha1sum",
        "sha256sum", "sha512sum", "cksum", "b2sum", "base64", "column", "fold", "expand", "unexpand",
        "paste", "join", "seq", "sleep", "test", "[", "uptime", "free", "ps", "nproc", "arch",
        "groups", "locale", "cd", "pushd", "popd", "jq", "grep", "egrep", "fgrep",
    )
}
_SIMPLE.update({
    "tree": _without("-o"),
    "date": _without("-s", "--set"),
    "hostname": _no_args,
    "sort": _without("-o", "--output", "--compress-program"),
    "uniq": _at_most_one_operand,
    "rg": _without("--pre"),
    "fd": _without("-x", "--exec", "-X", "--exec-batch"),
    "find": _without("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
                     "-fprintf", "-fls"),
})

_BRANCH_LIST = frozenset({"-a", "-r", "-v", "-vv", "-l", "--list", "--all", "--remotes", "--verbose",
                          "--show-current", "--no-color", "--color"})


def _branch(a: Sequence[str]) -> bool:
    return all(x in _BRANCH_LIST for x in a)


def _tag(a: Sequence[str]) -> bool:
    return all(x in ("-l", "--list") or x.startswith("-n") for x in a)


def _remote(a: Sequence[str]) -> bool:
    return not a or list(a) in (["-v"], ["--verbose"]) or a[0] in ("get-url", "show")


def _first_in(*allowed: str, bare: bool = False) -> Check:
    def check(a: Sequence[str]) -> bool:
        return (bare and not a) or (bool(a) and a[0] in allowed)

    return check


_GIT_READ: dict[str, Check] = {
    "status": _any, "log": _without("--output"), "show": _without("--output"),
    "diff": _without("--output"), "blame": _any, "ls-files": _any, "ls-tree": _any,
    "rev-parse": _any, "describe": _any, "shortlog": _any, "cat-file": _any, "merge-base": _any,
    "show-ref": _any, "grep": _without("-O", "--open-files-in-pager"), "count-objects": _any,
    "version": _any, "rev-list": _any, "ls-remote": _any, "whatchanged": _any,
    "branch": _branch, "tag": _tag, "remote": _remote,
    "stash": _first_in("list", "show"),
    "config": _first_in("--get", "--get-all", "--list", "-l", "--get-regexp"),
    "reflog": _first_in("show", bare=True),
    "worktree": _first_in("list"),
}

_DESTRUCTIVE = {"rm", "rmdir", "shred", "dd", "wipefs", "fdisk", "sfdisk", "truncate", "mkswap"}


def _git(args: Sequence[str]) -> tuple[str, list[str]] | None:
    """The git sub-command and its arguments past the global options, or None when a global
    option can change what runs (``-c``, ``--exec-path``)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-C", "--git-dir", "--work-tree", "--namespace"):
            i += 2
        elif a in ("--no-pager", "-P", "--no-optional-locks", "--bare", "--literal-pathspecs") or \
                a.startswith(("--git-dir=", "--work-tree=", "--namespace=")):
            i += 1
        elif a.startswith("-"):
            return None
        else:
            return a, list(args[i + 1:])
    return None


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


def rate(words: Sequence[str], vague: Sequence[int] = ()) -> Risk:
    """The risk of one command given as its unquoted words, command name first."""
    if not words:
        return Risk.READ_ONLY
    name, args = words[0], words[1:]
    if name == "git":
        parsed = _git(args)
        if parsed is None:
            return Risk.EXEC
        sub, rest = parsed
        if _git_destructive(sub, rest):
            return Risk.DESTRUCTIVE
        check = _GIT_READ.get(sub)
        return Risk.READ_ONLY if check is not None and check(rest) else Risk.EXEC
    if name in _DESTRUCTIVE or name.startswith("mkfs"):
        return Risk.DESTRUCTIVE
    if name == "find" and "-delete" in args:
        return Risk.DESTRUCTIVE
    if name == "command":  # ``command -v git`` looks a name up (the wrapper form is stripped earlier)
        return Risk.READ_ONLY if args and args[0] in ("-v", "-V") else Risk.EXEC
    check = _SIMPLE.get(name)
    return Risk.READ_ONLY if check is not None and check(args) else Risk.EXEC
