"""What a Read deny rule protects, checked for every reader: bash commands and the file tools.

The default config denies the file tools ``~/.ssh/**`` and other credential stores, yet ``cat
~/.ssh/id_rsa`` is a read-only command the risk default would run without asking. This guard
finds read-only commands that may read such a path, and the engine then asks instead of running
them unasked (cox run -p denies). It never denies on its own and never makes a command covered
that was not: it only takes away the read-only auto-allow. A command *may read* a denied path
when:

- an argument, an option's value (``--file=F``, ``-fF``) or a ``< F`` / ``3< F`` input names
  one, as written or with symlinks resolved (a workspace ``notes -> ~/.ssh/id_rsa``), after
  ``~``, ``~user``, ``~+``, ``$HOME``, ``$PWD`` and ``/proc/self/{cwd,root}`` are resolved;
- a glob argument matches one now (``cat ~/.ss?/id_*``), or has too much to look at to tell;
- a recursive reader (``grep -r``/``-d recurse``, ``rg``, ``diff -r``, ``ls -R``, ``git grep``
  and git's patch views) starts from a folder that holds one — relative rules (``./.env``)
  included; one that follows symlinks (``grep -R``, ``rg -L``, ``diff -r``) also when a symlink
  under its folder leads to one;
- the path is only known when the command runs: a variable, ``/proc/<pid>/cwd``, a file
  descriptor, ``cd "$X"`` before a relative path, or file names it reads from its input
  (``--files0-from``, bare ``xargs``). Commands that never open their arguments (``echo``,
  ``test`` …) are not readers.

Relative paths are tried from every folder a ``cd`` earlier in the line may have left the shell
in (``(cd /tmp); cat .env`` still reads the workspace's ``.env``).

The file tools (``read``, ``grep``, ``glob``, ``ls``) are not sandboxed, so for them this guard is
the boundary: :meth:`ReadGuard.refuses` checks one path as written and as resolved. For bash the
sandbox masks the denied paths as well; this guard makes the decision right where it can.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cox import lazyre
from cox.slim import dataclass

from .globs import homes, normalise, segment_regex
from .rules import Rule

if TYPE_CHECKING:  # a bash line is checked once the classifier has split it
    from .bash import Command, Split

__all__ = ["UNKNOWN", "Hit", "ReadGuard", "literal_base", "path_base", "searches_recursively", "unescape"]

UNKNOWN = "\0"  # prefix of a shell._paths entry whose path only the running shell knows
MAX_GLOB_ENTRIES = 4096  # folder entries one glob may look at before it counts as "may read"
MAX_LINK_SCAN = 4096  # entries a symlink-following search's folder may hold before the same
MAX_CWDS = 16

_GREPS = frozenset({"grep", "egrep", "fgrep"})
# Commands that never open their arguments as files: not readers, whatever the arguments.
_NOT_READERS = frozenset({"echo", "printf", "true", "false", ":", "test", "[", "[[", "pwd", "basename",
                          "dirname", "seq", "expr", "sleep", "which", "type", "whoami", "id", "uname",
                          "nproc", "arch", "groups", "locale", "uptime", "free", "ps", "df"})
# git sub-commands that print file contents from the repository (its history included).
_GIT_CONTENT = frozenset({"grep", "show", "diff", "blame", "cat-file", "archive", "format-patch",
                          "whatchanged", "annotate", "difftool"})
_GIT_LOG_PATCH = frozenset({"-p", "-u", "--patch", "--full-diff"})
_MAGIC = lazyre.compile(r"(?<!\\)(?:\\\\)*[*?\[]")
_PROC = lazyre.compile(r"/proc/(self|thread-self|\d+)(?:/task/\d+)?/(cwd|root|fd|fdinfo|map_files)(?=/|\Z)(.*)",
                       re.DOTALL)
_DEV_FD = lazyre.compile(r"/dev/(?:fd/(\d+)|stdin|stdout|stderr)(?=/|\Z)")


@dataclass(frozen=True, slots=True)
class Hit:
    """Why a command may read a denied path: the rule, what it reads (for the reason), and
    whether the path is only a possibility (a variable, a glob too big to look at)."""

    rule: Rule
    what: str
    unsure: bool = False


def literal_base(rule: Rule, home: str, root: str | None = None) -> str | None:
    """The absolute folder (or file) a path rule's glob starts with, before any glob character:
    ``~/.ssh/**`` → ``/home/me/.ssh``. A relative rule (``./.env``, ``secrets/**``) starts at
    ``root``; without a root it has none. None also for a rule that is not a path rule."""
    if rule.kind != "path":
        return None
    return path_base(rule.value, home, root)


def path_base(value: str, home: str, root: str | None = None) -> str | None:
    """:func:`literal_base` of a path pattern given as text (the sandbox masks what it names)."""
    cut = min((i for i, ch in enumerate(value) if ch in "*?[\\"), default=len(value))
    literal = value[:cut].rsplit("/", 1)[0] if cut < len(value) else value.rstrip("/") or value
    if value.startswith("/"):
        return "/" + normalise(literal or "/", home, "/").lstrip("/")
    if literal == "~" or literal.startswith("~/"):
        return normalise(literal, home, "/")
    if literal.startswith("~") or root is None:
        return None
    return normalise(literal or ".", home, root)


def unescape(pattern: str) -> str:
    """A shell._paths pattern as the path it names (``\\*`` → ``*``)."""
    return re.sub(r"\\(.)", r"\1", pattern, flags=re.DOTALL)


def _long(word: str, full: str, least: int) -> bool:
    """``word`` (before any ``=``) is ``full`` or a GNU abbreviation of it at least ``least``
    characters long."""
    name = word.split("=", 1)[0]
    return len(name) >= least and full.startswith(name)


def _cluster(word: str, letters: str) -> bool:
    return len(word) > 1 and word[0] == "-" and word[1] != "-" and any(ch in word[1:] for ch in letters)


def searches_recursively(text: str) -> str | None:
    """``"follow"`` when a (canonical) command reads every file under its folder arguments and
    follows symlinks there, ``"plain"`` when it reads them without following, else None."""
    words = text.split()
    name = words[0] if words else ""
    args = words[1:]
    if name in _GREPS:
        if any(_cluster(w, "R") or _long(w, "--dereference-recursive", 4) for w in args):
            return "follow"
        for i, w in enumerate(args):
            value = None
            if w == "-d" or _long(w, "--directories", 3) and "=" not in w:
                value = args[i + 1] if i + 1 < len(args) else ""
            elif w.startswith("-d") and not w.startswith("--"):
                value = w[2:].lstrip("=")
            elif _long(w, "--directories", 3):
                value = w.split("=", 1)[1]
            if _cluster(w, "r") or _long(w, "--recursive", 5) or (value and "recurse".startswith(value)
                                                                   and len(value) >= 2):
                return "plain"
        return None
    if name in ("rg", "ag", "ack"):
        follow = any(_cluster(w, "L" if name == "rg" else "f") or _long(w, "--follow", 4) for w in args)
        return "follow" if follow else "plain"
    if name == "diff" and any(_cluster(w, "r") or _long(w, "--recursive", 4) for w in args):
        return "plain" if "--no-dereference" in args else "follow"
    if name == "ls" and any(_cluster(w, "R") or _long(w, "--recursive", 4) for w in args):
        return "follow" if any(_cluster(w, "L") or _long(w, "--dereference", 5) for w in args) else "plain"
    return None


# Short options that take a value (``-m 5``), by searcher: a word after one may be that value.
_VALUE_LETTERS = {"grep": "ABCDdefm", "egrep": "ABCDdefm", "fgrep": "ABCDdefm", "rg": "ABCEMTdefgjmrt"}
_PATTERN_OPTS = ("--regexp", "--file")


def _searches_cwd(text: str) -> bool:
    """Whether a recursive search may search the current folder: no path operand is certain
    (``grep -r x`` and ``grep -m 1 x`` search ``.``; ``grep -r x src`` does not). Any option
    whose value could be the next word is assumed to take it, which can only say yes more often."""
    import shlex  # with the bash classifier, which split the line

    try:
        words = shlex.split(text)
    except ValueError:
        return True
    name = words[0] if words else ""
    if name in ("diff",):
        return False
    letters = _VALUE_LETTERS.get(name)
    operands: list[str] = []
    pattern_given = False
    i = 1
    while i < len(words):
        w = words[i]
        i += 1
        if w == "--":
            operands.extend(words[i:])
            break
        if w.startswith("--"):
            name_ = w.split("=", 1)[0]
            if any(len(name_) >= 4 and o.startswith(name_) for o in _PATTERN_OPTS):
                pattern_given = True
            if "=" not in w:
                i += 1  # it may take the next word as its value
            continue
        if w.startswith("-") and len(w) > 1:
            if letters is None:
                i += 1
                continue
            for k, ch in enumerate(w[1:], start=1):
                if ch in "ef":
                    pattern_given = True
                if ch in letters:
                    if k == len(w) - 1:
                        i += 1
                    break
            continue
        operands.append(w)
    paths = operands if pattern_given else operands[1:]
    return not paths


def _git_reads_repo(text: str) -> bool:
    """A git command that may print the content of any file in the repository or its history."""
    words = text.split()
    if not words or words[0] != "git":
        return False
    sub, prev = "", ""
    for w in words[1:]:
        if not w.startswith("-") and prev not in ("-C", "-c"):
            sub = w
            break
        prev = w
    if sub in _GIT_CONTENT or (sub == "stash" and "show" in words):
        return True
    return sub == "log" and any(w in _GIT_LOG_PATCH or _cluster(w, "p") for w in words[2:])


class ReadGuard:
    """The Read deny rules of one engine, compiled once for checking many paths fast: on the
    first path checked, not when the session starts (the session makes its guard then)."""

    def __init__(self, rules: Sequence[Rule], home: str, roots: Sequence[str]) -> None:
        self.rules = tuple(rules)
        self.home = home
        self.roots = tuple(str(r) for r in roots)
        self.root = self.roots[0] if self.roots else "/"
        self.any = next((r for r in self.rules if r.kind != "path"), None)  # a bare Read deny

    @functools.cached_property
    def rx(self) -> re.Pattern[str] | None:
        """Every path rule's regex in one, to rule out most paths with one match (a rule's own
        regex is compiled only when this one matched)."""
        patterns = [f"(?:{source})" for source in (r.source for r in self.rules) if source is not None]
        return re.compile("|".join(patterns), re.DOTALL) if patterns else None

    @functools.cached_property
    def bases(self) -> list[tuple[Rule, str, bool]]:
        """Each rule's literal folder, as written and with symlinks resolved; a relative rule has
        one per workspace root. ``glob``: whether the rule goes on past it (``**/.env``)."""
        bases: list[tuple[Rule, str, bool]] = []
        every_home = homes(self.home)
        for r in self.rules:
            globbed = r.value.endswith("/") or any(ch in r.value for ch in "*?[")
            anchors = every_home if r.value.startswith("~") else (self.home,)
            found = {literal_base(r, h, root) for h in anchors for root in self.roots or (None,)}
            for b in sorted(b for b in found if b is not None):
                bases.extend((r, v, globbed) for v in dict.fromkeys([b, os.path.realpath(b)]))
        return bases

    # --- one path ------------------------------------------------------------------------------

    def denied(self, path: str) -> Rule | None:
        """The rule denying reading the absolute, normalised ``path`` itself, or None."""
        if self.any is not None:
            return self.any
        if self.rx is None or self.rx.match(path) is None:
            return None
        return next((r for r in self.rules if r.matches(path)), None)

    def denied_below(self, path: str) -> Rule | None:
        """A rule that may deny something inside folder ``path`` (``rg key ~`` reads ~/.ssh;
        ``rg key .`` reads the workspace's ``.env``), or the folder itself."""
        if self.any is not None:
            return self.any
        below = path.rstrip("/") + "/"
        for r, base, globbed in self.bases:
            inner = base.rstrip("/") + "/"
            if inner.startswith(below) or (globbed and below.startswith(inner)):
                return r
        return self.denied(path)

    def refuses(self, path: str, *, below: bool = False) -> Rule | None:
        """The rule that keeps a file tool from ``path`` (absolute), checked as written and with
        symlinks resolved; with ``below``, also anything a rule may deny inside the folder."""
        if not self.rules:
            return None
        for p in _variants(path):
            r = self.denied(p) or (self.denied_below(p) if below else None)
            if r is not None:
                return r
        return None

    # --- bash ------------------------------------------------------------------------------

    def check(self, sp: Split) -> dict[str, Hit]:
        """``{command text: hit}`` for the read-only commands of ``sp`` that may read a denied path."""
        if not self.rules:
            return {}
        out: dict[str, Hit] = {}
        cwds: list[str | None] = [self.root]
        for c in sp.commands:
            name = c.text.split(" ", 1)[0]
            if c.read_only and name not in _NOT_READERS:
                hit = self._command(c, cwds)
                if hit is not None:
                    out[c.text] = hit
            if name in ("cd", "pushd", "popd"):
                self._moved(c, name, cwds)
        return out

    def _moved(self, c: Command, name: str, cwds: list[str | None]) -> None:
        """Add where ``cd``/``pushd``/``popd`` may leave the shell (keeping every earlier folder:
        a subshell's ``cd`` or a failing one leaves the shell where it was)."""
        args = [p for p in c.paths if p != "--"]
        new: list[str | None]
        rotates = name == "pushd" and bool(re.fullmatch(r"[+-]\d+", args[0] if args else "")) or (
            name == "pushd" and not args)  # ``pushd +1``, bare ``pushd``: a folder on the stack
        if name == "popd" or rotates or args[:1] == ["-"] or any(p.startswith(UNKNOWN) or _MAGIC.search(p)
                                                                for p in args[:1]):
            new = [None]
        elif not args:
            new = [self.home]
        else:
            target = unescape(args[0])
            new = []
            for cwd in list(cwds):
                new.extend(self._resolve(target, cwd) or [None])
        for n in new:
            n = n if len(cwds) < MAX_CWDS else None
            if n not in cwds:
                cwds.append(n)

    def _command(self, c: Command, cwds: Sequence[str | None]) -> Hit | None:
        recursive = searches_recursively(c.text)
        paths = list(c.paths)
        if _git_reads_repo(c.text):
            recursive = recursive or "plain"
            paths = [p for p in paths if ":" not in p] + [p.split(":", 1)[1] for p in paths if ":" in p]
            paths += [self.root]
        elif recursive and _searches_cwd(c.text):
            paths.append(".")
        unsure: Hit | None = None
        for p in paths:
            if p.startswith(UNKNOWN):
                unsure = unsure or Hit(self.any or self.rules[0], p[len(UNKNOWN):], True)
                continue
            for cwd in cwds:
                hit = self._path(p, cwd, recursive)
                if hit is not None and not hit.unsure:
                    return hit
                unsure = unsure or hit
        return unsure

    def _path(self, p: str, cwd: str | None, recursive: str | None) -> Hit | None:
        shown = unescape(p)
        if cwd is None and not p.startswith(("/", "~")):
            return Hit(self.any or self.rules[0], f"{shown} (relative to a folder only known when it runs)", True)
        if _MAGIC.search(p):
            return self._glob(p, cwd or "/", recursive)
        targets = self._resolve(shown, cwd or "/")
        if not targets:
            return Hit(self.any or self.rules[0], f"{shown} (a path only known when it runs)", True)
        for t in targets:
            hit = self._target(t, shown, recursive)
            if hit is not None:
                return hit
        return None

    def _target(self, path: str, shown: str, recursive: str | None) -> Hit | None:
        for v in _variants(path):
            r = self.denied(v)
            if r is not None:
                return Hit(r, shown)
            if recursive:
                r = self.denied_below(v)
                if r is not None:
                    return Hit(r, f"every file under {shown}")
        if recursive == "follow":
            return self._links_below(path, shown)
        return None

    def _resolve(self, path: str, cwd: str | None) -> list[str]:
        """Where ``path`` (relative to ``cwd``) leads, lexically: ``/proc/self/cwd`` is ``cwd``,
        ``/proc/*/root`` is ``/``. Empty when only the running shell knows (another process's
        cwd, a file descriptor)."""
        if cwd is None and not path.startswith(("/", "~")):
            return []
        full = normalise(_tilde(path), self.home, cwd or "/")
        for _ in range(8):
            m = _PROC.match(full)
            if m is not None:
                who, what, rest = m.groups()
                if what == "root":
                    full = normalise("/" + rest.lstrip("/"), self.home, "/")
                    continue
                if what == "cwd" and who in ("self", "thread-self") and cwd is not None:
                    full = normalise(rest.lstrip("/") or ".", self.home, cwd)
                    continue
                return []
            m = _DEV_FD.match(full)
            if m is not None:
                return [] if m.group(1) is not None and int(m.group(1)) > 2 else [full]
            break
        return [full]

    def _glob(self, pattern: str, cwd: str, recursive: str | None) -> Hit | None:
        """Expand a glob as bash would (dot files too, in case of ``dotglob``) and check what
        it matches; one with too much to look at may read anything."""
        shown = unescape(pattern)
        bases = self._resolve(pattern, cwd)
        if not bases:
            return Hit(self.any or self.rules[0], f"whatever {shown} matches (a path only known when it runs)", True)
        matches = _expand(bases[0])
        if matches is None:
            return Hit(self.any or self.rules[0], f"whatever {shown} matches (too many files to check)", True)
        for m in matches:
            for t in self._resolve(m, cwd) or [m]:
                hit = self._target(t, f"{t} (matched by {shown})", recursive)
                if hit is not None:
                    return hit
        return None

    def _links_below(self, folder: str, shown: str) -> Hit | None:
        """For a search that follows symlinks: a symlink under ``folder`` that leads to a denied
        path (or to a folder holding one)."""
        seen = 0
        stack = [folder]
        while stack:
            here = stack.pop()
            try:
                entries = list(os.scandir(here))
            except OSError:
                continue
            for e in entries:
                seen += 1
                if seen > MAX_LINK_SCAN:
                    return Hit(self.any or self.rules[0], f"every file under {shown}, symlinks followed "
                               "(too many files to check)", True)
                try:
                    if e.is_symlink():
                        real = os.path.realpath(e.path)
                        r = self.denied(real) or self.denied_below(real)
                        if r is not None:
                            return Hit(r, f"{real} through the symlink {e.path}")
                    elif e.is_dir(follow_symlinks=False) and e.name != ".git":
                        stack.append(e.path)
                except OSError:
                    continue
        return None


def _variants(path: str) -> list[str]:
    """``path`` and, when different, its real path (symlinks resolved as far as they exist)."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return [path]
    return [path] if real == path else [path, real]


def _tilde(path: str) -> str:
    """``~user/…`` as that account's home (bash's tilde expansion); ``~`` and ``~/`` stay."""
    if path.startswith("~") and not path.startswith(("~/",)) and path != "~":
        head, sep, rest = path.partition("/")
        expanded = os.path.expanduser(head)
        if expanded != head:
            return expanded + sep + rest
    return path


def _expand(pattern: str) -> list[str] | None:
    """The paths an absolute glob matches (each segment matched against folder entries, hidden
    ones included), or None past :data:`MAX_GLOB_ENTRIES` entries."""
    parts = pattern.split("/")
    current = ["/"]
    seen = 0
    for i, part in enumerate(parts):
        if not part:
            continue
        last = i == len(parts) - 1
        if not _MAGIC.search(part):
            lit = unescape(part)
            current = [posixpath.join(c, lit) for c in current]
            continue
        rx = segment_regex(part)
        nxt: list[str] = []
        for c in current:
            names = [".", ".."] if part.startswith(".") else []
            try:
                with os.scandir(c) as it:
                    for e in it:
                        seen += 1
                        if seen > MAX_GLOB_ENTRIES:
                            return None
                        if last or e.is_dir():
                            names.append(e.name)
            except OSError:
                continue
            nxt.extend(posixpath.join(c, n) for n in names if rx.match(n))
        current = nxt
        if len(current) > MAX_GLOB_ENTRIES:
            return None
    return [posixpath.normpath(c) for c in current]
