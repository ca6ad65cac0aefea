"""Golden event logs: each scripted session's normalised events must equal its file in
tests/golden/. A change in behaviour shows up as a diff of events. Regenerate deliberately with
``COX_UPDATE_GOLDEN=1 pytest tests/session/test_golden.py`` and review the diff."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cox.protocol import messages as m
from cox.protocol.types import ApprovalPolicy, Decision, PermissionMode
from tests.harness import normalize, run_session

GOLDEN = Path(__file__).parent.parent / "golden"


def _approve(decision: Decision, edited: dict[str, Any] | None = None):
    def react(event, handle, run):
        if event.type == "approval_required":
            handle.submit(m.Approve(call_id=event.call.id, decision=decision, edited_input=edited))
    return react


def _interrupt_on(kind: str, nth: int = 1):
    seen = {"n": 0}

    def react(event, handle, run):
        if event.type == kind:
            seen["n"] += 1
            if seen["n"] == nth:
                handle.interrupt()
    return react


def _steer_then_approve(text: str):
    """Type a message while a call waits for approval, then approve: the model must see the
    message at its next step (not as a new turn)."""

    def react(event, handle, run):
        if event.type == "approval_required":
            handle.submit(m.UserTurn(text=text))
            handle.submit(m.Approve(call_id=event.call.id, decision=Decision.ALLOW))
    return react


def _interrupt_after(kind: str, seconds: float):
    import threading

    def react(event, handle, run):
        if event.type == kind:
            threading.Timer(seconds, handle.interrupt).start()
    return react


class Boom:
    """A tool whose call raises: the model must get an error result, the turn must go on."""

    name = "boom"
    description = "always raises"
    input_schema = {"type": "object", "properties": {}}
    parallel = True
    required = ()

    def check(self, call_input):
        pass

    def describe(self, call, env):
        from cox.protocol.types import Risk

        return replace(call, risk=Risk.READ_ONLY, subject="boom")

    def call(self, call, env):
        raise RuntimeError("kaboom")


def _files(ws: Path) -> None:
    (ws / "a.txt").write_text("alpha\n")
    (ws / "b.txt").write_text("bravo\nbeta\n")


SCENARIOS: dict[str, dict[str, Any]] = {
    "text_only": dict(replies=[{"text": "Hello there.", "chunk": 5}], prompts="hi"),
    "parallel_reads": dict(
        replies=[
            {"text": "Reading both.", "tool_calls": [
                {"id": "t1", "name": "read", "input": {"path": "a.txt"}},
                {"id": "t2", "name": "read", "input": {"path": "b.txt"}}]},
            {"text": "a has 1 line, b has 2."},
        ],
        prompts="count lines"),
    "approval_allow": dict(
        replies=[{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "new.txt", "content": "x\n"}}]},
                 {"text": "Written."}],
        prompts="write it", react=_approve(Decision.ALLOW)),
    "approval_allow_for_session": dict(
        replies=[{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "mkdir -p out && touch out/a"}}]},
                 {"tool_calls": [{"id": "b2", "name": "bash", "input": {"command": "touch out/a"}}]},
                 {"text": "Both ran."}],
        prompts="run twice", react=_approve(Decision.ALLOW_FOR_SESSION)),
    "approval_deny": dict(
        replies=[{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "x.txt", "content": "no"}}]},
                 {"text": "never reached"}],
        prompts="write x", react=_approve(Decision.DENY)),
    "approval_edit": dict(
        replies=[{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "e.txt", "content": "draft"}}]},
                 {"text": "Saved your edit."}],
        prompts="write e", react=_approve(Decision.EDIT, {"path": "e.txt", "content": "edited by user\n"})),
    "headless_denied": dict(
        replies=[{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "rm -rf a.txt"}}]},
                 {"text": "It was denied."}],
        prompts="delete a", policy=ApprovalPolicy.NEVER),
    "deny_rule_beats_mode": dict(
        replies=[{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "git status && rm -rf b.txt"}}]},
                 {"text": "Denied by rule."}],
        prompts="status then delete", deny=["Bash(rm:*)"], mode=PermissionMode.BYPASS),
    "interrupt_mid_stream": dict(
        replies=[{"events": [{"text": "Working on it"}, {"stall": True}]}],
        prompts="long answer", react=_interrupt_on("text_delta")),
    "interrupt_mid_tool": dict(
        replies=[{"text": "Sleeping.", "tool_calls": [{"id": "s1", "name": "bash", "input": {"command": "sleep 30"}}]}],
        prompts="sleep", allow=["Bash(sleep:*)"], react=_interrupt_after("tool_call_requested", 0.3)),
    "steering": dict(
        replies=[{"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "s.txt", "content": "s\n"}}]},
                 {"text": "Noted your follow-up."}],
        prompts="write s", react=_steer_then_approve("also mention b")),
    "tool_raises": dict(
        replies=[{"tool_calls": [{"id": "x1", "name": "boom", "input": {}}]}, {"text": "The tool failed."}],
        prompts="boom", tools="boom"),
    "unknown_tool": dict(
        replies=[{"tool_calls": [{"id": "u1", "name": "teleport", "input": {}}]}, {"text": "No such tool."}],
        prompts="teleport"),
    "provider_error": dict(
        replies=[{"error": {"message": "upstream returned 500", "status": 500}}], prompts="hi"),
    "provider_retry": dict(
        replies=[{"error": {"message": "overloaded", "status": 529, "retryable": True, "retry_after": 0.01}},
                 {"text": "Recovered."}],
        prompts="hi"),
    "max_turns": dict(
        replies=[{"tool_calls": [{"id": f"r{i}", "name": "read", "input": {"path": "a.txt"}}]} for i in range(5)],
        prompts="loop", max_turns=3),
    "cut_by_max_tokens": dict(
        replies=[{"events": [{"text": "Writing."},
                             {"tool_call_raw": {"id": "w1", "name": "write", "partial_json": "{\"path\": \"big.txt\", \"cont"}}],
                  "stop": "max_tokens"},
                 {"text": "I will split it."}],
        prompts="write big"),
    "text_cut_by_max_tokens": dict(
        replies=[{"text": "The first half of the ans", "stop": "max_tokens"}], prompts="explain"),
    "big_output_archived": dict(
        replies=[{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "seq 1 3000"}}]},
                 {"text": "Printed 3000 lines."}],
        prompts="count", allow=["Bash(seq:*)"]),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_golden(name: str, tmp_path: Path, cox_home: Path) -> None:
    spec = dict(SCENARIOS[name])
    ws = tmp_path / "ws"
    ws.mkdir()
    _files(ws)
    if spec.pop("tools", None) == "boom":
        from cox.actors.tools.registry import builtin_tools

        spec["tools"] = {**builtin_tools(), "boom": Boom()}
    run = run_session(ws, cox_home, spec.pop("replies"), spec.pop("prompts"), **spec)
    got = normalize(run, ws)
    path = GOLDEN / f"{name}.jsonl"
    text = "".join(json.dumps(d, sort_keys=True) + "\n" for d in got)
    if os.environ.get("COX_UPDATE_GOLDEN") or not path.exists():
        if os.environ.get("CI") and not path.exists():
            pytest.fail(f"golden file {path.name} is missing; generate it with COX_UPDATE_GOLDEN=1 and review it")
        path.write_text(text)
    want = [json.loads(line) for line in path.read_text().splitlines()]
    assert got == want, f"events differ from {path.name}; review and regenerate with COX_UPDATE_GOLDEN=1"
