"""``grep``, ``glob`` and ``ls``: finding files and lines in the workspace, .gitignore respected.

All three see the same files, listed here once (:func:`list_files`), so a file ``glob`` shows is
a file ``grep`` searches and an entry ``ls`` hides is one the others skip:

- inside a git repository (and with git on PATH): what ``git ls-files --cached --others
  --exclude-standard`` lists, i.e. git's own rules: every .gitignore, ``.git/info/exclude`` and
  the global excludes file; a tracked file stays visible even if a pattern matches it. Nested
  repositories and submodules are listed with their own rules.
- elsewhere (or when git fails): a small matcher of our own (:class:`Ignorer`) reads the
  .gitignore files of the folder, of its subfolders, and of its parents up to the workspace root
  (up to the repository root, plus ``.git/info/exclude``, when git itself is missing). It knows
  the common syntax: ``#`` comments, ``!`` negation, a trailing ``/`` for folders only, a ``/``
  at the start or in the middle to anchor, ``*``, ``?``, ``[...]`` and ``**``, read as git's
  wildmatch reads them (:mod:`cox.policy.wildmatch`: ``{a,b}`` is literal, as in git); last match
  wins, and a file inside an ignored folder stays ignored.
- hidden files are listed (``.github/`` matters); ``.git`` itself never; symlinks are not
  followed (one could lead out of the workspace). A folder you name explicitly is listed whole
  even when .gitignore hides it, since asking for it is the point.
- Read deny rules (the session's, ``ToolEnv.reads``) win over everything: a denied path named
  explicitly is denied; in a listing or a search, denied files — as listed or with their folders
  resolved (a tracked ``a/key`` whose ``a`` became a symlink) — and files that lead out of the
  workspace are skipped before any backend opens them, and the answer counts them. ``ls`` leaves
  a denied entry out too (a key's file name can say whose it is). Listed files are opened with
  ``O_NOFOLLOW`` and re-checked once they matched, so a file or folder swapped for a symlink
  while the search ran is dropped. ripgrep is given the kept files by name, so no ``--glob``
  exclude is needed: it never sees the others.

``grep`` runs ripgrep over that list when ``rg`` is on PATH and otherwise searches in Python;
both fill the same :class:`Hits`, so they give the same answer, sorted by path then line. The
same rules apply on both sides: a file with a NUL byte in its first 8 KiB is binary and skipped,
files over 50 MiB are skipped, a UTF-8 BOM is dropped, and a pattern matches one line at a time
unless ``multiline`` is set (rg -U --multiline-dotall; Python's DOTALL over the whole file).
What can still differ is the regex dialect (Rust's ``regex`` against Python's ``re``: the common
subset behaves the same; look-around exists only in Python) and lines that are not valid UTF-8.
"""

from __future__ import annotations

import bisect
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from cox.policy.paths import confine
from cox.policy.wildmatch import translate
from cox.protocol.interfaces import CancelToken
from cox.protocol.types import Risk, ToolCall, ToolResult
from cox.slim import dataclass

from . import catalog
from .base import BaseTool, ToolEnv, ToolInputError, path_denied, read_denied, read_guard
from .files import BINARY_SNIFF, display

MAX_FILE_BYTES = 50 * 1024 * 1024  # bigger files are skipped by both grep backends
MAX_LINE_CHARS = 500  # a minified line is clipped in the answer (the match is still counted)
DEFAULT_MAX_RESULTS = 200
RG_BATCH_CHARS = 100_000  # command-line bytes of file names per rg run


# --- globs (read by cox.policy.wildmatch: the shell dialect here, git's for .gitignore) --------


def glob_matcher(pattern: str, *, basename_if_no_slash: bool) -> Callable[[str], bool]:
    """A test for ``/``-separated paths relative to the search folder. With
    ``basename_if_no_slash`` (ripgrep's ``--glob`` convention, used by grep's ``glob``), a
    pattern without ``/`` such as ``*.py`` matches the file name at any depth; otherwise (shell
    convention, used by the glob tool) it matches at the top only and ``**/*.py`` goes deep."""
    pat = pattern.strip()
    while pat.startswith("./"):
        pat = pat[2:]
    pat = pat.lstrip("/") if pat != "/" else pat
    body = translate(pat, "shell")
    rx = re.compile(("(?:.*/)?" if basename_if_no_slash and "/" not in pat else "") + body + r"\Z", re.DOTALL)
    return lambda path: rx.match(path) is not None


