"""One writer per session (issue 12, item 8): two real processes resuming one session.

Before, both appended to one rollout and the next resume told the model that commands which
ran were "aborted". Now the second ``--resume`` of a live session refuses with the holder's pid,
``--fork-session`` continues a copy under a new id, and a SIGKILLed holder leaves no stale lock.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

from cox.actors.store.rollout import read_rollout

BOUND_S = 60.0  # only a hang reaches it


def cox_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "cox.surfaces.cli", *args]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cox_cmd(*args), cwd=cwd, env=dict(os.environ), capture_output=True, text=True,
                          timeout=BOUND_S)


def script(path: Path, replies: list[dict]) -> str:
    path.write_text(json.dumps({"model": "scripted", "replies": replies}))
    return str(path)


def wait_for_line(stream: IO[str], kind: str) -> list[dict]:
    """Read stream-json lines until one of type ``kind`` (event-driven; bounded for a hang)."""
    seen: list[dict] = []
    done = threading.Event()

    def read() -> None:
        for raw in stream:
            if raw.strip():
                seen.append(json.loads(raw))
                if seen[-1]["type"] == kind:
                    break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(BOUND_S), f"no {kind} line within {BOUND_S} s: {seen}"
    assert seen and seen[-1]["type"] == kind, seen
    return seen


def start_stalled(tmp_path: Path, ws: Path, sid: str) -> subprocess.Popen[str]:
    s = script(tmp_path / "stall.json", [{"events": [{"stall": True}]}])
    proc = subprocess.Popen(cox_cmd("run", "--script", s, "--resume", sid, "-p", "wait", "--output-format",
                                    "stream-json"), cwd=ws, env=dict(os.environ), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    wait_for_line(proc.stdout, "turn_started")
    return proc


def first_session(tmp_path: Path, ws: Path) -> str:
    s = script(tmp_path / "one.json", [{"text": "one"}])
    p = run(["run", "--script", s, "-p", "first", "--output-format", "json"], ws)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])["session_id"]


def test_second_resume_of_a_live_session_refuses_with_the_holders_pid(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    sid = first_session(tmp_path, ws)
    holder = start_stalled(tmp_path, ws, sid)
    try:
        s = script(tmp_path / "two.json", [{"text": "two"}])
        second = run(["run", "--script", s, "--resume", sid, "-p", "me too", "--output-format", "json"], ws)
        assert second.returncode == 1
        assert f"session {sid} is in use by process {holder.pid}" in second.stderr
        assert "--fork-session" in second.stderr
        cont = run(["run", "--script", s, "--continue", "-p", "me too"], ws)
        assert cont.returncode == 1 and f"process {holder.pid}" in cont.stderr

        fork = run(["run", "--script", s, "--resume", sid, "--fork-session", "-p", "a copy",
                    "--output-format", "json"], ws)
        assert fork.returncode == 0, fork.stderr
        forked = json.loads(fork.stdout.splitlines()[-1])["session_id"]
        assert forked != sid
        texts = [e["text"] for e in read_rollout(Path(os.environ["COX_HOME"]) / "sessions" / f"{forked}.jsonl").events
                 if e["type"] == "user_message"]
        assert texts == ["first", "wait", "a copy"]  # the copy as it stood, the live turn included
    finally:
        holder.send_signal(signal.SIGINT)
        holder.communicate(timeout=BOUND_S)
    # The session's own rollout has only its own writer's turns.
    events = read_rollout(Path(os.environ["COX_HOME"]) / "sessions" / f"{sid}.jsonl").events
    assert [e["text"] for e in events if e["type"] == "user_message"] == ["first", "wait"]
    # Released at exit: the next resume works.
    s = script(tmp_path / "three.json", [{"text": "three"}])
    again = run(["run", "--script", s, "--resume", sid, "-p", "after"], ws)
    assert again.returncode == 0, again.stderr


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    sid = first_session(tmp_path, ws)
    holder = start_stalled(tmp_path, ws, sid)
    holder.kill()
    holder.communicate(timeout=BOUND_S)
    s = script(tmp_path / "two.json", [{"text": "two"}])
    p = run(["run", "--script", s, "--resume", sid, "-p", "after the kill", "--output-format", "json"], ws)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.splitlines()[-1])["result"] == "two"


def test_fork_session_needs_a_session_to_copy(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path / "one.json", [{"text": "one"}])
    p = run(["run", "--script", s, "--fork-session", "-p", "x"], ws)
    assert p.returncode != 0 and "--fork-session copies a stored session" in p.stderr
