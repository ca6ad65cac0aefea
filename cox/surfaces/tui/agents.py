"""The subagents a session ran, as its surfaces show them: built from the parent's own events.

The parent's ``agent`` call names a child's type and description; the child's relayed events
(``agent_event``) say its state (its ``turn_done``), tokens and cost (its ``usage``); the agent
call's result names its worktree (``[worktree <path>, branch <name>]``). A relayed event is a
child's encoded event, untrusted text: one that does not decode is dropped (never an error of the
surface), and every string shown passes ``sanitize``. Pure (no urwid), so the TUI (``/agents``,
the status line) and the plain surface share it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cox.policy.sanitize import sanitize

WORKTREE = re.compile(r"\[worktree (.+), branch ([^\]\n]+)\]\s*$")
STATES = {"end_turn": "done", "max_tokens": "done", "interrupted": "interrupted"}
"""A child's ``turn_done`` stop -> the agent's state; every other stop is ``failed``."""


@dataclass
class Agent:
    id: str
    call_id: str = ""
    type: str = "agent"
    description: str = ""
    state: str = "running"  # running | done | failed | interrupted
    tokens: int = 0
    cost_usd: float = 0.0
    worktree: str = ""
    order: int = 0
    version: int = 0  # bumped on every change (a view open on it redraws)

    @property
    def short(self) -> str:
        """``a1`` for ``<session>-a1``: what lists show (``/agents a1`` finds it)."""
        return self.id.split("-", 1)[1] if "-" in self.id else self.id


@dataclass
class Agents:
    """Every agent of the session, by id; listed in the order the parent called them."""

    by_id: dict[str, Agent] = field(default_factory=dict)
    calls: dict[str, tuple[str, str]] = field(default_factory=dict)  # agent call id -> (type, description)

    def called(self, call: Any) -> None:
        """The parent's ``tool_call_requested``: an ``agent`` call's type and description."""
        if call.name != "agent" or not isinstance(call.input, dict):
            return
        kind, desc = call.input.get("subagent_type"), call.input.get("description")
        self.calls[call.id] = (_one_line(sanitize(kind)) if isinstance(kind, str) and kind else "agent",
                               _one_line(sanitize(desc)) if isinstance(desc, str) else "")

    def result(self, event: Any) -> None:
        """The parent's ``tool_call_done``: an agent call's report names its worktree; a call
        that failed while its agent still ran means the agent failed (it will not speak again)."""
        if event.call_id not in self.calls:
            return
        found = WORKTREE.search(event.result.visible or "")
        for agent in self.by_id.values():
            if agent.call_id != event.call_id:
                continue
            if found:
                agent.worktree = sanitize(found.group(1))
            status = event.result.status.value
            if agent.state == "running" and status != "ok":
                agent.state = "interrupted" if status == "aborted" else "failed"
            agent.version += 1

    def relayed(self, event: Any) -> tuple[Agent, Any] | None:
        """An ``agent_event``: the agent it updates and the child's event decoded, or None when
        the payload is not an event cox knows (then nothing changes)."""
        from cox.protocol.messages import ProtocolError, decode_event

        agent_id = getattr(event, "agent_id", None)
        inner = getattr(event, "event", None)
        if not isinstance(agent_id, str) or not agent_id or not isinstance(inner, dict):
            return None
        try:
            child = decode_event(inner)
        except (ProtocolError, ValueError, TypeError, KeyError):
            return None
        agent_id = _one_line(sanitize(agent_id))
        agent = self.by_id.get(agent_id)
        if agent is None:
            call_id = event.call_id if isinstance(event.call_id, str) else ""
            kind, desc = self.calls.get(call_id, ("agent", ""))
            calls = list(self.calls)  # in the order the parent called them (parallel agents start in any order)
            order = calls.index(call_id) if call_id in self.calls else len(calls) + len(self.by_id)
            agent = Agent(id=agent_id, call_id=call_id, type=kind, description=desc, order=order)
            self.by_id[agent_id] = agent
        t = child.type
        if t in ("turn_started", "user_message") and agent.state != "running":
            agent.state = "running"  # agent_send started another turn
        elif t == "turn_done":
            agent.state = STATES.get(child.stop.value, "failed")
        elif t == "usage":
            u = child.usage
            agent.tokens += u.input_tokens + u.output_tokens
            agent.cost_usd += u.cost_usd
        agent.version += 1
        return agent, child

    def find(self, key: str) -> Agent | None:
        """An agent by its id, or by a suffix of it (``a1`` for ``<session>-a1``)."""
        if key in self.by_id:
            return self.by_id[key]
        found = [a for a in self.by_id.values() if a.id.endswith("-" + key)]
        return found[0] if len(found) == 1 else None

    def running(self) -> list[str]:
        return [a.id for a in self.by_id.values() if a.state == "running"]

    def rows(self) -> list[Agent]:
        """Running agents first, each group in the order they started."""
        return sorted(self.by_id.values(), key=lambda a: (a.state != "running", a.order))


def line(agent: Agent) -> str:
    """One agent as /agents lists it: id, type, state, tokens, cost, description, worktree."""
    parts = [agent.short, agent.type, agent.state, f"{_k(agent.tokens)} tok", f"${agent.cost_usd:.4f}"]
    text = "  ".join(parts) + (f"  {agent.description}" if agent.description else "")
    return text + (f"  ⧉ {agent.worktree}" if agent.worktree else "")


def count(n: int) -> str:
    """``1 agent`` · ``2 agents``: the status line's segment."""
    return f"{n} agent{'s' if n != 1 else ''}"


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _one_line(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


LABEL = re.compile(r"^\[agent ([^\]\n]{1,200})\]\s*")


def approval_label(reason: str) -> tuple[str, str]:
    """A child's approval reason (``[agent <id> · <type>] why``) split into the agent's label and
    the reason: ``("", reason)`` for the parent's own approvals. Both sanitized."""
    text = sanitize(reason)
    found = LABEL.match(text)
    if found is None:
        return "", text
    return found.group(1), text[found.end():]