# --- .gitignore without git -------------------------------------------------------------------


@dataclass(frozen=True)
class IgnoreRule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def parse_gitignore(text: str) -> list[IgnoreRule]:
    """The rules of one .gitignore (see the module docstring for the syntax kept)."""
    rules: list[IgnoreRule] = []
    for raw in text.splitlines():
        line = raw
        while line.endswith(" ") and not line.endswith("\\ "):
            line = line[:-1]
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = translate(line, "gitignore")
        prefix = "" if anchored else "(?:.*/)?"
        rules.append(IgnoreRule(re.compile(prefix + body + r"\Z", re.DOTALL), negate, dir_only))
    return rules


@dataclass(frozen=True)
class _RuleSet:
    rules: list[IgnoreRule]
    base: str  # the folder of the .gitignore, relative to the anchor, with a trailing "/" ("" = anchor)


class Ignorer:
    """Our .gitignore matcher, for folders git does not manage. Rule sets are kept relative to
    an anchor (the repository root, else the workspace root) in order, parents first, and the
    last rule that matches wins; paths asked about are relative to the walk root."""

    def __init__(self, root_rel: str = "", sets: list[_RuleSet] | None = None) -> None:
        self.root_rel = root_rel  # the walk root relative to the anchor, with a trailing "/"
        self.sets = sets or []

    @classmethod
    def for_root(cls, root: Path, top: Path) -> Ignorer:
        """The rules of the parents of ``root`` up to ``top`` (up to the repository root, plus
        .git/info/exclude, inside a repository whose git is missing or failed). If one of them
        hides ``root`` itself, none apply: the caller named that folder on purpose."""
        repo = git_root(root)
        anchor = repo if repo is not None and _inside(repo, top) else top
        if not _inside(root, anchor):
            anchor = root
        sets: list[_RuleSet] = []
        if repo is not None and anchor == repo:
            exclude = _read_text(repo / ".git" / "info" / "exclude")
            if exclude:
                sets.append(_RuleSet(parse_gitignore(exclude), ""))
        for folder in reversed(root.parents):
            if _inside(folder, anchor):
                text = _read_text(folder / ".gitignore")
                if text:
                    sets.append(_RuleSet(parse_gitignore(text), _rel_prefix(folder, anchor)))
        root_rel = _rel_prefix(root, anchor)
        ignorer = cls(root_rel, sets)
        parts = root_rel.rstrip("/").split("/") if root_rel else []
        if any(ignorer.matches("/".join(parts[: i + 1]), True) for i in range(len(parts))):
            return cls(root_rel)
        return ignorer

    def matches(self, path: str, is_dir: bool) -> bool:
        """Whether the rules hide ``path`` (relative to the anchor)."""
        verdict = False
        for rs in self.sets:
            if not path.startswith(rs.base):
                continue
            rel = path[len(rs.base) :]
            for rule in rs.rules:
                if (is_dir or not rule.dir_only) and rule.regex.match(rel):
                    verdict = not rule.negate
        return verdict

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether the rules hide ``rel`` (relative to the walk root)."""
        return self.matches(self.root_rel + rel, is_dir)

    def entering(self, folder: Path, rel: str) -> Ignorer:
        """This matcher plus the .gitignore of ``folder``, the walk root's subfolder ``rel``
        (``""`` for the walk root itself)."""
        text = _read_text(folder / ".gitignore")
        if not text:
            return self
        base = self.root_rel + (rel + "/" if rel else "")
        return Ignorer(self.root_rel, [*self.sets, _RuleSet(parse_gitignore(text), base)])


def _rel_prefix(path: Path, folder: Path) -> str:
    rel = path.relative_to(folder).as_posix()
    return "" if rel == "." else rel + "/"


def _inside(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# --- listing --------------------------------------------------------------------------------


def git_root(folder: Path) -> Path | None:
    """The work tree holding ``folder`` (a ``.git`` folder or file in it or a parent)."""
    for here in (folder, *folder.parents):
        if (here / ".git").exists():
            return here
    return None


def _git(args: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes] | None:
    """git in the (untrusted) workspace through ``cox.gitsafe``: nothing its config names runs.
    ls-files and check-ignore read no file contents, so no filter-driver lookup is needed."""
    from cox.gitsafe import run_git

    return run_git(cwd, "-c", "core.quotepath=off", *args, stdin=stdin, timeout=60, filters=False)


def _git_ignored(folder: Path, names: list[str]) -> set[str] | None:
    """Which of ``names`` (relative to ``folder``) git ignores; None when git cannot say."""
    if not names:
        return set()
    proc = _git(["check-ignore", "-z", "--stdin"], folder, "\0".join(names).encode() + b"\0")
    if proc is None or proc.returncode not in (0, 1):
        return None
    return {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}


def _walk_all(root: Path, prefix: str, ignorer: Ignorer | None, cancel: CancelToken | None,
              out: list[str]) -> None:
    """Walk without git: skip .git and symlinks, prune folders the ignorer hides."""
    try:
        entries = list(os.scandir(root / prefix if prefix else root))
    except OSError:
        return
    if ignorer is not None:
        ignorer = ignorer.entering(root / prefix if prefix else root, prefix.rstrip("/"))
    for entry in entries:
        if cancel is not None and cancel.cancelled:
            return
        if entry.name == ".git" or entry.is_symlink():
            continue
        rel = prefix + entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if ignorer is not None and ignorer.ignored(rel, is_dir):
            continue
        if is_dir:
            _walk_all(root, rel + "/", ignorer, cancel, out)
        elif entry.is_file(follow_symlinks=False):
            out.append(rel)


def _git_list(root: Path, cancel: CancelToken | None, depth: int) -> list[str] | None:
    proc = _git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"], root)
    if proc is None or proc.returncode != 0:
        return None
    out: list[str] = []
    for raw in dict.fromkeys(proc.stdout.split(b"\0")):
        if not raw:
            continue
        rel = os.fsdecode(raw).rstrip("/")
        try:
            st = os.lstat(root / rel)
        except OSError:
            continue  # deleted in the work tree but still in the index
        if stat.S_ISREG(st.st_mode):
            out.append(rel)
        elif stat.S_ISDIR(st.st_mode) and depth < 8:  # a submodule or a nested repository
            out.extend(f"{rel}/{sub}" for sub in _list(root / rel, root / rel, cancel, depth + 1))
    if not out:
        ignored = _git_ignored(root, [str(root)])
        if ignored:  # the folder itself is ignored: the caller named it, so show all of it
            _walk_all(root, "", None, cancel, out)
    return out


def _list(root: Path, top: Path, cancel: CancelToken | None, depth: int = 0) -> list[str]:
    if git_root(root) is not None:
        listed = _git_list(root, cancel, depth)
        if listed is not None:
            return listed
    out: list[str] = []
    _walk_all(root, "", Ignorer.for_root(root, top), cancel, out)
    return out


def list_files(root: Path, top: Path, cancel: CancelToken | None = None) -> list[str]:
    """The files under ``root`` that grep, glob and ls see, as sorted ``/``-separated paths
    relative to ``root``. ``top`` is the workspace root holding it (where parent .gitignore
    files stop being read when git does not manage the folder)."""
    return sorted(_list(root, top, cancel))


def hidden_entries(folder: Path, top: Path, names: list[str]) -> set[str]:
    """Which entries of ``folder`` the listing hides (for ``ls``). ``.git`` is always hidden."""
    hidden = {n for n in names if n == ".git"}
    rest = [n for n in names if n != ".git"]
    if git_root(folder) is not None:
        found = _git_ignored(folder, [str(folder), *rest])
        if found is not None:
            return hidden if str(folder) in found else hidden | (found & set(rest))
    ignorer = Ignorer.for_root(folder, top).entering(folder, "")
    return hidden | {n for n in rest if ignorer.ignored(n, _is_real_dir(folder / n))}


def _is_real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def workspace_top(path: Path, env: ToolEnv) -> Path:
    """The workspace root holding the (confined) ``path``."""
    for root in sorted((Path(os.path.realpath(r)) for r in env.roots), key=lambda p: len(p.parts), reverse=True):
        if _inside(path, root):
            return root
    return path


class Readable:
    """Which listed files a search may open: none a Read deny rule covers (as listed or with the
    folders above it resolved: a tracked ``a/key`` whose ``a`` became a symlink to ``~/.ssh``)
    and none that leads out of the workspace. Counts what it leaves out, for the answer."""

    def __init__(self, env: ToolEnv) -> None:
        self.guard = read_guard(env)
        self.roots = [os.path.realpath(r) for r in env.roots]
        self.real_dirs: dict[str, str] = {}
        self.rechecked: dict[str, str] = {}
        self.quiet: frozenset[str] = frozenset()
        self.denied = 0
        self.outside = 0

    def _inside(self, path: str) -> bool:
        return any(path == r or path.startswith(r.rstrip("/") + "/") for r in self.roots)

    def why_not(self, path: str, real_dirs: dict[str, str] | None = None, quiet: frozenset[str] = frozenset()) -> str | None:
        """``"denied"`` or ``"outside"`` when the file at absolute ``path`` may not be opened.
        ``quiet``: folders no rule can match anything under (their files skip the rule check
        while they resolve to themselves)."""
        cache = self.real_dirs if real_dirs is None else real_dirs
        folder, _, name = path.rpartition("/")
        real_dir = cache.get(folder)
        if real_dir is None:
            real_dir = cache[folder] = os.path.realpath(folder or "/")
        if real_dir == folder and any(folder == q or folder.startswith(q + "/") for q in quiet):
            return None if self._inside(folder) else "outside"
        real = real_dir.rstrip("/") + "/" + name
        if not self._inside(real):
            return "outside"
        if self.guard.denied(path) is not None or (real != path and self.guard.denied(real) is not None):
            return "denied"
        return None

    def ok(self, root: Path, rel: str) -> bool:
        """Whether ``rel`` (under ``root``) may still be opened, checked again once a search
        found lines in it, with its folder looked up anew (not from the listing's cache): a
        folder swapped for a symlink while the search ran does not leak."""
        return self.why_not(str(root).rstrip("/") + "/" + rel, self.rechecked, self.quiet) is None

    def filter(self, root: Path, files: list[str]) -> list[str]:
        """``files`` (relative to ``root``) without those it may not open, counted."""
        top = str(root).rstrip("/") or "/"
        quiet = frozenset({top} if self.guard.denied_below(top) is None else ())
        self.quiet = quiet
        base = top.rstrip("/") + "/"
        kept: list[str] = []
        for rel in files:
            why = self.why_not(base + rel, None, quiet)
            if why is None:
                kept.append(rel)
            elif why == "denied":
                self.denied += 1
            else:
                self.outside += 1
        return kept

    def counts(self) -> dict[str, int]:
        """The counts for a result's meta (only those that are not zero)."""
        both = {"skipped_denied": self.denied, "skipped_outside": self.outside}
        return {k: v for k, v in both.items() if v}

    def note(self) -> str:
        """What the answer says about the files left out ("" when none were)."""
        parts = []
        if self.denied:
            one = self.denied == 1
            parts.append(f"{self.denied} {'file' if one else 'files'} skipped: a Read deny rule "
                         f"covers {'it' if one else 'them'}")
        if self.outside:
            one = self.outside == 1
            parts.append(f"{self.outside} {'file' if one else 'files'} skipped: "
                         f"{'it leads' if one else 'they lead'} outside the workspace")
        return "(" + "; ".join(parts) + ")" if parts else ""


def _resolve_dir(call_input: dict[str, Any], env: ToolEnv, key: str = "path") -> Path:
    raw = call_input.get(key)
    if raw is None or raw == "":
        raw = "."
    if not isinstance(raw, str):
        raise ToolInputError(f"'{key}' must be a string")
    return confine(raw, env.roots, cwd=env.cwd, home=env.home)


def _subject(call_input: dict[str, Any], env: ToolEnv) -> str:
    try:
        return str(_resolve_dir(call_input, env))
    except Exception:
        return str(call_input.get("path") or "")


def _prefix(folder: Path, env: ToolEnv) -> str:
    shown = display(folder, env)
    return "" if shown == "." else shown.rstrip("/") + "/"


# --- grep results ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    match: bool


class Hits:
    """What grep found, from either backend. Keeps only the files that sort first and are
    needed to show ``max_results`` matches (or files), while counting everything."""

    def __init__(self, max_results: int, files_only: bool, counts: bool = False) -> None:
        self.max_results = max_results
        self.files_only = files_only
        self.counts = counts
        """Per-file counts: a file weighs one, as with ``files_only``, and shows its count."""
        self.paths: list[str] = []  # kept, sorted
        self.lines: dict[str, list[Line]] = {}
        self.kept = 0
        self.total_matches = 0
        self.total_files = 0

    def wants(self, path: str) -> bool:
        """Whether the lines of ``path`` could be shown; when not, :meth:`count` is enough."""
        return self.kept < self.max_results or not self.paths or path < self.paths[-1]

    def count(self, matches: int) -> None:
        """Count a file that sorts after everything shown without keeping its lines."""
        if matches:
            self.total_files += 1
            self.total_matches += matches

    def _weight(self, path: str) -> int:
        return 1 if self.files_only or self.counts else sum(1 for x in self.lines[path] if x.match)

    def add(self, path: str, lines: list[Line]) -> None:
        matches = sum(1 for x in lines if x.match)
        if not matches:
            return
        self.total_files += 1
        self.total_matches += matches
        bisect.insort(self.paths, path)
        self.lines[path] = sorted(lines, key=lambda x: x.number)
        self.kept += 1 if self.files_only or self.counts else matches
        while len(self.paths) > 1 and self.kept - self._weight(self.paths[-1]) >= self.max_results:
            last = self.paths.pop()
            self.kept -= self._weight(last)
            del self.lines[last]

    def render(self, prefix: str, context: int) -> tuple[str, int]:
        """The answer text, and how many matches (or files) it shows."""
        if self.files_only:
            listed = self.paths[: self.max_results]
            text = "\n".join(prefix + p for p in listed)
            if self.total_files > len(listed):
                text += (f"\n[showing {len(listed)} of {self.total_files} files; narrow the search "
                         "or raise max_results]")
            return text, len(listed)
        if self.counts:
            listed = self.paths[: self.max_results]
            counted = [f"{prefix}{p}:{sum(1 for x in self.lines[p] if x.match)}" for p in listed]
            more = (f"; showing {len(listed)} of {self.total_files} files, narrow the search or raise max_results"
                    if self.total_files > len(listed) else "")
            return "\n".join([*counted, f"[{self.total_matches} matching lines in {self.total_files} files{more}]"]), len(listed)
        out: list[str] = []
        shown = 0
        for path in self.paths:
            if shown >= self.max_results:
                break
            prev = None
            last_match = None
            for line in self.lines[path]:
                if line.match:
                    if shown >= self.max_results:
                        break
                    shown += 1
                    last_match = line.number
                elif shown >= self.max_results and last_match is not None and line.number > last_match + context:
                    break
                if context and out and (prev is None or line.number != prev + 1):
                    out.append("--")  # between groups that do not touch, as grep -C does
                sep = ":" if line.match else "-"
                out.append(f"{prefix}{path}{sep}{line.number}{sep}{_clip(line.text)}")
                prev = line.number
        text = "\n".join(out)
        if self.total_matches > shown:
            text += (f"\n[showing {shown} of {self.total_matches} matches in {self.total_files} files; "
                     "narrow the search or raise max_results]")
        return text, shown


def _clip(text: str) -> str:
    if text.endswith("\r"):
        text = text[:-1]
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]} …[+{len(text) - MAX_LINE_CHARS} chars]"


