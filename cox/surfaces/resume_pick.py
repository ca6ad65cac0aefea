"""``cox -r`` / ``cox --resume`` without an id: choose which stored session of this workspace to
continue, before any session opens (Claude Code's ``claude --resume`` picker).

The list is cox.db's index read through the read-only surface connection, newest first: the
person's own sessions (a subagent's session is its parent's business, and an index row with no
prompt and no turn has nothing to continue), those that worked here and those that worked in a
worktree of this checkout (``⧉``: resume reopens it there). A session another live cox holds is
marked; choosing it gets the refusal ``--resume ID`` gets (unless ``--fork-session``: a copy is
never refused). The TUI draws the picker (:mod:`cox.surfaces.tui.picker_view`); ``--plain`` and a
terminal-less run get a numbered list and a prompt for the number (:func:`plain_pick`).

No stored session here: the sentence says so and cox exits 0 without opening one, as Claude Code
does ("No conversations found to resume") — the person asked to continue something, so a fresh
session would be a surprise they did not ask for; ``cox`` alone starts one. A headless run never
gets here: there ``-r`` alone is the latest session (``compat_flags.normalise_resume``).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import IO, Any

from cox.actors.store.layout import Layout, cox_home
from cox.slim import dataclass


@dataclass
class Choice:
    """One stored session, as the picker shows it (``title`` already scrubbed and sanitised)."""

    id: str
    title: str
    updated_at: float
    turns: int
    model: str
    cwd: str
    worktree: str = ""
    """The worktree's name when the session worked in one."""
    branch: str = ""
    busy: str = ""
    """The refusal ``--resume ID`` would get (another live cox holds it), else empty."""


def clean(text: str) -> str:
    """A title as one line a terminal can show: secrets scrubbed, escapes made visible."""
    from cox.policy.redact import scrub
    from cox.policy.sanitize import sanitize

    return sanitize(" ".join(scrub(text)[0].split()))


def stored_sessions(layout: Layout, cwd: Path) -> list[Choice]:
    """The sessions of workspace ``cwd`` that can be resumed, newest first (see the module)."""
    from cox.actors.store import db, lock

    from .commands import _parents
    from .worktree_session import read_record

    nothing: tuple[list[dict[str, Any]], dict[str, str]] = ([], {})  # a surface only reads: the store writes
    rows, parents = db.read(layout.db, lambda conn: (db.list_sessions(conn, limit=100_000), _parents(conn)), nothing)
    here = os.path.realpath(cwd)
    out: list[Choice] = []
    for row in rows:
        sid = str(row["id"])
        if sid in parents or (not row["turns"] and not row["title"]):
            continue
        rec = read_record(layout, sid)
        places = {os.path.realpath(str(row["cwd"]))}
        if rec is not None:
            places |= {os.path.realpath(rec["path"]), os.path.realpath(rec["repo"])}
        if here not in places:
            continue
        refusal = lock.busy(layout.sessions, sid)
        out.append(Choice(id=sid, title=clean(str(row["title"])) or "(no prompt)", updated_at=float(row["updated_at"]),
                          turns=int(row["turns"] or 0), model=clean(str(row["model"])), cwd=str(row["cwd"]),
                          worktree=clean(rec["name"]) if rec else "", branch=clean(rec["branch"]) if rec else "",
                          busy=str(refusal) if refusal is not None else ""))
    return out


def recheck(c: Choice, layout: Layout | None = None) -> None:
    """Probe a session marked busy again before refusing it: its holder may have ended since the
    list was read. (One that was free then and is held now is refused when it is claimed.)"""
    from cox.actors.store import lock

    if c.busy:
        refusal = lock.busy((layout or Layout(cox_home())).sessions, c.id)
        c.busy = str(refusal) if refusal is not None else ""


def age(seconds: float) -> str:
    """``just now`` · ``5m ago`` · ``3h ago`` · ``2d ago`` · ``7w ago``."""
    s = max(0, int(seconds))
    for unit, size in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit} ago"
    return "just now"


def details(c: Choice, now: float) -> str:
    """What a row says besides its title: age, turns, model, worktree and branch, whether busy."""
    turns = f"{c.turns} turn{'s' if c.turns != 1 else ''}"
    parts = [age(now - c.updated_at), turns, c.model or "?"]
    if c.worktree:
        parts.append(f"⧉ {c.worktree} ({c.branch})" if c.branch else f"⧉ {c.worktree}")
    if c.busy:
        parts.append("● in use")
    return " · ".join(parts)


# --- the flow ------------------------------------------------------------------------------

def choose(args: Any) -> int | None:
    """Before ``cmd_interactive`` opens anything: put the chosen id in ``args.resume`` and return
    None (go on), or return the exit code (no session here, cancelled, a broken home)."""
    import sqlite3

    from .commands import fail
    from .home import home_problem

    cwd = Path(getattr(args, "cwd", None) or os.getcwd()).resolve()
    home = cox_home()
    problem = home_problem(home, create=False)
    if problem:
        return fail(problem)
    try:
        choices = stored_sessions(Layout(home), cwd)
    except (sqlite3.Error, OSError) as exc:
        return fail(home_problem(home, create=False, deep=True) or f"cannot read the stored sessions in {home}: {exc}")
    if not choices:
        print(f"no stored session in {clean(str(cwd))} to resume; run cox without -r to start one "
              "(`cox sessions` lists every workspace's)")
        return 0
    fork = bool(getattr(args, "fork_session", False))
    if getattr(args, "plain", False) or not (sys.stdin.isatty() and sys.stdout.isatty()):
        picked = plain_pick(choices, sys.stdin, sys.stdout, fork=fork)
    else:
        from .tui.picker_view import pick

        picked = pick(choices, fork=fork)
    if picked is None:
        print("no session resumed: the picker was closed (nothing was opened)")
        return 0
    args.resume = picked
    return None


def plain_pick(choices: list[Choice], stdin: IO[str], out: IO[str], *, fork: bool = False) -> str | None:
    """The numbered list and a prompt for the number; an empty line, ``q`` or the end of input
    cancels. A busy session's number gets its refusal and the prompt again."""
    now = time.time()
    out.write("resume which session? (newest first)\n")
    width = len(str(len(choices)))
    for n, c in enumerate(choices, 1):
        out.write(f"  {n:>{width}}. {c.title[:70]}\n  {'':>{width}}  {details(c, now)}\n")
    while True:
        out.write(f"number (1-{len(choices)}; Enter or q cancels) › ")
        out.flush()
        line = read_line(stdin)
        if line is None:
            out.write("\n")
            return None
        text = line.strip()
        if text in ("", "q", "Q"):
            return None
        if not text.isdigit() or not 1 <= int(text) <= len(choices):
            out.write(f"{clean(text)!r} is not one of the numbers 1-{len(choices)}\n")
            continue
        c = choices[int(text) - 1]
        recheck(c)
        if c.busy and not fork:
            out.write(f"cox: {c.busy}\n")
            continue
        return c.id


def read_line(stream: IO[str]) -> str | None:
    """One line, None at the end of input. From a descriptor it is read a byte at a time: a
    buffered read would swallow the lines after it, which the session's surface reads next."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        line = stream.readline()
        return line.rstrip("\n") if line else None
    data = b""
    while True:
        byte = os.read(fd, 1)
        if not byte:
            return data.decode("utf-8", "replace") if data else None
        if byte == b"\n":
            return data.decode("utf-8", "replace").rstrip("\r")
        data += byte
