"""The git branch for the volatile system block, read from ``HEAD`` in Python.

The request names the branch the workspace is on (spec: "date, cwd, branch, memory"), read
again for every request, since the model may switch branches mid-session. It is never asked of
git: ``git rev-parse`` / ``symbolic-ref`` in the user's checkout read its ``.git/config``, which
can run commands (see ``cox.gitsafe``), and a process per request would cost more than the read.
The repository is not trusted either: ``HEAD`` may be a FIFO (an open would block the session),
huge (``cox.gitdirs.read_small`` reads neither), or hold text meant for the model, so only a
well-formed ref or object id on its first line is believed; anything else is named as unreadable.
"""

from __future__ import annotations

from pathlib import Path

from cox import lazyre

_HEX = lazyre.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_BAD_REF = lazyre.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^/|/$|\.lock$|^\.|/\.")


def branch_line(cwd: Path) -> str:
    """``branch: NAME``, or ``branch: none (…)`` for a detached HEAD, no repository, or a
    ``HEAD`` cox cannot read."""
    from cox.gitdirs import git_dirs, read_small

    found = git_dirs(cwd)
    if found is None:
        return "branch: none (not a git repository)"
    head = read_small(found[0] / "HEAD")
    if head is None:
        return "branch: unknown (.git/HEAD is not a file cox can read)"
    text = head.splitlines()[0].strip() if head.strip() else ""
    if text.startswith("ref:"):
        ref = text[len("ref:"):].strip()
        name = ref.removeprefix("refs/heads/")
        if ref.startswith("refs/") and len(ref) <= 255 and not _BAD_REF.search(ref):
            return f"branch: {name}"
    elif _HEX.fullmatch(text):
        return f"branch: none (detached HEAD at {text[:7]})"
    return "branch: unknown (.git/HEAD holds no ref cox can read)"
