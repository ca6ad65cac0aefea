"""The line-mode surface in a real pseudo-terminal-free subprocess: type, approve, resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import BOUND_S

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


# ---------------------------------------------------------------- a question that closes while asked

ELICIT = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "elicitserver.py"


class Pty:
    """``cox --plain`` on a real pseudo-terminal (its line discipline holds a half-typed line,
    as a person's terminal does); ``type`` writes keys, ``wait`` polls what it printed."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        import pty
        import threading

        master, slave = pty.openpty()
        self.master = master
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=subprocess.PIPE,
                                     start_new_session=True)
        os.close(slave)
        self.out = b""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                return
            if not chunk:
                return
            self.out += chunk

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", "replace").replace("\r\n", "\n")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait(self, what: str, timeout: float = BOUND_S) -> str:
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if what in self.text:
                return self.text
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"never printed {what!r}:\n{self.text}\n--- stderr:\n"
                             f"{self.proc.stderr.read().decode() if self.proc.poll() is not None and self.proc.stderr else ''}")

    def drain(self, timeout: float = 30.0) -> str:
        """Everything the exited program printed: the reader ends at the terminal's EOF, which
        may come a little after the exit (only a hang reaches the bound)."""
        self._reader.join(timeout)
        return self.text

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)


def test_a_withdrawn_question_stops_waiting_and_its_half_typed_answer_is_dropped(tmp_path: Path, cox_home: Path):
    # The server asks, the person types half an answer, the server gives up (withdraws): the
    # prompt stops waiting, says why, and the half-typed text does not leak into the next question.
    ws = tmp_path / "ws"
    ws.mkdir()
    answers = tmp_path / "answers.txt"
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text(
        f'[mcp.servers.e]\ncommand = "{sys.executable}"\nargs = ["{ELICIT}"]\nsandbox = false\n'
        f'env = {{ COX_TEST_ANSWERS = "{answers}", COX_TEST_WITHDRAW_S = "2" }}\n'
        '[permissions]\nallow = ["mcp__e"]\n')
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [
        {"tool_calls": [{"id": "w1", "name": "mcp__e__withdraw", "input": {}}]},
        {"tool_calls": [{"id": "s1", "name": "mcp__e__signup", "input": {}}]},
        {"text": "All done."},
    ]}))
    env = {**os.environ, "HOME": str(tmp_path), "COX_HOME": str(cox_home), "TERM": "dumb"}
    t = Pty([sys.executable, "-m", "cox.surfaces.cli", "--plain", "--script", str(script)], ws, env)
    try:
        t.wait("type a message")
        t.type("ask me\n")
        t.wait("A question that expires")
        t.type("Zebedee")  # no Enter: still in the terminal's line buffer when the question goes
        t.wait("mcp:e withdrew its question; what was typed for it is dropped")
        t.wait("(1/4) Name")
        for line in ("Ann", "30", "1", "n", "send"):
            t.type(line + "\n")
        t.wait("All done.")
        t.type("/quit\n")
        assert t.proc.wait(30) == 0, t.text
    finally:
        t.close()
    assert [json.loads(x) for x in answers.read_text().splitlines()] == [
        {"action": "accept", "content": {"name": "Ann", "age": 30, "colour": "r", "news": False}}]
    assert "gave up waiting" in t.text


def test_subagents_calls_and_results_are_lines_prefixed_with_the_agent(tmp_path: Path, cox_home: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the answer is 42\n")
    script = tmp_path / "s.json"
    call = {"id": "ag1", "name": "agent", "input": {"description": "find the answer", "prompt": "find it",
                                                     "subagent_type": "explore"}}
    write = {"id": "ag2", "name": "agent", "input": {"description": "write it down", "prompt": "write it",
                                                      "subagent_type": "general-purpose"}}
    script.write_text(json.dumps({"replies": [{"tool_calls": [call]}, {"tool_calls": [write]}, {"text": "All done."}],
                                  "agents": {
        "find it": [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "notes.txt"}}]},
                    {"text": "notes.txt says \x1b]0;pwned\x0742"}],
        "write it": [{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "out.txt", "content": "42\n"}}]},
                     {"text": "wrote out.txt"}]}}))
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "--plain", "--script", str(script)], cwd=ws,
                       input="what is the answer?\ny\n/agents\n/quit\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "  ⑂ a1 ● read  notes.txt" in out, out
    assert [x for x in out.splitlines() if x.startswith("  ⑂ a1 ✓ read  ") and x.endswith("the answer is 42")]
    assert "  ⑂ a1 explore done" in out
    assert "[agent " in out and "· general-purpose]" in out  # the child's approval, labelled
    assert "  ⑂ a2 ● write  out.txt" in out and "  ⑂ a2 ✓ write" in out
    assert (ws / "out.txt").read_text() == "42\n"
    listed = [x for x in out.splitlines() if "a1  explore  done" in x or "a2  general-purpose  done" in x]
    assert len(listed) == 2 and "find the answer" in listed[0] and "write it down" in listed[1]