def _open_listed(path: Path) -> int:
    """An fd for a listed file, never through a symlink put in its place since it was listed."""
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))


def _read_listed(path: Path, limit: int | None) -> bytes | None:
    """The first ``limit`` bytes (all when None) of a listed file that is still a regular file
    of at most MAX_FILE_BYTES, read without following a symlink; None otherwise."""
    try:
        fd = _open_listed(path)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
                return None
            return f.read() if limit is None else f.read(limit)
    except OSError:
        return None


def _searchable(path: Path) -> bytes | None:
    """The bytes of a file grep may search: None for a binary, huge, unreadable or no longer
    regular one."""
    data = _read_listed(path, None)
    return None if data is None or b"\0" in data[:BINARY_SNIFF] else data


def _is_text_file(path: Path) -> bool:
    head = _read_listed(path, BINARY_SNIFF)
    return head is not None and b"\0" not in head


# --- grep backends --------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    pattern: str
    case_insensitive: bool
    context: int
    files_only: bool
    multiline: bool = False


def python_search(root: Path, files: list[str], q: Query, hits: Hits, cancel: CancelToken | None,
                  allowed: Callable[[str], bool] | None = None) -> str | None:
    """The fallback: Python's ``re``, one line at a time, with ripgrep's line rules. Returns
    the error for a bad pattern, else None."""
    flags = re.IGNORECASE if q.case_insensitive else 0
    if q.multiline:
        flags |= re.MULTILINE | re.DOTALL
    try:
        rx = re.compile(q.pattern, flags)
    except re.error as exc:
        return f"invalid regex {q.pattern!r}: {exc}"
    # A whole-file search first skips most files quickly; it can only find more than the
    # per-line search, except with anchors and look-behind that see across lines.
    whole = None if q.multiline or re.search(r"\\[AZz]|\(\?[=!<]", q.pattern) else re.compile(q.pattern, flags | re.MULTILINE)
    for rel in files:
        if cancel is not None and cancel.cancelled:
            return None
        data = _searchable(root / rel)
        if data is None:
            continue
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        text = data.decode("utf-8", "surrogateescape")
        if whole is not None and whole.search(text) is None:
            continue
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        found = [i for i in _multiline_found(rx, text, q.files_only) if i < len(lines)] if q.multiline else []
        for i, line in enumerate(lines if not q.multiline else ()):
            if rx.search(line) is not None:
                found.append(i)
                if q.files_only:
                    break
        if not found or (allowed is not None and not allowed(rel)):
            continue
        if not hits.wants(rel):
            hits.count(len(found))
            continue
        keep: dict[int, bool] = {}
        for i in found:
            for j in range(max(0, i - q.context), min(len(lines), i + q.context + 1)):
                keep.setdefault(j, False)
            keep[i] = True
        hits.add(rel, [Line(j + 1, _shown(lines[j]), m) for j, m in keep.items()])
    return None


