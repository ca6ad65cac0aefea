"""architect / editor: a preset over the permission mode and the tier, never widening
permissions and never touching the tool list or the stable system blocks."""

from __future__ import annotations

from pathlib import Path

from cox.protocol import messages as m
from cox.protocol.types import PermissionMode
from tests.harness import run_session


def test_architect_plans_on_the_think_tier_and_editor_goes_back(tmp_path: Path, cox_home: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    sent = {"n": 0}

    def react(event, handle, run):
        if event.type == "turn_done":
            sent["n"] += 1
            if sent["n"] == 1:
                handle.submit(m.SetMode(preset="editor"))

    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "x.txt", "content": "x"}}]},
        {"text": "planned"},
        {"tool_calls": [{"id": "w2", "name": "write", "input": {"path": "x.txt", "content": "x"}}]},
        {"text": "written"},
    ], ["plan it", "do it"], mode=PermissionMode.ACCEPT_EDITS, react=react,
        think_model="claude-opus-4-5", preset="architect")
    reqs = run.provider.requests
    assert [r.model for r in reqs] == ["claude-opus-4-5", "claude-opus-4-5", "scripted", "scripted"]
    assert reqs[0].thinking_budget > 0 and reqs[0].tier == "think" and reqs[2].thinking_budget == 0
    assert all(r.system[:3] == reqs[0].system[:3] for r in reqs)
    done = {e.call_id: e.result for e in run.of("tool_call_done")}
    assert done["w1"].status.value == "denied" and "plan" in done["w1"].visible
    assert done["w2"].ok and (ws / "x.txt").read_text() == "x"


def test_set_mode_needs_exactly_one_field():
    import pytest

    with pytest.raises(ValueError):
        m.SetMode()
    with pytest.raises(ValueError):
        m.SetMode(mode=PermissionMode.PLAN, preset="editor")
