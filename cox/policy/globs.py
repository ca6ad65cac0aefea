"""Path globs of file rules (``Read(~/.ssh/**)``, ``Edit(secrets/**)``) as anchored regexes.

The glob itself is read by :func:`cox.policy.wildmatch.translate` in its ``"rule"`` dialect;
this module anchors it. ``*`` matches within one path segment, ``**`` any number of segments, ``?`` one character but
``/``, ``[abc]``/``[!abc]`` a class, ``\\x`` the character x. ``dir/**`` matches the directory
itself too, so a deny on a tree also stops a search rooted at it. A trailing ``/`` means
``/**``. Where a pattern starts:

- ``~`` and ``~/…``: the home directory;
- ``/…`` (and Claude Code's ``//…``): that absolute path;
- anything else, with or without ``./``: each workspace root.

Home and roots are also tried with symlinks resolved, since subjects are confined (real) paths;
``~`` also means the account's own home when ``$HOME`` points elsewhere.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Sequence

from cox import lazyre

from .wildmatch import translate

__all__ = ["GlobError", "check_glob", "compile_glob", "escape", "glob_source", "homes", "normalise", "segment_regex"]


class GlobError(ValueError):
    pass


_MAGIC = lazyre.compile(r"([*?\[\]\\])")


def escape(path: str) -> str:
    """``path`` as a glob that matches only itself (for a session grant)."""
    return _MAGIC.sub(r"\\\1", path)


def normalise(path: str, home: str, cwd: str) -> str:
    """An absolute, lexically normalised form of a subject path (``~`` and relative resolved)."""
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    elif not path.startswith("/"):
        path = cwd.rstrip("/") + "/" + path
    if path in ("", "/"):
        return "/"
    out = posixpath.normpath(path)
    return "/" + out.lstrip("/") if out.startswith("//") else out  # ``//x`` is ``/x`` on Linux


def _variants(base: str) -> list[str]:
    out = [posixpath.normpath(base)]
    try:
        real = os.path.realpath(base)
    except (OSError, ValueError):
        return out
    if real not in out:
        out.append(real)
    return out


@functools.lru_cache(maxsize=16)
def homes(home: str) -> tuple[str, ...]:
    """The home folder as configured and, when it differs, the account's own (``~root`` is
    /root whatever ``$HOME`` says): a rule about ``~/.ssh`` protects both. Looked up (the
    account database, ``realpath``) once per process for each home."""
    out = _variants(home)
    try:
        import pwd

        own = pwd.getpwuid(os.geteuid()).pw_dir
    except (ImportError, KeyError, OSError):
        return tuple(out)
    if own and own.startswith("/") and own not in ("/", "/nonexistent"):
        out.extend(v for v in _variants(own) if v not in out)
    return tuple(out)


def check_glob(pattern: str, home: str, roots: Sequence[str]) -> None:
    """Raise the :class:`GlobError` :func:`compile_glob` would raise for ``pattern``, without
    compiling it (a rule's glob is compiled when a path is first checked against it). Past the
    checks of where it starts, only a bracket expression can be wrong (a reversed range), so
    only a pattern with one is translated now."""
    _check_start(pattern, roots)
    if "[" in pattern:
        _alternatives(pattern, home, roots)


def _check_start(pattern: str, roots: Sequence[str]) -> None:
    if not pattern.strip():
        raise GlobError("the path is empty")
    if pattern.startswith("~") and pattern != "~" and not pattern.startswith("~/"):
        raise GlobError("only ~ and ~/… name the home directory (not ~user)")
    if not pattern.startswith(("~", "/")) and not roots:
        raise GlobError("a relative path needs a workspace root")


def _absolute(pattern: str, home: str, roots: Sequence[str]) -> list[str]:
    if pattern == "~" or pattern.startswith("~/"):
        return [escape(b) + pattern[1:] for b in homes(home)]
    if pattern.startswith("/"):
        return ["/" + pattern.lstrip("/")]
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return [escape(b.rstrip("/")) + "/" + pattern for r in roots for b in _variants(r)]


def _alternatives(pattern: str, home: str, roots: Sequence[str]) -> list[str]:
    """The regex text of ``pattern`` from each base it may start from (checked already)."""
    if pattern.endswith("/"):
        pattern += "**"
    alternatives = []
    for absolute in _absolute(pattern, home, roots):
        collapsed = re.sub("/+", "/", absolute)
        if "/../" in collapsed + "/" or "/./" in collapsed + "/":
            collapsed = posixpath.normpath(collapsed)
        try:
            alternatives.append(translate(collapsed, "rule"))
        except ValueError as exc:
            raise GlobError(f"not a valid glob ({exc})") from exc
    return alternatives


def glob_source(pattern: str, home: str, roots: Sequence[str]) -> str:
    """The text of :func:`compile_glob`'s regex (to join several into one without compiling each)."""
    _check_start(pattern, roots)
    return "(?:" + "|".join(dict.fromkeys(_alternatives(pattern, home, roots))) + r")\Z"


def compile_glob(pattern: str, home: str, roots: Sequence[str]) -> re.Pattern[str]:
    """One anchored regex for ``pattern`` against every base it may start from (flag DOTALL)."""
    source = glob_source(pattern, home, roots)
    try:
        return re.compile(source, re.DOTALL)
    except re.error as exc:
        raise GlobError(f"not a valid glob ({exc})") from exc


def segment_regex(segment: str) -> re.Pattern[str]:
    """One path segment's glob (a shell glob word's part between slashes) as an anchored regex;
    a class that does not compile (or a reversed range) matches its characters literally, as the
    word bash passes on when its glob matches nothing."""
    try:
        return re.compile(translate(segment, "rule") + r"\Z", re.DOTALL)
    except (re.error, ValueError):
        return re.compile(re.escape(segment) + r"\Z", re.DOTALL)