def _multiline_found(rx: re.Pattern[str], text: str, first_only: bool) -> list[int]:
    """The (0-based) lines a multiline pattern's matches cover, each line once, as rg -U has them."""
    found: dict[int, None] = {}
    breaks = [m.start() for m in re.finditer("\n", text)]  # line i ends at breaks[i]
    for match in rx.finditer(text):
        start = bisect.bisect_left(breaks, match.start())
        end = bisect.bisect_left(breaks, max(match.start(), match.end() - 1))
        for i in range(start, end + 1):
            found.setdefault(i, None)
        if first_only:
            break
    return sorted(found)


def _shown(line: str) -> str:
    return line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _batches(files: list[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for f in files:
        if batch and size + len(f) + 1 > RG_BATCH_CHARS:
            yield batch
            batch, size = [], 0
        batch.append(f)
        size += len(f.encode("utf-8", "surrogateescape")) + 1
    if batch:
        yield batch


def rg_search(rg: str, root: Path, files: list[str], q: Query, hits: Hits, env: ToolEnv,
              allowed: Callable[[str], bool] | None = None) -> str | None:
    """ripgrep over the listed files (passed by name, so rg's own ignore rules play no part).
    ``allowed`` checks each file with matches once more before its lines are kept. Returns
    rg's error text for a bad pattern, else None."""
    # Plain ``path NUL line:text`` output: parsing JSON costs seconds on a million matches.
    # --text: no binary detection of its own (it would turn a late NUL into a line break);
    # the binary rule is ours, applied to both backends.
    args = [rg, "--no-config", "--no-messages", "--no-ignore", "--text", "--color", "never", "--no-heading",
            "--with-filename", "--line-number", "--no-column", "--null"]
    if q.case_insensitive:
        args.append("-i")
    if q.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if q.files_only:
        args += ["--max-count", "1"]
    elif q.context:
        args += ["--context", str(q.context)]
    args += ["-e", q.pattern, "--"]
    odd = [f for f in files if "\n" in f]  # a newline in a name would break rg's line output
    for batch in _batches([f for f in files if "\n" not in f]):
        if env.cancel.cancelled:
            return None
        error = _rg_run([*args, *batch], root, hits, env, allowed)
        if error:
            return error
    return python_search(root, odd, q, hits, env.cancel, allowed) if odd else None


def _rg_run(argv: list[str], root: Path, hits: Hits, env: ToolEnv,
            allowed: Callable[[str], bool] | None = None) -> str | None:
    import tempfile  # with the first rg run

    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                start_new_session=True)
        env.processes.append(proc)
        unregister = env.cancel.on_cancel(proc.kill)
        try:
            assert proc.stdout is not None
            _rg_read(proc.stdout, root, hits, allowed)
            code = proc.wait()
        finally:
            unregister()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
            if proc in env.processes:
                env.processes.remove(proc)
        if code == 2:
            err.seek(0)
            message = err.read().decode("utf-8", "replace").strip()
            if message:
                return message
    return None


def _rg_read(stream: Iterable[bytes], root: Path, hits: Hits, allowed: Callable[[str], bool] | None = None) -> None:
    """Collect rg's lines per file (rg writes each file's lines together) into ``hits``."""
    path: bytes | None = None
    rel = ""
    keep = True
    current: list[Line] = []
    matches = 0

    def flush() -> None:
        # The fallback's file rules (rg searches a file named to it even when it is binary).
        if path is None or not matches or not _is_text_file(root / rel) or (allowed is not None and not allowed(rel)):
            return
        if keep:
            hits.add(rel, current)
        else:
            hits.count(matches)

    for raw in stream:
        line = raw[:-1] if raw.endswith(b"\n") else raw
        name, nul, rest = line.partition(b"\0")
        if not nul:
            continue  # the "--" between context groups
        if name != path:
            flush()
            path, rel, current, matches = name, os.fsdecode(name), [], 0
            keep = hits.wants(rel)
        digits = len(rest) - len(rest.lstrip(b"0123456789"))
        if not digits or digits >= len(rest):
            continue
        is_match = rest[digits : digits + 1] == b":"
        matches += is_match
        if keep:
            current.append(Line(int(rest[:digits]), rest[digits + 1 :].decode("utf-8", "replace"), is_match))
    flush()


# --- the tools ------------------------------------------------------------------------------


def _int(call_input: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    raw = call_input.get(key, default)
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int | float) or int(raw) != raw:
        raise ToolInputError(f"'{key}' must be an integer")
    value = int(raw)
    if not lo <= value <= hi:
        raise ToolInputError(f"'{key}' must be between {lo} and {hi}")
    return value


def _flag(call_input: dict[str, Any], key: str) -> bool:
    raw = call_input.get(key, False)
    if raw is None:
        return False
    if not isinstance(raw, bool):
        raise ToolInputError(f"'{key}' must be true or false")
    return raw


class GrepTool(BaseTool):
    spec = catalog.GREP

    def __init__(self, backend: str = "auto") -> None:
        """``backend``: ``auto`` (rg when on PATH), ``rg`` or ``python`` (tests compare them)."""
        self.backend = backend

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return _subject(call_input, env)

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        inp = call.input
        pattern = inp.get("pattern")
        if not isinstance(pattern, str):
            raise ToolInputError("'pattern' must be a string")
        multiline = _flag(inp, "multiline")
        if not multiline and ("\n" in pattern or re.search(r"(?:^|[^\\])(?:\\\\)*\\n", pattern)):
            raise ToolInputError("grep matches one line at a time unless multiline is set, so the pattern cannot "
                                 "contain a newline; set multiline: true, or search for one of the lines")
        counts = _flag(inp, "count")
        if counts and _flag(inp, "files_with_matches"):
            raise ToolInputError("grep: choose count or files_with_matches, not both")
        q = Query(pattern, bool(inp.get("case_insensitive")), 0 if counts else _int(inp, "context", 0, 0, 20),
                  _flag(inp, "files_with_matches"), multiline)
        max_results = _int(inp, "max_results", DEFAULT_MAX_RESULTS, 1, 5000)
        target = _resolve_dir(inp, env)
        rule = path_denied(env, str(inp.get("path") or "."), target)
        if rule is not None:
            return read_denied(display(target, env), rule)
        if not target.exists():
            return ToolResult.error(f"{display(target, env)} does not exist")
        if target.is_dir():
            root = target
            files = list_files(root, workspace_top(root, env), env.cancel)
        else:
            root = target.parent
            files = [target.name]
        readable = Readable(env)
        files = readable.filter(root, files)
        glob = inp.get("glob")
        if glob:
            if not isinstance(glob, str):
                raise ToolInputError("'glob' must be a string")
            negate = glob.startswith("!")
            matches = glob_matcher(glob[1:] if negate else glob, basename_if_no_slash=True)
            files = [f for f in files if matches(f) != negate]
        hits = Hits(max_results, q.files_only, counts)
        rg = shutil.which("rg") if self.backend in ("auto", "rg") else None
        if self.backend == "rg" and rg is None:
            return ToolResult.error("grep: ripgrep (rg) is not on PATH")
        def allowed(rel: str) -> bool:
            return readable.ok(root, rel)

        if rg is not None:
            error = rg_search(rg, root, files, q, hits, env, allowed)
        else:
            error = python_search(root, files, q, hits, env.cancel, allowed)
        if error:
            return ToolResult.error(f"grep: {error}")
        if env.cancel.cancelled:
            return ToolResult.aborted("grep: interrupted")
        where = display(target, env)
        note = readable.note()
        skipped = readable.counts()
        if not hits.total_files:
            text = f"no matches for /{pattern}/ in {where} ({len(files)} files searched)"
            return ToolResult(visible=text + (f"\n{note}" if note else ""),
                              meta={"matches": 0, "files": 0, "searched": len(files), **skipped})
        text, shown = hits.render(_prefix(root, env), q.context)
        return ToolResult(visible=text + (f"\n{note}" if note else ""),
                          meta={"matches": hits.total_matches, "files": hits.total_files, "shown": shown,
                                "searched": len(files), "backend": "rg" if rg else "python", **skipped})


def _split_glob(pattern: str) -> tuple[str, str]:
    """The leading folders of a glob that hold no wildcard, and the rest (``src/**/*.py`` →
    ``src``, ``**/*.py``), so only that folder is walked and an absolute pattern is confined."""
    parts = pattern.split("/")
    static: list[str] = []
    for i, part in enumerate(parts[:-1]):
        if re.search(r"[*?\[\]{}\\]", part):
            return "/".join(static) or ("/" if pattern.startswith("/") else "."), "/".join(parts[i:])
        static.append(part)
    return "/".join(static) or ("/" if pattern.startswith("/") else "."), parts[-1]


class GlobTool(BaseTool):
    spec = catalog.GLOB

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return _subject(call_input, env)

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        pattern = call.input.get("pattern")
        if not isinstance(pattern, str) or not pattern.strip():
            raise ToolInputError("'pattern' must be a non-empty string")
        base = _resolve_dir(call.input, env)
        rule = path_denied(env, str(call.input.get("path") or "."), base)
        static, rest = _split_glob(pattern.strip())
        folder = confine(static, env.roots, cwd=base, home=env.home) if static != "." else base
        if rule is None and static != ".":
            rule = path_denied(env, os.path.join(str(base), static), folder)
        if rule is not None:
            return read_denied(display(folder, env), rule)
        if not folder.is_dir():
            return ToolResult.error(f"{display(folder, env)} is not a folder")
        matches = glob_matcher(rest, basename_if_no_slash=False)
        readable = Readable(env)
        found = readable.filter(folder, [f for f in list_files(folder, workspace_top(folder, env), env.cancel)
                                         if matches(f)])
        if env.cancel.cancelled:
            return ToolResult.aborted("glob: interrupted")
        note = readable.note()
        skipped = readable.counts()
        if not found:
            return ToolResult(visible=f"no files match {pattern} in {display(base, env)}" + (f"\n{note}" if note else ""),
                              meta={"files": 0, **skipped})
        prefix = _prefix(folder, env)
        return ToolResult(visible="\n".join(prefix + f for f in found) + (f"\n{note}" if note else ""),
                          meta={"files": len(found), **skipped})


class LsTool(BaseTool):
    spec = catalog.LS

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        return _subject(call_input, env)

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        folder = _resolve_dir(call.input, env)
        rule = path_denied(env, str(call.input.get("path") or "."), folder)
        if rule is not None:
            return read_denied(display(folder, env), rule)
        if not folder.exists():
            return ToolResult.error(f"{display(folder, env)} does not exist")
        if not folder.is_dir():
            return ToolResult.error(f"{display(folder, env)} is a file, not a folder; use read")
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            return ToolResult.error(f"cannot list {display(folder, env)}: {exc.strerror or exc}")
        names = [e.name for e in entries]
        hidden = hidden_entries(folder, workspace_top(folder, env), names)
        guard = read_guard(env)
        denied = 0
        shown: list[str] = []
        for e in sorted(entries, key=lambda e: e.name):
            if e.name in hidden:
                continue
            if guard.refuses(os.path.join(str(folder), e.name)) is not None:
                denied += 1  # the name is left out too: a key's file name can say whose it is
                continue
            if e.is_symlink():
                shown.append(e.name + "@")
            elif e.is_dir(follow_symlinks=False):
                shown.append(e.name + "/")
            else:
                shown.append(e.name)
        ignored = len(hidden - {".git"})
        lines = list(shown) or ["(empty folder)"]
        if ignored:
            lines.append(f"({ignored} {'entry' if ignored == 1 else 'entries'} hidden by .gitignore)")
        if denied:
            lines.append(f"({denied} {'entry' if denied == 1 else 'entries'} left out: a Read deny rule covers "
                         f"{'it' if denied == 1 else 'them'})")
        return ToolResult(visible="\n".join(lines), meta={"entries": len(shown), "hidden": ignored,
                                                           **({"denied": denied} if denied else {})})
