"""Compaction: when the context fills, every turn but the last few is replaced by a summary.

The summary is written by the cheap tier from a plain-text transcript of the turns it replaces,
and is told to keep what a continuation needs — the goal, the user's instructions and
constraints, the plan and where it stands, decisions and why, files touched, open problems —
because losing those is what users of other agents complain about most. Instruction files are
in the system blocks and are re-sent whole, never summarised. The rollout keeps every original
line; only what future requests are built from changes.
"""

from __future__ import annotations

import json
from typing import Any

from cox.protocol.model import ModelRequest

SUMMARY_PROMPT = """You are compacting the history of a coding session so it can continue in a smaller context.
Write a summary that lets the same agent carry on without the original messages. Keep, under these headings:

## Goal
What the user wants, in their words where short. Every instruction, constraint or preference they gave.
## Plan and progress
The plan, which steps are done, which is in progress, what is next.
## Decisions
What was decided and why (including approaches that were rejected and why).
## Files
Every file read, created, edited or deleted, with a phrase on what changed or matters in it.
## Open problems
Errors not yet fixed, questions not yet answered, tests failing.

Be specific (names, paths, commands, error messages); do not invent anything; no preamble."""

SUMMARY_HEADER = "[Summary of the earlier part of this session, written when the context was compacted]\n\n"

RESULT_CHARS = 2000
"""How much of each tool result the summariser sees (head and tail)."""


def split_turns(history: list[dict[str, Any]], keep_turns: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[int]]:
    """(messages to summarise, messages to keep, turns dropped). An earlier summary is folded in."""
    turns = sorted({int(m.get("_turn", 0)) for m in history})
    kept_turns = set(turns[-keep_turns:]) if keep_turns > 0 else set()
    old = [m for m in history if int(m.get("_turn", 0)) not in kept_turns]
    new = [m for m in history if int(m.get("_turn", 0)) in kept_turns]
    return old, new, [t for t in turns if t not in kept_turns]


def render(messages: list[dict[str, Any]]) -> str:
    """The messages as a readable transcript for the summariser."""
    lines: list[str] = []
    for msg in messages:
        who = "USER" if msg["role"] == "user" else "ASSISTANT"
        for b in msg["content"]:
            kind = b.get("type")
            if kind == "text" and b.get("text"):
                lines.append(f"{who}: {b['text']}")
            elif kind == "tool_use":
                args = json.dumps(b.get("input", {}), ensure_ascii=False)
                lines.append(f"ASSISTANT called {b.get('name')}: {args[:600]}")
            elif kind == "tool_result":
                text = str(b.get("content", ""))
                if len(text) > RESULT_CHARS:
                    half = RESULT_CHARS // 2
                    text = f"{text[:half]}\n[… {len(text) - RESULT_CHARS} characters left out …]\n{text[-half:]}"
                flag = " (error)" if b.get("is_error") else ""
                lines.append(f"TOOL RESULT{flag}: {text}")
    return "\n\n".join(lines)


def request(model: str, old: list[dict[str, Any]], focus: str | None, session_id: str) -> ModelRequest:
    transcript = render(old)
    ask = "Summarise this session so far."
    if focus:
        ask += f" Pay particular attention to: {focus}"
    return ModelRequest(
        model=model,
        system=["[]", SUMMARY_PROMPT, "", ""],
        tools=[],
        messages=[{"role": "user", "content": [{"type": "text", "text": f"{ask}\n\n<transcript>\n{transcript}\n</transcript>"}]}],
        tier="cheap",
        max_output_tokens=4096,
        session_id=session_id,
    )


def summary_message(summary: str, turn: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": SUMMARY_HEADER + summary}], "_turn": turn,
            "_summary": True}


def estimate_tokens(messages: list[dict[str, Any]], system: list[str]) -> int:
    size = sum(len(s) for s in system)
    for msg in messages:
        for b in msg["content"]:
            size += len(json.dumps({k: v for k, v in b.items() if not str(k).startswith("_")}, ensure_ascii=False))
    return size // 4
