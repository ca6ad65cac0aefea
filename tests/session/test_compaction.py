"""Compaction: /compact, the automatic one after a full turn, and a context-length error."""

from __future__ import annotations

from pathlib import Path

from cox.actors.session.resume import rebuild
from cox.actors.store.rollout import read_rollout
from cox.protocol import messages as m
from tests.harness import check_invariants, run_session


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


SUMMARY = "## Goal\nShip the parser.\n## Files\nparser.py"


def test_compact_submission_summarises_all_but_the_kept_turns(tmp_path, cox_home):
    sent = {"n": 0}

    def react(event, handle, run):
        if event.type == "turn_done":
            sent["n"] += 1
            if sent["n"] == 3:
                handle.submit(m.Compact(focus="the parser"))
                handle.submit(m.UserTurn(text="four"))

    run = run_session(_ws(tmp_path), cox_home, [
        {"text": "a"}, {"text": "b"}, {"text": "c"}, {"text": SUMMARY}, {"text": "d"},
    ], ["one", "two", "three"], react=react, turns=4, keep_turns=2, cheap_model="cheap-model")
    check_invariants(run)
    summary_req = run.provider.requests[3]
    assert summary_req.model == "cheap-model" and summary_req.tools == []
    body = summary_req.messages[0]["content"][0]["text"]
    assert "USER: one" in body and "the parser" in body and "USER: two" not in body
    compacted = run.of("compacted")[0]
    assert compacted.summary == SUMMARY and compacted.dropped == ["1"]
    after = run.provider.requests[4].messages
    assert after[0]["content"][0]["text"].endswith(SUMMARY)
    texts = [b.get("text") for msg in after for b in msg["content"]]
    assert "one" not in texts and "two" in texts and "three" in texts and "four" in texts
    assert run.provider.requests[4].system[:3] == run.provider.requests[0].system[:3]
    # append-only: the rollout still has turn 1, and resume rebuilds the compacted history
    path = cox_home / "sessions" / f"{run.settings.session_id}.jsonl"
    events = read_rollout(path).events
    assert any(e.get("type") == "user_message" and e.get("text") == "one" for e in events)
    rebuilt = rebuild(events)
    assert rebuilt.history[0]["content"][0]["text"].endswith(SUMMARY)
    assert [b.get("text") for b in rebuilt.history[1]["content"]] == ["two"]


def test_a_full_context_compacts_after_the_turn(tmp_path, cox_home):
    run = run_session(_ws(tmp_path), cox_home, [
        {"text": "a", "usage": {"input_tokens": 1000, "output_tokens": 5}},
        {"text": "b", "usage": {"input_tokens": 120000, "output_tokens": 5}},  # 94% of an unknown model's 128k
        {"text": SUMMARY},
    ], ["one", "two"], keep_turns=1)
    check_invariants(run)
    compacted = run.of("compacted")
    # what is left: the summary, the last turn and the stable blocks (the system prompt and the tools'
    # schemas, ~6 K tokens): a small fraction of the 120 K before
    assert len(compacted) == 1 and compacted[0].before_tokens == 120000 and compacted[0].after_tokens < 12000
    assert run.types().index("compacted") > run.types().index("turn_done")


def test_context_length_error_compacts_and_retries_once(tmp_path, cox_home):
    run = run_session(_ws(tmp_path), cox_home, [
        {"text": "a"}, {"text": "b"},
        {"error": {"message": "prompt is too long", "status": 400, "context_overflow": True}},
        {"text": SUMMARY},
        {"text": "answered after compaction"},
    ], ["one", "two", "three"], keep_turns=1)
    check_invariants(run)
    assert [e.stop.value for e in run.of("turn_done")] == ["end_turn", "end_turn", "end_turn"]
    assert run.of("compacted")[0].dropped == ["1", "2"]
    retry = run.provider.requests[4].messages
    assert retry[0]["content"][0]["text"].endswith(SUMMARY) and retry[-1]["content"][-1]["text"] == "three"


def test_nothing_to_compact_is_a_notice(tmp_path, cox_home):
    def react(event, handle, run):
        if event.type == "turn_done":
            handle.submit(m.Compact())

    run = run_session(_ws(tmp_path), cox_home, [{"text": "a"}], "one", react=react)
    assert not run.of("compacted")
    assert any("nothing to compact" in e.message for e in run.of("notice"))


def test_a_refusal_rolls_the_turn_back(tmp_path, cox_home):
    run = run_session(_ws(tmp_path), cox_home, [
        {"text": "fine"},
        {"text": "I can't help with that.", "stop": "refusal"},
        {"text": "rephrased answer"},
    ], ["one", "bad two", "good two"])
    check_invariants(run)
    done = run.of("turn_done")
    assert [d.stop.value for d in done] == ["end_turn", "error", "end_turn"] and "refusal" in done[1].reason
    last = run.provider.requests[2].messages
    texts = [b.get("text") for msg in last for b in msg["content"]]
    assert "bad two" not in texts and "I can't help with that." not in texts and texts[-1] == "good two"
    rebuilt = rebuild(read_rollout(cox_home / "sessions" / f"{run.settings.session_id}.jsonl").events)
    assert "bad two" not in [b.get("text") for msg in rebuilt.history for b in msg["content"]]
