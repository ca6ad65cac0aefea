"""SubagentStop through `cox run`: a real command hook runs when a subagent's turn ends and reads
the agent's id and type on stdin; the parent's Stop hook runs once, for the parent only."""

from __future__ import annotations

import json
from typing import Any

from .rig import Rig, one


def agent_run(rig: Rig, replies: list[dict[str, Any]], agents: dict[str, list[dict[str, Any]]]) -> Any:
    script = rig.tmp / "script.json"
    script.write_text(json.dumps({"model": "scripted", "replies": replies, "agents": agents}))
    proc = rig.cox("run", "--script", str(script), "-p", "go", "--approve", "never", "--output-format",
                   "stream-json", "--permission-mode", "bypassPermissions")
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert events and events[-1]["type"] == "result", proc.stderr
    return events


def test_subagent_stop_fires_per_agent_with_its_info_and_stop_once_for_the_parent(rig: Rig) -> None:
    rig.hooks({"SubagentStop": one(rig.logger("substop")), "Stop": one(rig.logger("stop"))})
    call = {"id": "ag1", "name": "agent", "input": {"description": "read a", "prompt": "read a.txt",
                                                     "subagent_type": "explore"}}
    events = agent_run(rig, [{"tool_calls": [call]}, {"text": "the agent read it"}], {"read a.txt": [
        {"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
        {"text": "a.txt says alpha"},
    ]})
    assert events[-1]["subtype"] == "success" and events[-1]["result"].endswith("the agent read it")
    agent_id = next(e["agent_id"] for e in events if e["type"] == "agent_event")
    (sub,) = rig.seen("substop")
    assert sub["hook_event_name"] == "SubagentStop"
    assert sub["agent_id"] == agent_id and sub["agent_type"] == "explore"
    assert sub["session_id"] == events[0]["session_id"]  # Claude Code's: the parent's session, the agent named
    assert agent_id.startswith(events[0]["session_id"] + "-")
    child_rollout = sub["agent_transcript_path"]  # the child's own rollout, which the hook may read
    assert child_rollout.endswith(f"/{agent_id}.jsonl") and "a.txt says alpha" in open(child_rollout).read()
    stops = rig.seen("stop")
    assert len(stops) == 1 and stops[0]["hook_event_name"] == "Stop"
    assert stops[0]["session_id"] == events[0]["session_id"] and "agent_id" not in stops[0]


def test_a_subagent_stop_hook_that_blocks_keeps_the_agent_going_once(rig: Rig) -> None:
    """Exit 2 from SubagentStop is Claude Code's "keep working": the child takes another step,
    and its report is what it said after."""
    block = rig.script("substop.sh", f"""jq -c . >> {rig.out}/substop.jsonl
if [ ! -e {rig.out}/once ]; then touch {rig.out}/once; echo 'also check b.txt' >&2; exit 2; fi""")
    rig.hooks({"SubagentStop": one(block)})
    call = {"id": "ag1", "name": "agent", "input": {"description": "d", "prompt": "look", "subagent_type": "explore"}}
    events = agent_run(rig, [{"tool_calls": [call]}, {"text": "parent done"}], {"look": [
        {"text": "first answer"}, {"text": "second answer after the hook"},
    ]})
    done = next(e for e in events if e["type"] == "tool_call_done" and e["call_id"] == "ag1")
    assert done["result"]["visible"].startswith("second answer after the hook")
    assert [s["stop_hook_active"] for s in rig.seen("substop")] == [False, True]


def test_a_subagent_stop_hook_that_always_blocks_cannot_loop_the_agent_forever(rig: Rig) -> None:
    rig.hooks({"SubagentStop": one(rig.script("substop.sh", "cat >/dev/null\necho 'keep going' >&2\nexit 2"))})
    call = {"id": "ag1", "name": "agent", "input": {"description": "d", "prompt": "look", "subagent_type": "explore"}}
    events = agent_run(rig, [{"tool_calls": [call]}, {"text": "parent done"}],
                       {"look": [{"text": f"answer {i}"} for i in range(10)]})
    done = next(e for e in events if e["type"] == "tool_call_done" and e["call_id"] == "ag1")
    assert done["result"]["visible"].startswith("answer 5")  # the first answer and 5 more, then it stops
    assert events[-1]["subtype"] == "success" and events[-1]["result"].endswith("parent done")
