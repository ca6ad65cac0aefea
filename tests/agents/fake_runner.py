"""A fake :class:`~cox.agents.runner.AgentRunner` for work-graph tests: each task's "agent" is a
Python function that really writes files in the tmp workspace and returns the agent's answer.
It records every start and end as it happens (in order, under a lock), and how many writable
tasks of the workspace ran at once."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from cox.agents.runner import AgentReport, AgentTask
from cox.protocol.interfaces import CancelToken

Plan = Callable[[AgentTask, CancelToken], str]


def report(changed: list[str], evidence: str = "checked it by reading the file back") -> str:
    return f"Done.\n\n```report\nchanged: {json.dumps(changed)}\nevidence: {evidence}\n```\n"


def writes(root: Path, files: dict[str, str], claim: list[str] | None = None, evidence: str = "read it back") -> Plan:
    """A plan that writes ``files`` and claims ``claim`` (default: exactly what it wrote)."""
    def plan(task: AgentTask, cancel: CancelToken) -> str:
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        return report(sorted(files) if claim is None else claim, evidence)
    return plan


def reads(evidence: str = "read src/a.py: it defines f") -> Plan:
    return lambda task, cancel: report([], evidence)


class FakeRunner:
    """A TaskRunner (``cox.agents.runner``): the work graph only runs tasks to their end."""

    def __init__(self, plans: dict[str, Plan], ok: dict[str, bool] | None = None) -> None:
        self.plans = plans
        self.ok = ok or {}
        self.tasks: dict[str, AgentTask] = {}
        self.log: list[tuple[str, str]] = []
        self.started = {name: threading.Event() for name in plans}
        self.ended = {name: threading.Event() for name in plans}
        self.lock = threading.Lock()
        self.writers = 0
        self.max_writers = 0

    def run(self, task: AgentTask, cancel: CancelToken, call_id: str = "") -> AgentReport:
        name = task.description
        shared_writer = not task.read_only and task.isolation is None
        with self.lock:
            self.tasks[name] = task
            self.log.append(("start", name))
            if shared_writer:
                self.writers += 1
                self.max_writers = max(self.max_writers, self.writers)
        self.started[name].set()
        try:
            text = self.plans[name](task, cancel)
        finally:
            with self.lock:
                self.log.append(("end", name))
                if shared_writer:
                    self.writers -= 1
            self.ended[name].set()
        ok = self.ok.get(name, True) and not cancel.cancelled
        return AgentReport(agent_id=f"agent-{name}", text=text, stop="end_turn" if ok else "error", ok=ok)
