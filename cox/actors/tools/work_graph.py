"""``run_agent_work_graph``: run a graph of subagent tasks, each gated by its evidence.

The graph is checked whole before anything runs (:func:`cox.agents.graph.parse`); then the
call's thread drives a :class:`~cox.agents.graph.Scheduler`: each task it lets start runs in a
thread of its own through the parent session's runner (``env.services.agents.run``), its
environment snapshotted before and after (:mod:`cox.agents.evidence`), and its answer judged by
the evidence gate. The result lists every task in the order given: done (with its evidence),
failed (with the reason) or skipped (with the reason), plus the tail of each agent's answer.

An interrupt (``env.cancel``) ends the graph: the running tasks see the same token and stop
(they fail as interrupted), the pending ones are skipped. Risk: the tasks run agents that may
write, so the call is Write; with a worktree task it is Destructive, as ``agent(isolation:
"worktree")`` is (it asks, and plan mode refuses it).
"""

from __future__ import annotations

import os
import queue
import stat
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.protocol.types import Risk, ToolCall, ToolResult, ToolStatus

from .base import BaseTool, ToolEnv, ToolInputError

if TYPE_CHECKING:
    from cox.agents.evidence import Snapshot
    from cox.agents.graph import Outcome, Scheduler, Task
    from cox.agents.runner import AgentRunner

JOIN_S = 60.0  # an outer bound for running tasks to end once interrupted (only a hang reaches it)
ANSWER_TAIL = 1500


def _format(outcome: Outcome, answer: str) -> str:
    head = f"[{outcome.state}] {outcome.id}"
    if outcome.agent_id:
        head += f" (agent {outcome.agent_id})"
    lines = [head]
    if outcome.reason:
        lines.append(f"  reason: {outcome.reason}")
    if outcome.changed:
        lines.append(f"  changed: {', '.join(outcome.changed)}")
    if outcome.evidence:
        lines.append("  evidence: " + outcome.evidence.replace("\n", "\n    "))
    if answer and not outcome.ok:
        tail = answer[-ANSWER_TAIL:]
        lines.append("  answer (end): " + tail.replace("\n", "\n    "))
    return "\n".join(lines)


