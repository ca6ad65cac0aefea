"""The session's invariants (DESIGN.md §5), each asserted on real scripted sessions."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path

from cox.actors.store.rollout import read_rollout
from cox.actors.tools.registry import builtin_tools
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode, Risk, ToolResult
from tests.harness import check_invariants, run_session


class Timed:
    """A tool that records when it ran, to prove what overlapped."""

    description = "sleeps and records its window"
    input_schema = {"type": "object", "properties": {}}
    required = ()

    def __init__(self, name: str, parallel: bool, log: list, seconds: float = 0.25) -> None:
        self.name = name
        self.parallel = parallel
        self.log = log
        self.seconds = seconds

    def check(self, call_input):
        pass

    def describe(self, call, env):
        risk = Risk.READ_ONLY if self.parallel else Risk.WRITE
        return replace(call, risk=risk, subject=self.name)

    def call(self, call, env):
        start = time.monotonic()
        env.cancel.on_cancel(lambda: None)
        time.sleep(self.seconds)
        self.log.append((call.id, start, time.monotonic()))
        return ToolResult(visible=f"{call.id} done")


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    return ws


def test_turn_boundaries_and_one_done_per_call(tmp_path, cox_home):
    ws = _ws(tmp_path)
    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}},
                        {"id": "r2", "name": "read", "input": {"path": "missing.txt"}}]},
        {"text": "one"},
        {"text": "two"},
    ], ["first", "second"])
    check_invariants(run)
    assert [e.turn for e in run.of("turn_done")] == [1, 2]


def test_reads_run_in_parallel_and_a_write_runs_alone(tmp_path, cox_home):
    ws = _ws(tmp_path)
    log: list = []
    tools = {**builtin_tools(), "slow_read": Timed("slow_read", True, log), "slow_write": Timed("slow_write", False, log)}
    calls = [{"id": "p1", "name": "slow_read", "input": {}}, {"id": "p2", "name": "slow_read", "input": {}},
             {"id": "w3", "name": "slow_write", "input": {}}, {"id": "p4", "name": "slow_read", "input": {}}]
    run = run_session(ws, cox_home, [{"tool_calls": calls}, {"text": "ok"}], "go", tools=tools,
                      mode=PermissionMode.BYPASS)
    check_invariants(run)
    windows = {cid: (a, b) for cid, a, b in log}
    # p1 and p2 overlapped
    assert windows["p1"][0] < windows["p2"][1] and windows["p2"][0] < windows["p1"][1]
    # w3 overlapped nothing
    for other in ("p1", "p2", "p4"):
        assert windows["w3"][1] <= windows[other][0] or windows[other][1] <= windows["w3"][0]
    # results went back in emission order, in one user message
    msgs = run.provider.requests[1].messages
    results = [b["tool_use_id"] for b in msgs[-1]["content"] if b["type"] == "tool_result"]
    assert results == ["p1", "p2", "w3", "p4"]


def test_history_is_normalised_after_an_interrupt(tmp_path, cox_home):
    ws = _ws(tmp_path)

    def react(event, handle, run):
        if event.type == "tool_call_requested" and event.call.id == "s1":
            threading.Timer(0.2, handle.interrupt).start()

    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "s1", "name": "bash", "input": {"command": "sleep 20"}}]},
        {"text": "after"},
    ], ["sleep", "next"], allow=["Bash(sleep:*)"], react=react)
    check_invariants(run)
    assert [e.stop.value for e in run.of("turn_done")] == ["interrupted", "end_turn"]
    aborted = [e for e in run.of("tool_call_done") if e.call_id == "s1"]
    assert aborted[0].result.status.value == "aborted"
    second = run.provider.requests[1].messages
    uses = [b["id"] for msg in second if msg["role"] == "assistant" for b in msg["content"] if b["type"] == "tool_use"]
    answered = [b["tool_use_id"] for msg in second if msg["role"] == "user" for b in msg["content"]
                if b["type"] == "tool_result"]
    assert uses == answered == ["s1"]
    assert [msg["role"] for msg in second] == ["user", "assistant", "user"]


def test_rollout_has_every_event_before_the_next_turn(tmp_path, cox_home):
    ws = _ws(tmp_path)
    seen_at_second_turn: list[int] = []

    def react(event, handle, run):
        if event.type == "turn_started" and event.turn == 2:
            path = cox_home / "sessions" / f"{run.settings.session_id}.jsonl"
            seen_at_second_turn.append(len(read_rollout(path).events))

    run = run_session(ws, cox_home, [{"text": "one"}, {"text": "two"}], ["a", "b"], react=react)
    rollout = read_rollout(cox_home / "sessions" / f"{run.settings.session_id}.jsonl")
    assert [e["type"] for e in rollout.events] == run.types()
    first_turn_len = run.types().index("turn_done") + 1
    assert seen_at_second_turn and seen_at_second_turn[0] >= first_turn_len


def test_stable_system_blocks_across_requests(tmp_path, cox_home):
    ws = _ws(tmp_path)
    (ws / "AGENTS.md").write_text("Use tabs.\n")
    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
        {"text": "x"}, {"text": "y"},
    ], ["one", "two"])
    reqs = run.provider.requests
    assert len(reqs) == 3
    assert all(r.system[:3] == reqs[0].system[:3] for r in reqs)
    assert "Use tabs." in reqs[0].system[2]
    assert [s["name"] for s in __import__("json").loads(reqs[0].system[0])] == sorted(builtin_tools())


def test_rollout_scrubs_secrets_and_raises_a_security_notice(tmp_path, cox_home):
    ws = _ws(tmp_path)
    key = "sk-ant-" + "a1B2" * 12
    (ws / "secret.txt").write_text(f"token={key}\n")
    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "secret.txt"}}]},
        {"text": f"The key is {key}."},
    ], "show")
    live = [e for e in run.of("tool_call_done")][0]
    assert key in live.result.visible  # the session itself keeps the original
    types = run.types()
    i = types.index("tool_call_done")
    assert types[i + 1] == "notice" and run.events[i + 1].level == "security"
    text = (cox_home / "sessions" / f"{run.settings.session_id}.jsonl").read_text()
    assert key not in text and "«redacted»" in text
    assert key in run.provider.requests[1].messages[-1]["content"][0]["content"]


def test_steering_is_seen_at_the_next_step_not_as_a_new_turn(tmp_path, cox_home):
    ws = _ws(tmp_path)

    def react(event, handle, run):
        if event.type == "approval_required":
            handle.submit(m.UserTurn(text="and be brief"))
            handle.submit(m.Approve(call_id=event.call.id, decision="allow"))

    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "n.txt", "content": "n"}}]},
        {"text": "brief"},
    ], "write n", react=react)
    check_invariants(run)
    assert len(run.of("turn_started")) == 1
    steered = [e for e in run.of("user_message") if e.steered]
    assert [e.text for e in steered] == ["and be brief"]
    last = run.provider.requests[1].messages[-1]
    assert last["role"] == "user" and last["content"][-1] == {"type": "text", "text": "and be brief"}


def _running(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            found.append(int(pid))
    return found


def _describe(pids: list[int]) -> list[str]:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:80]
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out.append(f"{pid} state={fields[0]} ppid={fields[1]} pgid={fields[2]} {cmd}")
        except OSError:
            out.append(f"{pid} gone")
    return out


def test_interrupting_sleep_600_kills_its_group_within_a_second(tmp_path, cox_home):
    ws = _ws(tmp_path)
    marker = f"600.{os.getpid() % 1000:03d}17"
    timing: dict = {}

    def react(event, handle, run):
        if event.type == "tool_call_requested":
            def later():
                deadline = time.monotonic() + 10
                while not _running(marker) and time.monotonic() < deadline:
                    time.sleep(0.01)
                timing["t0"] = time.monotonic()
                handle.interrupt()
            threading.Thread(target=later, daemon=True).start()
        if event.type == "turn_done":
            timing["t1"] = time.monotonic()

    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "s1", "name": "bash", "input": {"command": f"sleep {marker} & sleep {marker}"}}]},
    ], "sleep", mode=PermissionMode.BYPASS, react=react)
    assert run.of("turn_done")[0].stop.value == "interrupted"
    assert timing["t1"] - timing["t0"] < 1.0
    deadline = timing["t0"] + 1.0
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
    left = _running(marker)
    assert not left, f"the command's processes outlived the interrupt by a second: {_describe(left)}"


def test_without_git_the_session_warns_once_and_still_writes(tmp_path, cox_home, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    ws = _ws(tmp_path)
    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "n.txt", "content": "n"}}]},
        {"tool_calls": [{"id": "w2", "name": "write", "input": {"path": "m.txt", "content": "m"}}]},
        {"text": "ok"},
    ], "write", mode=PermissionMode.BYPASS)
    warnings = [e.message for e in run.of("notice") if "no checkpoints" in e.message]
    assert len(warnings) == 1 and "git" in warnings[0]
    assert (ws / "n.txt").read_text() == "n" and (ws / "m.txt").read_text() == "m"
    assert run.of("turn_done")[0].stop.value == "end_turn" and not run.of("checkpoint")
