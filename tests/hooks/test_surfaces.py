"""Hooks are wired wherever a session opens: `cox run` (the other tests), --plain, and a resumed
session (SessionStart's source is then "resume")."""

from __future__ import annotations

import json
import os

from .rig import Rig, one


def test_plain_runs_hooks_and_shows_their_warnings(rig: Rig) -> None:
    rig.hooks({"UserPromptSubmit": one(rig.logger("prompt")), "SessionStart": one(rig.logger("start")),
               "PostToolUse": one(rig.script("broken.sh", "exit 1"))})
    script = rig.tmp / "s.json"
    script.write_text(json.dumps({"model": "scripted", "replies": [
        {"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]}, {"text": "Read it."},
        {"text": "Again."}]}))
    p = rig.cox("--plain", "--script", str(script), input="read a\n/quit\n")
    assert p.returncode == 0, p.stderr
    assert [s["prompt"] for s in rig.seen("prompt")] == ["read a"]
    assert "PostToolUse hook" in p.stdout + p.stderr and "failed (exit 1)" in p.stdout + p.stderr
    sid = next(x.split(".")[0] for x in os.listdir(rig.cox_home / "sessions") if x.endswith(".jsonl"))
    p = rig.cox("--plain", "--script", str(script), "--resume", sid, input="again\n/quit\n")
    assert p.returncode == 0, p.stderr
    assert [s["source"] for s in rig.seen("start")] == ["startup", "resume"]
