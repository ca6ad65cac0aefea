"""Path globs of file rules (``Read(~/.ssh/**)``, ``Edit(secrets/**)``) as anchored regexes.

``*`` matches within one path segment, ``**`` any number of segments, ``?`` one character but
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

import os
import posixpath
import re
from collections.abc import Sequence

__all__ = ["GlobError", "compile_glob", "escape", "homes", "normalise", "segment_regex"]


class GlobError(ValueError):
    pass


_MAGIC = re.compile(r"([*?\[\]\\])")


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


def homes(home: str) -> list[str]:
    """The home folder as configured and, when it differs, the account's own (``~root`` is
    /root whatever ``$HOME`` says): a rule about ``~/.ssh`` protects both."""
    out = _variants(home)
    try:
        import pwd

        own = pwd.getpwuid(os.geteuid()).pw_dir
    except (ImportError, KeyError, OSError):
        return out
    if own and own.startswith("/") and own not in ("/", "/nonexistent"):
        out.extend(v for v in _variants(own) if v not in out)
    return out


def _absolute(pattern: str, home: str, roots: Sequence[str]) -> list[str]:
    if pattern == "~" or pattern.startswith("~/"):
        return [escape(b) + pattern[1:] for b in homes(home)]
    if pattern.startswith("~"):
        raise GlobError("only ~ and ~/… name the home directory (not ~user)")
    if pattern.startswith("/"):
        return ["/" + pattern.lstrip("/")]
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if not roots:
        raise GlobError("a relative path needs a workspace root")
    return [escape(b.rstrip("/")) + "/" + pattern for r in roots for b in _variants(r)]


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif c == "*":
            if pattern.startswith("**", i):
                j = i + 2
                if j < n and pattern[j] == "/":
                    out.append("(?:.*/)?")
                    i = j + 1
                elif j == n and out and out[-1] == "/":
                    out[-1] = "(?:/.*)?"
                    i = j
                else:
                    out.append(".*")
                    i = j
            else:
                out.append("[^/]*")
                i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1:j]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def compile_glob(pattern: str, home: str, roots: Sequence[str]) -> re.Pattern[str]:
    """One anchored regex for ``pattern`` against every base it may start from."""
    if not pattern.strip():
        raise GlobError("the path is empty")
    if pattern.endswith("/"):
        pattern += "**"
    alternatives = []
    for absolute in _absolute(pattern, home, roots):
        collapsed = re.sub("/+", "/", absolute)
        if "/../" in collapsed + "/" or "/./" in collapsed + "/":
            collapsed = posixpath.normpath(collapsed)
        alternatives.append(_translate(collapsed))
    try:
        return re.compile("(?:" + "|".join(dict.fromkeys(alternatives)) + r")\Z", re.DOTALL)
    except re.error as exc:
        raise GlobError(f"not a valid glob ({exc})") from exc


def segment_regex(segment: str) -> re.Pattern[str]:
    """One path segment's glob (a shell glob word's part between slashes) as an anchored regex;
    a class that does not compile matches its characters literally."""
    try:
        return re.compile(_translate(segment) + r"\Z", re.DOTALL)
    except re.error:
        return re.compile(re.escape(segment) + r"\Z", re.DOTALL)
