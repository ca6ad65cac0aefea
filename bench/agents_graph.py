"""Work-graph figures: what scheduling a 50-task graph with dependencies costs per task (goal
≤ 5 ms, issue 14), with a no-op agent runner, beside the floor (the same 50 no-op agent calls made
one after another with no scheduler, no threads, no gate).

- the scheduler alone (``Scheduler.start``/``finish`` driven synchronously),
- ``run_agent_work_graph`` end to end (validation, a thread per task, the prompt with the report
  instruction, the evidence gate's snapshots and verdicts) in an empty workspace and in git
  workspaces of 200 and 2,000 files: every snapshot stats every file the listing sees (hashing
  only what changed, listing again only when inotify saw a path appear), so the gate's cost
  grows with the workspace while the scheduler's does not.

    .venv/bin/python bench/agents_graph.py

Figures only: nothing here passes or fails. ``figures()`` returns the lines, for bench/agents.py.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cox.actors.tools.base import ToolEnv, ToolServices  # noqa: E402
from cox.actors.tools.work_graph import WorkGraphTool  # noqa: E402
from cox.agents.graph import Outcome, Scheduler, parse  # noqa: E402
from cox.agents.runner import AgentReport, AgentTask  # noqa: E402
from cox.protocol.interfaces import CancelToken  # noqa: E402
from cox.protocol.types import ToolCall  # noqa: E402
from cox.supervisors import CancelScope  # noqa: E402

TASKS = 50
RUNS = 20
ANSWER = "done\n\n```report\nchanged: []\nevidence: nothing to do (bench)\n```\n"


class NoopRunner:
    """A TaskRunner answering every task at once with a report that passes the gate."""

    def run(self, task: AgentTask, cancel: CancelToken, call_id: str = "") -> AgentReport:
        return AgentReport(agent_id=task.description, text=ANSWER, stop="end_turn", ok=True)



def graph() -> list[dict[str, Any]]:
    """Five layers of ten; each task depends on two of the layer before; every third writable,
    each with a file of its own as scope."""
    tasks: list[dict[str, Any]] = []
    for n in range(TASKS):
        layer, k = divmod(n, 10)
        deps = [] if layer == 0 else [f"t{(layer - 1) * 10 + k}", f"t{(layer - 1) * 10 + (k + 1) % 10}"]
        tasks.append({"id": f"t{n}", "prompt": f"task {n}", "deps": deps, "writable": n % 3 == 0,
                      "scope": [f"out/t{n}.txt"]})
    return tasks


def floor_ms(runner: NoopRunner, cancel: CancelScope) -> float:
    t = time.perf_counter()
    for n in range(TASKS):
        runner.run(AgentTask(description=f"t{n}", prompt=f"task {n}"), cancel)
    return (time.perf_counter() - t) * 1000


def scheduler_ms(raw: list[dict[str, Any]]) -> float:
    t = time.perf_counter()
    s = Scheduler(parse(raw))
    while not s.done:
        for task in s.start():
            s.finish(Outcome(task.id, "done"))
    return (time.perf_counter() - t) * 1000


def tool_ms(raw: list[dict[str, Any]], ws: Path) -> float:
    env = ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope("bench"), services=ToolServices(agents=NoopRunner()))
    call = ToolCall(id="g", name="run_agent_work_graph", input={"tasks": raw})
    t = time.perf_counter()
    result = WorkGraphTool().call(call, env)
    ms = (time.perf_counter() - t) * 1000
    if not result.visible.startswith(f"work graph: {TASKS} done"):
        raise SystemExit("the bench graph did not pass: " + result.visible[:2000])
    return ms


def median(f: Any, *args: Any, runs: int = RUNS) -> float:
    f(*args)
    return statistics.median(f(*args) for _ in range(runs))


def workspace(files: int) -> Path:
    ws = Path(tempfile.mkdtemp(prefix="cox-bench-graph-"))
    for n in range(files):
        (ws / "src" / f"d{n % 20}").mkdir(parents=True, exist_ok=True)
        (ws / "src" / f"d{n % 20}" / f"f{n}.py").write_text(f"# file {n}\n" * 40)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def figures() -> list[str]:
    raw = graph()
    floor = median(floor_ms, NoopRunner(), CancelScope("bench")) / TASKS
    sched = median(scheduler_ms, raw) / TASKS
    lines = [f"work graph of {TASKS} tasks (5 layers, 2 deps each, every third writable), no-op runner, "
             f"median of {RUNS}, per task:",
             f"  floor: the same no-op agent calls in a loop  {floor * 1000:8.1f} µs",
             f"  scheduler alone (parse + start/finish)      {sched * 1000:8.1f} µs"]
    spaces = [("empty workspace", Path(tempfile.mkdtemp(prefix="cox-bench-graph-")), RUNS),
              ("200-file git workspace", workspace(200), RUNS), ("2,000-file git workspace", workspace(2000), 5)]
    for name, ws, runs in spaces:
        per = median(tool_ms, raw, ws, runs=runs) / TASKS
        lines.append(f"  run_agent_work_graph, {name:<24} {per * 1000:8.1f} µs  → overhead "
                     f"{per - floor:.2f} ms per task (goal ≤ 5)")
    return lines


def main() -> None:
    for line in figures():
        print(line)


if __name__ == "__main__":
    main()
