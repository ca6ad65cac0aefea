"""Two real ``cox run`` sessions in one workspace (issue 12, items 2 and the presence notice).

Session A's bash call runs while session B writes a new file with the write tool; A's checkpoint
holds only A's file, B is told at start that A is live there, and rewinding A (a headless
rewind on ``--resume``) leaves B's file alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

BOUND_S = 60.0  # only a hang reaches it


def cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "cox.surfaces.cli", *args]


def script(path: Path, replies: list[dict]) -> str:
    path.write_text(json.dumps({"model": "scripted", "replies": replies}))
    return str(path)


def lines(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def read_until(stream: IO[str], pred, seen: list[dict]) -> None:
    done = threading.Event()

    def read() -> None:
        for raw in stream:
            if raw.strip():
                seen.append(json.loads(raw))
                if pred(seen[-1]):
                    break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(BOUND_S), f"no such line within {BOUND_S} s: {seen}"


@pytest.fixture
def signal_dir() -> Iterator[Path]:
    """A folder outside the workspace that a sandboxed command can see: the sandbox gives each
    session a private /tmp (where tmp_path lives), so the signal goes under /var/tmp."""
    d = Path(tempfile.mkdtemp(prefix="cox-signal-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_rewinding_one_session_never_deletes_anothers_file(tmp_path: Path, signal_dir: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("here before\n")
    go = signal_dir / "go"  # outside the workspace: the signal is not a workspace change
    # "running" on its output proves the call (and the snapshot before it) has begun.
    wait = f"echo running-and-waiting-for-the-signal-file; while [ ! -e {go} ]; do sleep 0.02; done; echo A > a.txt"
    sa = script(tmp_path / "a.json", [
        {"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": wait}}]},
        {"text": "A done"},
    ])
    env = dict(os.environ)
    a = subprocess.Popen(cmd("run", "--script", sa, "-p", "make a", "--permission-mode", "bypassPermissions",
                             "--output-format", "stream-json"), cwd=ws, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seen: list[dict] = []
    try:
        assert a.stdout is not None
        read_until(a.stdout, lambda e: e["type"] == "tool_call_output" and "running" in e["chunk"], seen)
        sid_a = seen[0]["session_id"]
        sb = script(tmp_path / "b.json", [
            {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "b.txt", "content": "B's\n"}}]},
            {"text": "B done"},
        ])
        b = subprocess.run(cmd("run", "--script", sb, "-p", "make b", "--permission-mode", "bypassPermissions",
                               "--output-format", "stream-json"), cwd=ws, env=env, capture_output=True, text=True,
                           timeout=BOUND_S)
        assert b.returncode == 0, b.stderr
        out_b = lines(b.stdout)
        notices = [e["message"] for e in out_b if e["type"] == "notice"]
        assert any("other cox session" in n and sid_a in n and str(a.pid) in n for n in notices), notices
        assert (ws / "b.txt").read_text() == "B's\n"
        go.write_text("")
        read_until(a.stdout, lambda e: e["type"] == "result", seen)
        assert a.wait(timeout=BOUND_S) == 0
    finally:
        go.write_text("")
        if a.poll() is None:
            a.kill()
        a.communicate(timeout=BOUND_S)
    checkpoints = [e for e in seen if e["type"] == "checkpoint"]
    assert [c["files"] for c in checkpoints] == [["a.txt"]], checkpoints
    assert (ws / "a.txt").read_text() == "A\n"

    rewind = json.dumps({"type": "rewind", "to_turn": 1, "what": "code"}) + "\n"
    r = subprocess.run(cmd("run", "--script", script(tmp_path / "r.json", []), "--resume", sid_a,
                           "--input-format", "stream-json", "--output-format", "stream-json"),
                       cwd=ws, env=env, input=rewind, capture_output=True, text=True, timeout=BOUND_S)
    out_r = lines(r.stdout)
    assert any(e["type"] == "rewound" for e in out_r), (out_r, r.stderr)
    assert not (ws / "a.txt").exists()            # A's own file: undone
    assert (ws / "b.txt").read_text() == "B's\n"  # B's: never touched
    assert (ws / "keep.txt").read_text() == "here before\n"


def test_a_rewind_over_the_persons_edit_reports_a_conflict_and_force_overrides(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("v0\n")
    s = script(tmp_path / "w.json", [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "f.txt", "content": "cox's\n"}}]},
        {"text": "done"},
    ])
    env = dict(os.environ)
    p = subprocess.run(cmd("run", "--script", s, "-p", "edit f", "--permission-mode", "bypassPermissions",
                           "--output-format", "json"), cwd=ws, env=env, capture_output=True, text=True,
                       timeout=BOUND_S)
    assert p.returncode == 0, p.stderr
    sid = lines(p.stdout)[-1]["session_id"]
    (ws / "f.txt").write_text("the person's edit\n")
    subs = [{"type": "rewind", "to_turn": 1, "what": "code"},
            {"type": "rewind", "to_turn": 1, "what": "code", "force": True}]
    r = subprocess.run(cmd("run", "--script", script(tmp_path / "r.json", []), "--resume", sid,
                           "--input-format", "stream-json", "--output-format", "stream-json"),
                       cwd=ws, env=env, input="".join(json.dumps(x) + "\n" for x in subs), capture_output=True,
                       text=True, timeout=BOUND_S)
    out = lines(r.stdout)
    notices = [e["message"] for e in out if e["type"] == "notice"]
    conflict = [n for n in notices if n.startswith("rewind conflict")]
    assert len(conflict) == 1 and "f.txt" in conflict[0] and "--force" in conflict[0], notices
    assert (ws / "f.txt").read_text() == "v0\n"  # the forced rewind, after the refused one
