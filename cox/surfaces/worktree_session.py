"""A session in a worktree (``cox --worktree NAME``, and ``--resume`` of such a session): which
worktree, the record that lets resume find it again, and the warnings the person sees.

The record is ``sessions/<id>.worktree.json`` next to the rollout (``{"path", "repo", "branch",
"name"}``): resume reopens the session there with the same roots, and refuses — pointing at
``git worktree list`` and ``cox --worktree <name> --resume <id>`` — when the worktree has been
removed, rather than making it again. ``cox sessions`` reads it for its ⧉ mark.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from cox.actors.store.layout import Layout
from cox.atomic import write_atomic
from cox.worktrees import Worktree, WorktreeError, WorktreeGone, main_checkout, open_worktree, owner, reopen

RECORD_MAX = 16 * 1024


def record_path(layout: Layout, session_id: str) -> Path:
    return layout.sessions / f"{session_id}.worktree.json"


def write_record(layout: Layout, session_id: str, wt: Worktree) -> None:
    layout.sessions.mkdir(parents=True, exist_ok=True)
    data = {"path": str(wt.path), "repo": str(wt.repo), "branch": wt.branch, "name": wt.name}
    write_atomic(record_path(layout, session_id), json.dumps(data).encode())


def read_record(layout: Layout, session_id: str) -> dict[str, str] | None:
    """The session's worktree record, or None (no record, or one that is not one)."""
    from cox.gitdirs import read_small

    text = read_small(record_path(layout, session_id), RECORD_MAX)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) and data[k]
                                             for k in ("path", "repo", "branch", "name")):
        return None
    return {k: str(data[k]) for k in ("path", "repo", "branch", "name")}


class Refusal(Exception):
    """The worktree session cannot start; ``str()`` is the sentence."""


def enter(args: Any, layout: Layout, cwd: Path) -> Worktree | None:
    """The worktree this session runs in: ``--worktree NAME`` (made or reused), or the one a
    resumed session worked in; None for a session in ``cwd`` itself."""
    name = getattr(args, "worktree", None)
    resume = getattr(args, "resume", None)
    rec = read_record(layout, resume) if resume else None
    try:
        if name is None and rec is not None:
            try:
                return reopen(Path(rec["path"]), Path(rec["repo"]), owner())
            except WorktreeGone:
                from .invocation import cox_command

                raise Refusal(
                    f"session {resume} worked in worktree {rec['path']}, which is gone "
                    f"(`git worktree list` in {rec['repo']} shows the worktrees there are); cox does not make it "
                    f"again on its own: to continue in a new one, run "
                    f"{cox_command()} --worktree {rec['name']} --resume {resume}") from None
        if name is None:
            return None
        repo = Path(rec["repo"]) if rec is not None else main_checkout(cwd)
        if repo is None:
            raise Refusal(f"--worktree {name}: {cwd} is not inside a git checkout; run cox in your repository "
                          "(or pass --cwd)")
        return open_worktree(repo, name, owner())
    except WorktreeError as exc:
        raise Refusal(str(exc)) from None


def announce(wt: Worktree, layout: Layout, session_id: str | None) -> list[str]:
    """Print (on stderr) and return what the person should know: the fetch that failed, and
    every other live session already working in this worktree (a warning, not a lock)."""
    lines = [f"warning: {n}" for n in wt.notices]
    for other in _others_in(layout, wt.path, session_id or ""):
        lines.append(f"warning: session {other['session_id']} (pid {other['pid']}) is already working in "
                     f"worktree {wt.path}")
    state = "new" if wt.created else "existing"
    print(f"cox: working in {state} worktree {wt.path} (branch {wt.branch}); the main checkout {wt.repo} "
          "is read-only", file=sys.stderr)
    for line in lines:
        print(f"cox: {line}", file=sys.stderr)
    return [line.removeprefix("warning: ") for line in lines]


def _others_in(layout: Layout, path: Path, session_id: str) -> list[dict[str, Any]]:
    from cox.actors.store import db, presence

    if not layout.db.exists():
        return []
    try:
        conn = db.connect_ro(layout.db)  # a surface only reads: the store actor is cox.db's writer
    except sqlite3.Error:
        return []
    try:
        return presence.in_worktree(conn, os.path.realpath(path), session_id)
    except sqlite3.Error:  # no presence table yet
        return []
    finally:
        conn.close()