class WorkGraphTool(BaseTool):
    name = "run_agent_work_graph"
    description = (
        "Run a graph of subagent tasks. Each task {id, prompt, deps, scope, writable, isolation?} runs as its own "
        "agent once every task in deps is done; a failed task skips its dependents. scope lists the paths or globs "
        "(relative to the workspace) a writable task may change; writable tasks of one workspace run one at a time "
        "and their scopes may not overlap unless one depends on the other; read-only tasks run in parallel. "
        "isolation \"worktree\" gives a task its own git worktree. A task is done only if its report's changed "
        "files equal what the engine saw change, all inside its scope, with non-empty evidence. The graph is "
        "validated before anything runs (unknown deps, cycles, overlapping scopes). Returns every task's outcome "
        "and evidence, in task order."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "tasks": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "unique name of the task"},
                        "prompt": {"type": "string", "description": "what the agent must do"},
                        "deps": {"type": "array", "items": {"type": "string"},
                                 "description": "ids of tasks that must be done first"},
                        "scope": {"type": "array", "items": {"type": "string"},
                                  "description": "paths or globs the task may change"},
                        "writable": {"type": "boolean", "description": "whether the task may change files"},
                        "isolation": {"type": "string", "enum": ["worktree"]},
                    },
                    "required": ["id", "prompt"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["tasks"],
        "additionalProperties": False,
    }
    parallel = False
    required = ("tasks",)

    def risk(self, call_input: dict[str, Any]) -> Risk:
        tasks = call_input.get("tasks")
        if isinstance(tasks, list) and any(isinstance(t, dict) and t.get("isolation") == "worktree" for t in tasks):
            return Risk.DESTRUCTIVE
        return Risk.WRITE

    def subject(self, call_input: dict[str, Any], env: ToolEnv) -> str:
        tasks = call_input.get("tasks")
        if not isinstance(tasks, list):
            return ""
        return ", ".join(str(t.get("id")) for t in tasks if isinstance(t, dict))[:300]

    def writes(self, call: ToolCall, env: ToolEnv) -> list[Path] | None:
        return None  # the agents' own calls keep their checkpoints; the workspace is snapshotted

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        from cox.agents.graph import GraphError, Scheduler, parse

        runner = env.services.agents
        if runner is None:
            return ToolResult.error("run_agent_work_graph: this surface runs no subagents, so a work graph "
                                    "cannot run here; do the tasks yourself, one at a time.")
        run = _Run(env, runner)
        try:
            tasks = parse(call.input, is_file=lambda rel: _is_file(run.base / rel))
        except GraphError as e:
            raise ToolInputError(str(e)) from None
        sched = Scheduler(tasks)
        stop = env.cancel.on_cancel(lambda: run.ended.put(None))
        try:
            while not sched.done:
                if env.cancel.cancelled:
                    break
                for task in sched.start():
                    run.launch(task)
                if sched.done:
                    break
                if not sched.running:  # pragma: no cover - the scheduler always has work or is done
                    break
                got = run.ended.get()
                if got is None:
                    break
                sched.finish(got)
            if not sched.done:
                sched.stop("the graph was interrupted before this task started")
                run.drain(sched)
        finally:
            stop()
        outcomes = sched.results()
        text = "\n".join(_format(o, run.answers.get(o.id, "")) for o in outcomes)
        counts = {s: sum(1 for o in outcomes if o.state == s) for s in ("done", "failed", "skipped")}
        summary = f"work graph: {counts['done']} done, {counts['failed']} failed, {counts['skipped']} skipped"
        meta = {"tasks": [{"id": o.id, "state": o.state, "reason": o.reason, "changed": list(o.changed),
                           "agent_id": o.agent_id} for o in outcomes], **counts}
        if env.cancel.cancelled:
            return ToolResult(status=ToolStatus.ABORTED, visible=summary + " (interrupted)\n" + text, meta=meta)
        return ToolResult(visible=summary + "\n" + text, meta=meta)


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class _Run:
    """The threads of one graph run: each task's snapshot, agent and verdict."""

    def __init__(self, env: ToolEnv, runner: AgentRunner) -> None:
        self.env = env
        self.runner = runner
        self.ended: queue.Queue[Outcome | None] = queue.Queue()
        self.answers: dict[str, str] = {}
        roots = env.roots or [env.cwd]
        self.base = Path(roots[0])
        self.roots = list(roots)

    def launch(self, task: Task) -> None:
        from cox.agents.evidence import head_of, snapshot

        before: Snapshot | str | None = (snapshot(self.base, self.roots) if task.isolation is None
                                         else head_of(self.base))
        threading.Thread(target=self._run, args=(task, before), name=f"work-graph:{task.id}", daemon=True).start()

    def _run(self, task: Task, before: Snapshot | str | None) -> None:
        from cox.agents.graph import Outcome

        try:
            outcome = self._attempt(task, before)
        except Exception as e:  # a runner or gate crash fails this task, never the graph
            outcome = Outcome(task.id, "failed", f"it crashed: {type(e).__name__}: {e}")
        self.ended.put(outcome)

    def _attempt(self, task: Task, before: Snapshot | str | None) -> Outcome:
        from cox.agents.evidence import changed, instructions, judge, snapshot, worktree_changes
        from cox.agents.graph import Outcome
        from cox.agents.runner import AgentTask

        prompt = task.prompt + instructions(task.scope, task.writable)
        report = self.runner.run(AgentTask(description=task.id, prompt=prompt, read_only=not task.writable,
                                           isolation=task.isolation, name=task.id), self.env.cancel)
        self.answers[task.id] = report.text
        agent = report.agent_id
        seen: set[str]
        if isinstance(before, dict):
            seen = changed(before, snapshot(self.base, self.roots))
        elif report.worktree is None:
            return Outcome(task.id, "failed", "the runner ran it without the worktree it asked for", agent_id=agent)
        else:
            found = worktree_changes(Path(report.worktree), before)
            if isinstance(found, str):
                return Outcome(task.id, "failed", found, agent_id=agent)
            seen = found
        got = tuple(sorted(seen))
        if self.env.cancel.cancelled:
            return Outcome(task.id, "failed", "interrupted while it ran", changed=got, agent_id=agent)
        if not report.ok:
            return Outcome(task.id, "failed", f"the agent did not finish (it stopped with {report.stop})",
                           changed=got, agent_id=agent)
        verdict = judge(report.text, seen, task.scope, task.writable)
        return Outcome(task.id, "done" if verdict.ok else "failed", verdict.reason, verdict.evidence, got, agent)

    def drain(self, sched: Scheduler) -> None:
        """Collect the tasks still running after an interrupt (they see the cancelled token); a
        task that has not ended ``JOIN_S`` later (only a hung runner) is reported as such."""
        from cox.agents.graph import Outcome

        deadline = time.monotonic() + JOIN_S
        while sched.running:
            try:
                got = self.ended.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                for ident in list(sched.running):
                    sched.finish(Outcome(ident, "failed", "it did not end after the interrupt"))
                return
            if got is not None:
                sched.finish(got)
