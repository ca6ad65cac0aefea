"""`cox sessions` shows subagents' sessions as a tree: each under its parent, indented, never as
a session of its own; ``--json`` names each one's parent."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any


def cox(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)


def agent(call_id: str, prompt: str) -> dict[str, Any]:
    return {"id": call_id, "name": "agent", "input": {"description": prompt, "prompt": prompt,
                                                       "subagent_type": "explore"}}


def test_child_sessions_are_listed_under_their_parent(tmp_path: Path, cox_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"model": "scripted", "replies": [
        # one step apart, so that a1 is the first (agents started together get ids by start order)
        {"tool_calls": [agent("c1", "look at a.txt")]},
        {"tool_calls": [agent("c2", "count the files")]},
        {"text": "both agents reported"},
    ], "agents": {
        "look at a.txt": [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
                          {"text": "the zebra file says alpha"}],
        "count the files": [{"text": "one file"}],
    }}))
    run = cox(["run", "--script", str(script), "-p", "send two agents", "--output-format", "stream-json",
               "--permission-mode", "bypassPermissions"], ws)
    events = [json.loads(x) for x in run.stdout.splitlines() if x.strip()]
    assert events[-1]["subtype"] == "success", run.stderr
    parent = events[0]["session_id"]
    other = tmp_path / "script2.json"
    other.write_text(json.dumps({"model": "scripted", "replies": [{"text": "alone"}]}))
    assert cox(["run", "--script", str(other), "-p", "a plain session"], ws).returncode == 0

    out = cox(["sessions"], ws).stdout.splitlines()
    tops = [x for x in out if not x.startswith(" ")]
    assert len(tops) == 2 and "a plain session" in tops[0] and "send two agents" in tops[1]
    at = out.index(tops[1])
    kids = out[at + 1:at + 3]
    assert [k.split()[:2] for k in kids] == [["└", f"{parent}-a1"], ["└", f"{parent}-a2"]]
    assert "look at a.txt" in kids[0] and "count the files" in kids[1]

    rows = [json.loads(x) for x in cox(["sessions", "--json"], ws).stdout.splitlines()]
    by_id = {r["id"]: r for r in rows}
    assert by_id[parent]["parent_id"] is None
    assert by_id[f"{parent}-a1"]["parent_id"] == parent and by_id[f"{parent}-a2"]["parent_id"] == parent
    assert [r["id"] for r in rows][-3:] == [parent, f"{parent}-a1", f"{parent}-a2"]  # the tree, in order

    # --limit counts the person's sessions: the newest tree is the plain one, its agents none
    assert [x for x in cox(["sessions", "--limit", "1"], ws).stdout.splitlines()] == [tops[0]]
    # a child's words found by --grep show it in its tree
    found = cox(["sessions", "--grep", "ZEBRA FILE"], ws).stdout.splitlines()
    assert "send two agents" in found[0]
    child = next(i for i, x in enumerate(found) if f"{parent}-a1" in x)
    assert found[child].startswith("  └ ") and "the zebra file says alpha" in found[child + 1]
    assert "a plain session" not in "\n".join(found)


def test_an_index_from_before_subagents_still_lists(tmp_path: Path, cox_home: Path) -> None:
    """A cox.db made before the ``parent_id`` column: every session is top-level."""
    cox_home.mkdir(exist_ok=True)
    conn = sqlite3.connect(cox_home / "cox.db")
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', "
                 "title TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, updated_at REAL NOT NULL, "
                 "turns INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL DEFAULT 'open')")
    conn.execute("INSERT INTO sessions VALUES ('old1', '/w', 'm', 'an old session', 1, 1, 2, 'closed')")
    conn.commit()
    conn.close()
    p = cox(["sessions"], tmp_path)
    assert p.returncode == 0 and "old1" in p.stdout and "an old session" in p.stdout, p.stderr
    (row,) = [json.loads(x) for x in cox(["sessions", "--json"], tmp_path).stdout.splitlines()]
    assert row["parent_id"] is None
