"""Rebuild a session's history from its rollout, so ``--resume`` continues where it stopped.

The rollout keeps every line; a ``rewound`` marker cuts the rebuilt history back to before the
turn it names, and the turn counter keeps counting from the highest turn seen.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from cox.slim import dataclass

from .history import result_block, user_text


@dataclass(slots=True)
class Rebuilt:
    history: list[dict[str, Any]] = field(default_factory=list)
    last_turn: int = 0
    turn_starts: dict[int, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)


def rebuild(events: list[dict[str, Any]]) -> Rebuilt:
    out = Rebuilt()
    pending_results: list[dict[str, Any]] = []
    labels: dict[str, str] = {}
    turn = 0

    def add(message: dict[str, Any]) -> None:
        message["_turn"] = turn
        out.history.append(message)

    def flush() -> None:
        if pending_results:
            add({"role": "user", "content": list(pending_results)})
            pending_results.clear()

    for ev in events:
        kind = ev.get("type")
        if kind == "session_started" and not out.meta:
            out.meta = ev
        elif kind == "turn_started":
            flush()
            turn = int(ev.get("turn", 0))
            out.last_turn = max(out.last_turn, turn)
            out.turn_starts[turn] = len(out.history)
        elif kind == "user_message":
            flush()
            add(user_text(str(ev.get("text", ""))))
        elif kind == "assistant_message":
            flush()
            add({"role": "assistant", "content": list(ev.get("content", []))})
        elif kind == "tool_call_requested":
            call = ev.get("call", {})
            labels[str(call.get("id"))] = f"{call.get('name', '')} {call.get('subject', '')}".strip()
        elif kind == "tool_call_edited":  # the person edited the input at approval: the model was told that
            from cox.actors.tools.spelling import as_called

            call = ev.get("call", {})
            labels[str(call.get("id"))] = f"{call.get('name', '')} {call.get('subject', '')}".strip()
            for msg in reversed(out.history):
                if msg.get("role") == "assistant":
                    for block in msg.get("content", []):
                        if block.get("type") == "tool_use" and block.get("id") == call.get("id"):
                            block["input"] = as_called(str(block.get("name", "")), str(call.get("name", "")),
                                                       call.get("input", {}))
                    break
        elif kind == "tool_call_done":
            res = ev.get("result", {})
            status = res.get("status", "ok")
            block = result_block(str(ev.get("call_id")), str(res.get("visible", "")), status != "ok")
            if res.get("archive_id"):
                block["_archive"] = res["archive_id"]
                block["_label"] = labels.get(str(ev.get("call_id")), "a tool call")
            pending_results.append(block)
        elif kind == "compacted":
            flush()
            from .compaction import summary_message

            dropped = {int(t) for t in ev.get("dropped", []) if str(t).isdigit()}
            kept = [m for m in out.history if int(m.get("_turn", 0)) not in dropped and not m.get("_summary")]
            first = min(dropped) if dropped else 0
            out.history = [summary_message(str(ev.get("summary", "")), first), *kept]
            out.turn_starts = {}
            for i, m in enumerate(out.history):
                t = int(m.get("_turn", 0))
                if t not in out.turn_starts and not m.get("_summary"):
                    out.turn_starts[t] = i
        elif kind == "rewound" and ev.get("what", "both") in ("conversation", "both"):
            flush()
            to = int(ev.get("to_turn", 0))
            if to in out.turn_starts:
                del out.history[out.turn_starts[to] :]
                out.turn_starts = {t: i for t, i in out.turn_starts.items() if t < to}
    flush()
    return out
