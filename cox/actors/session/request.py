"""Request assembly: the cache-stable layout of what the model sees.

    system[0]  tool schemas, sorted by name ........ byte-stable
    system[1]  cox system prompt (versioned, no date) byte-stable
    system[2]  instruction files (``instructions``) . byte-stable
    system[3]  volatile: date, cwd, branch ......... changes
    messages   the normalised history

The first three blocks are computed once per session (and again only when the tool set really
changes), so every request of a session repeats them byte for byte.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from cox.protocol.model import ModelRequest, ToolSpec

from .history import normalize
from .instructions import instruction_block
from .prompt import PROMPT_VERSION, SYSTEM_PROMPT  # noqa: F401 - both are request.py names too


def tool_block(specs: list[ToolSpec]) -> str:
    ordered = sorted(specs, key=lambda s: s.name)
    return json.dumps(
        [{"name": s.name, "description": s.description, "input_schema": s.input_schema} for s in ordered],
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    )


def volatile_block(cwd: Path, extra: dict[str, Any] | None = None) -> str:
    """What may change between requests of one session, last so it never breaks the cached prefix."""
    from .context_branch import branch_line

    lines = [f"date: {datetime.date.today().isoformat()}", f"cwd: {cwd}", branch_line(cwd)]
    for k, v in (extra or {}).items():
        lines.append(f"{k}: {v}")
    return "\n".join(lines)


def microcompact(history: list[dict[str, Any]], turn: int, after_turns: int) -> list[dict[str, Any]]:
    """Tool results from ``after_turns`` or more turns ago become a pointer to their archived
    output and a one-line summary (every result is archived, small ones inline in cox.db). A
    result no longer than its pointer is its own summary and stays. Only what is sent shrinks:
    the history and the rollout keep them."""
    if after_turns <= 0:
        return history
    cutoff = turn - after_turns
    out: list[dict[str, Any]] = []
    for msg in history:
        if msg["role"] == "user" and msg.get("_turn", turn) <= cutoff:
            msg = {**msg, "content": [_pointed(b) for b in msg["content"]]}
        out.append(msg)
    return out


LABEL_MAX = 80
"""A call's label in a pointer is cut here: a long command line must not make the pointer big."""


def _pointed(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") != "tool_result" or not block.get("_archive"):
        return block
    text = str(block.get("content", ""))
    label = " ".join(str(block.get("_label", "a tool call")).split())
    if len(label) > LABEL_MAX:
        label = label[:LABEL_MAX] + "…"
    first = next((x.strip() for x in text.splitlines() if x.strip()), "")[:120]
    n = text.count("\n") + 1
    pointer = (f"[earlier result of {label} ({n} line{'s' if n != 1 else ''}), starting: {first} … "
               f"expand #{block['_archive']} to see it]")
    if len(pointer) >= len(text):
        return block
    return {**block, "content": pointer}


def _last_turn_end(sent: list[dict[str, Any]], messages: list[dict[str, Any]], turn: int) -> list[tuple[int, int]]:
    """The (message, block) position of the last block before this turn began, in the
    normalised list: where the history that every later request repeats ends."""
    earlier = [m for m in sent if m.get("_turn", turn) < turn]
    if not earlier:
        return []
    prior = normalize(earlier)
    if not prior:
        return []
    index = len(prior) - 1
    block = len(prior[-1]["content"]) - 1
    if index >= len(messages) or block < 0:
        return []
    return [(index, block)]


class Assembler:
    """Holds the session's stable blocks and builds each request."""

    def __init__(self, model: str, specs: list[ToolSpec], cwd: Path, max_output_tokens: int = 8192,
                 microcompact_after_turns: int = 6, reads: Any = None, role: str = "",
                 roots: list[Path] | None = None, home: Path | None = None, cox_home: Path | None = None,
                 system_prompt: str = "", append_system_prompt: str = "") -> None:
        self.model = model
        self.microcompact_after_turns = microcompact_after_turns
        self.specs = sorted(specs, key=lambda s: s.name)
        self.cwd = cwd
        self.max_output_tokens = max_output_tokens
        # system[1]: cox's prompt (or --system-prompt's instead), a subagent's role, --append-system-prompt.
        system = system_prompt.strip() or SYSTEM_PROMPT
        if role.strip():
            system = f"{system}\n\n# Your role in this session\n\n{role.strip()}"
        if append_system_prompt.strip():
            system = f"{system}\n\n{append_system_prompt.strip()}"
        self.stable = [tool_block(self.specs), system, instruction_block(cwd, reads=reads, roots=roots, home=home,
                                                                           cox_home=cox_home)]

    @classmethod
    def for_session(cls, s: Any, specs: list[ToolSpec], reads: Any = None) -> Assembler:
        """The assembler of a session with these settings (``settings.SessionSettings``)."""
        return cls(s.model, specs, s.cwd, microcompact_after_turns=s.microcompact_after_turns, reads=reads,
                   role=s.agent_prompt, roots=s.roots, home=s.home, cox_home=s.cox_home,
                   system_prompt=s.system_prompt, append_system_prompt=s.append_system_prompt)

    def set_tools(self, specs: list[ToolSpec]) -> None:
        """The tool set really changed (a deferred tool joined): the one time system[0] changes."""
        self.specs = sorted(specs, key=lambda s: s.name)
        self.stable[0] = tool_block(self.specs)

    def build(self, history: list[dict[str, Any]], turn: int = 0, session_id: str = "") -> ModelRequest:
        sent = microcompact(history, turn, self.microcompact_after_turns)
        messages = normalize(sent)
        return ModelRequest(
            model=self.model,
            system=[*self.stable, volatile_block(self.cwd)],
            tools=self.specs,
            messages=messages,
            max_output_tokens=self.max_output_tokens,
            breakpoints=_last_turn_end(sent, messages, turn),
            session_id=session_id,
        )
