"""A full disk is an error the user sees (issue 12, item 1).

Reproduced on a real 2 MiB tmpfs as COX_HOME: the rollout fills mid-turn. Before, the run exited
0 with a ``success`` result and the rollout silently lost its tail. Now: an ``error`` event, a
``turn_done{error}``, exit 1, a result naming the rollout and ENOSPC; no half line in the
rollout; and after freeing space, ``--resume`` works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cox.actors.store.rollout import RolloutWriter, read_rollout

from .conftest import fill


def cox(args: list[str], cwd: Path, home: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COX_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def lines(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def test_rollout_write_that_fills_the_disk_leaves_no_half_line(small_tmpfs: Path):
    path = small_tmpfs / "s.jsonl"
    w = RolloutWriter(path)
    w.append(json.dumps({"type": "turn_started", "turn": 1}))
    fill(small_tmpfs, 8 * 1024)
    big = json.dumps({"type": "text_delta", "text": "x" * 64 * 1024})
    with pytest.raises(OSError) as info:
        for _ in range(4):
            w.append(big)
    assert info.value.errno == 28  # ENOSPC
    assert path.read_bytes().endswith(b"\n")
    read = read_rollout(path)
    assert read.notices == [] and read.events[0]["type"] == "turn_started"
    (small_tmpfs / "filler").unlink()
    w.append(json.dumps({"type": "turn_done", "turn": 1, "stop": "end_turn"}))
    w.close()
    read = read_rollout(path)
    assert read.notices == [] and read.events[-1]["type"] == "turn_done"


def test_full_cox_home_fails_the_run_and_resume_works_after_freeing_space(tmp_path: Path, small_tmpfs: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = small_tmpfs / "cox-home"
    # A first run makes cox.db, the logs and a rollout while there is room.
    s1 = tmp_path / "s1.json"
    s1.write_text(json.dumps({"model": "scripted", "replies": [{"text": "ready"}]}))
    first = cox(["run", "--script", str(s1), "-p", "hello", "--output-format", "stream-json"], ws, home)
    assert first.returncode == 0, first.stderr
    sid = lines(first.stdout)[-1]["session_id"]

    # Leave 256 KiB; the reply streams 1.5 MiB of text deltas into the rollout.
    filler = fill(small_tmpfs, 256 * 1024)
    s2 = tmp_path / "s2.json"
    s2.write_text(json.dumps({"model": "scripted", "replies": [{"text": "y" * (1536 * 1024), "chunk": 8192}]}))
    full = cox(["run", "--script", str(s2), "--resume", sid, "-p", "talk a lot", "--output-format", "stream-json"],
               ws, home)
    out = lines(full.stdout)
    assert full.returncode == 1, (full.returncode, full.stderr[-2000:])
    errors = [o for o in out if o["type"] == "error"]
    # Which write meets the full disk first (the rollout's deltas, or cox.db's journal) depends on
    # timing; the rollout's failure must be among what the run says.
    rollout_errors = [e["message"] for e in errors if "could not write the rollout" in e["message"]]
    assert rollout_errors, errors
    assert str(home / "sessions" / f"{sid}.jsonl") in rollout_errors[0]
    assert all("ENOSPC" in e["message"] for e in errors), errors
    done = [o for o in out if o["type"] == "turn_done"]
    assert done and done[-1]["stop"] == "error"
    res = out[-1]
    assert res["type"] == "result" and res["is_error"] is True and res["subtype"] != "success"
    assert res["terminal_reason"] == "error"
    # The result's text becomes the error with the exit-code work of issue 12 (headless.py); until
    # then the partial answer stays in ``result`` and the error is the stream's error event above.
    if "errors" in res:
        assert "ENOSPC" in json.dumps(res["errors"]) and "could not write" in json.dumps(res["errors"])

    # What was written is consistent: every line whole.
    rollout = home / "sessions" / f"{sid}.jsonl"
    assert rollout.read_bytes().endswith(b"\n")
    assert read_rollout(rollout).notices == []

    filler.unlink()
    s3 = tmp_path / "s3.json"
    s3.write_text(json.dumps({"model": "scripted", "replies": [{"text": "back"}]}))
    again = cox(["run", "--script", str(s3), "--resume", sid, "-p", "still there?", "--output-format", "stream-json"],
                ws, home)
    assert again.returncode == 0, again.stderr[-2000:]
    assert lines(again.stdout)[-1]["result"] == "back"
    read = read_rollout(rollout)
    assert read.notices == []
    assert [e["text"] for e in read.events if e["type"] == "user_message"] == ["hello", "talk a lot", "still there?"]
