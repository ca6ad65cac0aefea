"""The hook seam: each point can steer the turn, and a broken hook never breaks it."""

from __future__ import annotations

from pathlib import Path

from tests.harness import check_invariants, run_session


class Hooks:
    def __init__(self, answers: dict) -> None:
        self.answers = answers
        self.seen: list[str] = []

    def run(self, point, payload):
        self.seen.append(point)
        answer = self.answers.get(point)
        if isinstance(answer, Exception):
            raise answer
        return answer(payload) if callable(answer) else answer


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    return ws


def test_prompt_rewrite_tool_deny_and_stop_continue(tmp_path, cox_home):
    once = {"done": False}

    def stop(payload):
        if once["done"]:
            return None
        once["done"] = True
        return {"continue": "also run the tests"}

    hooks = Hooks({"UserPromptSubmit": {"prompt": "rewritten"}, "PreToolUse": {"deny": "no reads today"},
                   "Stop": stop})
    run = run_session(_ws(tmp_path), cox_home, [
        {"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
        {"text": "ok"}, {"text": "tests run"},
    ], "original", hooks=hooks)
    check_invariants(run)
    texts = [e.text for e in run.of("user_message")]
    assert texts == ["rewritten", "also run the tests"]
    assert run.of("tool_call_done")[0].result.status.value == "denied"
    assert "no reads today" in run.of("tool_call_done")[0].result.visible
    assert hooks.seen.count("Stop") == 2 and "PostToolUse" not in hooks.seen


def test_blocked_prompt_ends_the_turn_denied(tmp_path, cox_home):
    run = run_session(_ws(tmp_path), cox_home, [{"text": "never"}], "x",
                      hooks=Hooks({"UserPromptSubmit": {"block": "not allowed"}}))
    check_invariants(run)
    assert run.of("turn_done")[0].stop.value == "denied"
    assert run.provider.requests == []


def test_broken_hook_is_a_warning(tmp_path, cox_home):
    run = run_session(_ws(tmp_path), cox_home, [
        {"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]}, {"text": "fine"},
    ], "x", hooks=Hooks({"PreToolUse": RuntimeError("hook crashed"), "PostToolUse": RuntimeError("again")}))
    check_invariants(run)
    assert run.of("turn_done")[0].stop.value == "end_turn"
    assert run.of("tool_call_done")[0].result.ok
    assert any("hook failed" in e.message for e in run.of("notice"))
