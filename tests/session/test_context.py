"""What the model is sent: repeated reads deduplicated, old big results microcompacted."""

from __future__ import annotations

from pathlib import Path

from cox.protocol.types import PermissionMode
from tests.harness import run_session


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    return ws


def read(cid: str, path: str = "a.txt") -> dict:
    return {"tool_calls": [{"id": cid, "name": "read", "input": {"path": path}}]}


def test_repeated_read_is_deduplicated_until_a_write(tmp_path, cox_home):
    ws = _ws(tmp_path)
    run = run_session(ws, cox_home, [
        read("r1"), read("r2"),
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "a.txt", "content": "beta\n"}}]},
        read("r3"), {"text": "done"},
    ], "go", mode=PermissionMode.ACCEPT_EDITS)
    done = {e.call_id: e.result.visible for e in run.of("tool_call_done")}
    assert "alpha" in done["r1"]
    assert done["r2"].startswith("unchanged since #r1")
    assert "beta" in done["r3"]


def test_dedup_does_not_reach_past_its_window(tmp_path, cox_home):
    ws = _ws(tmp_path)
    replies = [read("r1"), {"text": "t1"}, read("r2"), {"text": "t2"}, read("r3"), {"text": "t3"}]
    run = run_session(ws, cox_home, replies, ["one", "two", "three"], dedup_window_turns=2,
                      microcompact_after_turns=0)
    done = {e.call_id: e.result.visible for e in run.of("tool_call_done")}
    assert done["r2"].startswith("unchanged since #r1")  # one turn later: inside the window
    assert "alpha" in done["r3"]  # two turns after r1's turn: outside it


def test_old_big_results_are_sent_as_pointers(tmp_path, cox_home):
    ws = _ws(tmp_path)
    (ws / "big.txt").write_text("".join(f"line {i} of a long file\n" for i in range(300)))
    replies = [read("r1", "big.txt"), {"text": "read it"}] + [{"text": f"t{i}"} for i in range(3)]
    run = run_session(ws, cox_home, replies, ["read big", "a", "b", "c"], microcompact_after_turns=2)
    requests = run.provider.requests

    def result_text(req) -> str:
        for msg in req.messages:
            for b in msg["content"]:
                if b.get("type") == "tool_result" and b["tool_use_id"] == "r1":
                    assert not any(k.startswith("_") for k in b), "bookkeeping keys leaked to the provider"
                    return b["content"]
        raise AssertionError("r1 missing")

    assert "line 299 of a long file" in result_text(requests[1])  # same turn: whole
    assert "line 299" in result_text(requests[2])  # turn 2: one turn old, still whole
    late = result_text(requests[-1])  # turn 4: two turns old
    assert late.startswith("[earlier result of read") and "expand #" in late and "line 299" not in late
    # the rollout keeps the whole result
    rollout = (cox_home / "sessions" / f"{run.settings.session_id}.jsonl").read_text()
    assert "line 299 of a long file" in rollout


def test_a_deferred_tool_joins_through_tool_search(tmp_path, cox_home):
    from cox.actors.tools.search import LsTool

    class Tree(LsTool):
        name = "tree"
        description = "list a folder as a tree (deferred)"

    ws = _ws(tmp_path)
    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "s1", "name": "tool_search", "input": {"query": "tree folder"}}]},
        {"tool_calls": [{"id": "t1", "name": "tree", "input": {"path": "."}}]},
        {"text": "done"},
    ], "list", deferred={"tree": Tree()})
    reqs = run.provider.requests
    assert "tree" not in reqs[0].system[0] and '"name":"tree"' in reqs[1].system[0]
    assert reqs[1].system[1:3] == reqs[0].system[1:3]
    assert any("cache prefix changed" in e.message for e in run.of("notice"))
    assert run.of("tool_call_done")[-1].result.ok and "a.txt" in run.of("tool_call_done")[-1].result.visible


def test_breakpoint_marks_the_end_of_the_last_turn(tmp_path, cox_home):
    ws = _ws(tmp_path)
    run = run_session(ws, cox_home, [read("r1"), {"text": "one"}, read("r2", "b.txt"), {"text": "two"}],
                      ["first", "second"])
    reqs = run.provider.requests
    assert reqs[0].breakpoints == [] and reqs[0].session_id == run.settings.session_id
    (msg, block), = reqs[2].breakpoints
    # turn 1 was: user text, assistant tool_use, user result, assistant text "one"
    assert msg == 3 and reqs[2].messages[msg]["content"][block] == {"type": "text", "text": "one"}
    assert reqs[3].breakpoints == reqs[2].breakpoints  # stable within the turn
