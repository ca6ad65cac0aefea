"""Headless text mode, as ``cox run -p … > answer.txt`` sees it: the file holds the answer alone;
every status line — a denial with its reason, a provider error, "interrupted", the turn limit —
and the session id go to stderr. (The rest of the contract is in test_result_contract.py.)"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from .test_headless import script
from .test_result_contract import finish, start, wait_for_handlers


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60)


def cox_line(args: str) -> str:
    return f"{sys.executable} -m cox.surfaces.cli run {args}"


def session_last(err: str) -> None:
    last = err.splitlines()[-1]
    assert last.startswith("cox: session ") and len(last.split()[-1]) == 26, err


def test_a_denied_call_without_a_final_answer_leaves_the_file_empty_and_says_why(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path, [{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "rm -rf build"}}]},
                          {"text": ""}])
    p = shell(f"{cox_line(f'--script {s} -p clean')} > answer.txt", ws)
    assert p.returncode == 2
    assert (ws / "answer.txt").read_text() == ""
    assert "cox: denied: bash rm -rf build: denied: it needs approval" in p.stderr
    session_last(p.stderr)


def test_a_provider_error_and_the_turn_limit_are_on_stderr(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path, [{"events": [{"text": "Half"}, {"error": {"message": "overloaded", "status": 400}}]}])
    p = shell(f"{cox_line(f'--script {s} -p go')} > answer.txt", ws)
    assert p.returncode == 1 and (ws / "answer.txt").read_text() == "Half\n"
    assert "cox: error: model request failed: overloaded" in p.stderr
    session_last(p.stderr)
    s = script(tmp_path, [{"tool_calls": [{"id": "r1", "name": "ls", "input": {}}]}, {"text": "never"}])
    p = shell(f"{cox_line(f'--script {s} -p go --max-turns 1')} > answer.txt", ws)
    assert p.returncode == 1 and (ws / "answer.txt").read_text() == ""
    assert "cox: reached the limit of 1 model requests" in p.stderr
    session_last(p.stderr)


def test_interrupted_is_on_stderr_with_the_session_id(tmp_path: Path, cox_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path, [{"events": [{"text": "thinking hard"}, {"stall": True}]}])
    proc = start(["run", "--script", str(s), "-p", "x"], ws)
    wait_for_handlers(proc)
    deadline = time.monotonic() + 60  # until the turn has begun (its rollout has the prompt): only a hang waits long
    while not any('"user_message"' in f.read_text() for f in (cox_home / "sessions").glob("*.jsonl")):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, err = finish(proc)
    assert proc.returncode == 4 and out in ("", "thinking hard\n"), (out, err)
    assert "cox: interrupted by SIGINT" in err and "interrupted" not in out
    session_last(err)
