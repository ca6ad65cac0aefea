"""The line-mode surface in a real pseudo-terminal-free subprocess: type, approve, resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("headless")


def test_type_approve_and_resume(tmp_path: Path, cox_home: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [
        {"text": "Writing.", "tool_calls": [{"id": "w1", "name": "write", "input": {"path": "hi.txt", "content": "hi\n"}}]},
        {"text": "Created hi.txt."},
    ]}))
    env = {**os.environ}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "--script", str(script)], cwd=ws, env=env,
                       input="create hi.txt\ny\n/quit\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert (ws / "hi.txt").read_text() == "hi\n"
    assert "allow? [y]es once" in p.stdout and "Created hi.txt." in p.stdout
    sid = next(x.split(".")[0] for x in os.listdir(cox_home / "sessions"))
    script.write_text(json.dumps({"replies": [{"text": "Still here."}]}))
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "--script", str(script), "--resume", sid],
                       cwd=ws, env=env, input="again\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert f"resumed session {sid}" in p.stdout and "Still here." in p.stdout


def test_denying_stops_the_turn(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [
        {"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "touch x"}}]}, {"text": "never"}]}))
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "--script", str(script)], cwd=ws,
                       input="touch x\nn\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert not (ws / "x").exists()
    assert "turn 1: denied" in p.stdout
