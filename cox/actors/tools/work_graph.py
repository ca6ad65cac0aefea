"""``run_agent_work_graph``: run a graph of subagent tasks, each gated by its evidence.

The graph is checked whole before anything runs (:func:`cox.agents.graph.parse`); then the
call's thread drives a :class:`~cox.agents.graph.Scheduler`: each task it lets start runs in a
thread of its own through the parent session's runner (``env.services.agents.run``), its
environment snapshotted before and after (:mod:`cox.agents.evidence`), and its answer judged by
the evidence gate. The result lists every task in the order given: done (with its evidence),
failed (with the reason) or skipped (with the reason), the files it changed, its worktree, and
the end of its agent's answer (the report block taken out: its content is shown above it).

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

from . import catalog
from .base import BaseTool, ToolEnv, ToolInputError

if TYPE_CHECKING:
    from cox.agents.evidence import Snapshot
    from cox.agents.graph import Outcome, Scheduler, Task
    from cox.agents.runner import AgentReport, TaskRunner

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
    if outcome.worktree:
        lines.append(f"  worktree: {outcome.worktree}")
    if outcome.evidence:
        lines.append("  evidence: " + outcome.evidence.replace("\n", "\n    "))
    text = _without_report(answer).strip() if outcome.ok else answer.strip()
    if text:
        shown = text if len(text) <= ANSWER_TAIL else "…" + text[-ANSWER_TAIL:]
        lines.append("  answer: " + shown.replace("\n", "\n    "))
    return "\n".join(lines)


def _without_report(answer: str) -> str:
    from cox.agents.evidence import REPORT_BLOCK

    found = list(REPORT_BLOCK.finditer(answer))
    return answer[:found[-1].start()] + answer[found[-1].end():] if found else answer


class WorkGraphTool(BaseTool):
    spec = catalog.WORK_GRAPH

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
            while not sched.done and not env.cancel.cancelled:
                run.launch(sched.start())
                if sched.done or not sched.running:
                    break
                got = run.ended.get()
                if got is None:
                    break
                sched.finish(run.settle(*got))
            if not sched.done:
                sched.stop("the graph was interrupted before this task started")
                run.drain(sched)
        finally:
            stop()
            run.snaps.close()
        outcomes = sched.results()
        text = "\n".join(_format(o, run.answers.get(o.id, "")) for o in outcomes)
        counts = {s: sum(1 for o in outcomes if o.state == s) for s in ("done", "failed", "skipped")}
        summary = f"work graph: {counts['done']} done, {counts['failed']} failed, {counts['skipped']} skipped"
        meta = {"tasks": [{"id": o.id, "state": o.state, "reason": o.reason, "changed": list(o.changed),
                           "evidence": o.evidence, "agent_id": o.agent_id, "worktree": o.worktree}
                          for o in outcomes], **counts}
        if env.cancel.cancelled:
            return ToolResult(status=ToolStatus.ABORTED, visible=summary + " (interrupted)\n" + text, meta=meta)
        return ToolResult(visible=summary + "\n" + text, meta=meta)


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


class _Run:
    """One graph run. The call's thread (the driver) launches tasks, takes every snapshot and
    judges every report; each task's thread only runs its agent. The workspace is snapshotted
    once per launch batch and once per end; the snapshot taken when the workspace fell idle is
    the next batch's "before" (nothing ran in between), so a chain of writers costs one snapshot
    per task."""

    def __init__(self, env: ToolEnv, runner: TaskRunner) -> None:
        from cox.agents.evidence import Snapshots

        self.env = env
        self.runner = runner
        self.ended: queue.Queue[tuple[Task, AgentReport | BaseException] | None] = queue.Queue()
        self.answers: dict[str, str] = {}
        roots = env.roots or [env.cwd]
        self.base = Path(roots[0])
        self.snaps = Snapshots(self.base, roots)
        self.before: dict[str, Snapshot | tuple[int, str | None]] = {}
        self.idle: Snapshot | None = None  # the workspace as it was when nothing ran there
        self.in_workspace = 0

    def launch(self, tasks: list[Task]) -> None:
        from cox.agents.evidence import head_of

        shared = [t for t in tasks if t.isolation is None]
        if shared:
            snap = self.idle if self.idle is not None and self.in_workspace == 0 else self.snaps.take()
            self.idle = None
            self.in_workspace += len(shared)
            for t in shared:
                self.before[t.id] = snap
        for t in tasks:
            if t.isolation is not None:
                self.before[t.id] = (int(time.time()), head_of(self.base))
            threading.Thread(target=self._run, args=(t,), name=f"work-graph:{t.id}", daemon=True).start()

    def _run(self, task: Task) -> None:
        from cox.agents.evidence import instructions
        from cox.agents.runner import AgentTask

        prompt = task.prompt + instructions(task.scope, task.writable)
        try:
            got: AgentReport | BaseException = self.runner.run(
                AgentTask(description=task.id, prompt=prompt, read_only=not task.writable,
                          isolation=task.isolation, name=task.id), self.env.cancel)
        except Exception as e:  # a runner crash fails this task, never the graph
            got = e
        self.ended.put((task, got))

    def settle(self, task: Task, got: AgentReport | BaseException) -> Outcome:
        """The task's outcome: its environment snapshotted again, its report judged."""
        from cox.agents.evidence import changed, judge, worktree_changes
        from cox.agents.graph import Outcome

        before = self.before.pop(task.id)
        seen: set[str] | str
        if isinstance(before, dict):
            after = self.snaps.take()
            self.in_workspace -= 1
            if self.in_workspace == 0:
                self.idle = after
            seen = changed(before, after)
        elif isinstance(got, BaseException) or got.worktree is None:
            seen = "the runner ran it without the worktree it asked for"
        else:
            seen = worktree_changes(Path(got.worktree), got.branch, *before)
        if isinstance(got, BaseException):
            return Outcome(task.id, "failed", f"it crashed: {type(got).__name__}: {got}")
        self.answers[task.id] = got.text
        agent = got.agent_id
        if isinstance(seen, str):
            return Outcome(task.id, "failed", seen, agent_id=agent)
        files = tuple(sorted(seen))
        if self.env.cancel.cancelled:
            return Outcome(task.id, "failed", "interrupted while it ran", changed=files, agent_id=agent)
        if not got.ok:
            return Outcome(task.id, "failed", f"the agent did not finish (it stopped with {got.stop})",
                           changed=files, agent_id=agent)
        verdict = judge(got.text, seen, task.scope, task.writable)
        where = f"{got.worktree}, branch {got.branch}" if got.worktree is not None else ""
        return Outcome(task.id, "done" if verdict.ok else "failed", verdict.reason, verdict.evidence, files, agent,
                       where)

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
                sched.finish(self.settle(*got))
