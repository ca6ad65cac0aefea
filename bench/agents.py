"""Subagent figures, each beside a floor measured in the same run.

    .venv/bin/python bench/agents.py [--quick] [--agents N]

Prints, for N subagents (200 by default) started by one parent session in one process, each
doing a read and a bash call against the scripted model:
- the wall time from the parent's prompt to its turn_done, beside the floor: one agent alone;
- the peak RSS of the whole process tree (this process and every process under it: bash,
  bubblewrap), the growth over the idle process, and the growth per agent (goal: all 200 within
  300 MB);
- interrupt → every child's turn_done (relayed to the parent) with N children stalled in their
  stream: p50 / p99 / max (goal p99 ≤ 100 ms), beside the floor: one session's own interrupt,
  and the process's CPU time (all threads, user and system) from the interrupt to the last of
  them, per child — the figure to watch on a shared machine, where wall times are noisy;
- a work graph of 50 tasks with dependencies: scheduling overhead per task, when
  ``cox.agents.graph`` is there (goal ≤ 5 ms).
Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import os
import queue
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cox.actors.provider.scripted import ScriptedProvider  # noqa: E402
from cox.actors.session.actor import SessionSettings  # noqa: E402
from cox.actors.tools.agent import agent_tools  # noqa: E402
from cox.actors.tools.registry import builtin_tools  # noqa: E402
from cox.policy.permission import Engine  # noqa: E402
from cox.protocol import messages as m  # noqa: E402
from cox.protocol.types import PermissionMode, new_ulid  # noqa: E402
from cox.surfaces.runtime import App  # noqa: E402

QUICK = "--quick" in sys.argv
N = int(sys.argv[sys.argv.index("--agents") + 1]) if "--agents" in sys.argv else (40 if QUICK else 200)
BOUND_S = 600.0
LAST_END_CPU = [0.0]
"""The process's CPU time when the last relayed child turn_done was taken from the queue."""


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def tree_rss_mb() -> float:
    """RSS of this process and every process below it (read from /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        pid = int(name)
        parents[pid] = int(fields.get("PPid", "0").strip() or 0)
        rss[pid] = int((fields.get("VmRSS", "0 kB").split() or ["0"])[0])
    me = os.getpid()
    total = 0
    for pid, kb in rss.items():
        p, hops = pid, 0
        while p and p != me and hops < 64:
            p, hops = parents.get(p, 0), hops + 1
        if p == me:
            total += kb
    return total / 1024


class PeakTree:
    def __init__(self, every_s: float = 0.05) -> None:
        self.base = tree_rss_mb()
        self.peak = self.base
        self._stop = threading.Event()
        self._every = every_s
        self._thread = threading.Thread(target=self._run, name="bench-rss", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.peak = max(self.peak, tree_rss_mb())

    def __enter__(self) -> PeakTree:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


def parent_script(n: int, child: list[dict[str, Any]], prefix: str) -> dict[str, Any]:
    calls = [{"id": f"a{i}", "name": "agent", "input": {"description": f"task {i}", "prompt": f"{prefix} {i}"}}
             for i in range(n)]
    return {"model": "scripted", "replies": [{"tool_calls": calls}, {"text": "all back"}],
            "agents": {f"{prefix} {i}": child for i in range(n)}}


def run_parent(app: App, ws: Path, home: Path, script: dict[str, Any], on_event: Any = None,
               children: int = 0) -> tuple[float, list[Any]]:
    """Run the parent's one turn; ``children``: then wait for that many children's turn_done (an
    interrupted parent ends before its children's ends are relayed)."""
    provider = ScriptedProvider(script)
    engine = Engine.compile(home=home, roots=[ws])
    settings = SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="scripted",
                               permission_mode=PermissionMode.BYPASS, home=home, checkpoints=False)
    handle = app.open_session(settings, provider, {**builtin_tools(), **agent_tools()}, engine)
    events: list[Any] = []
    started = time.perf_counter()
    handle.submit(m.UserTurn(text="go"))
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        try:
            event, _ = handle.events.get(timeout=0.5)
        except queue.Empty:
            continue
        events.append((time.perf_counter(), event))
        if event.type == "agent_event" and event.event["type"] == "turn_done":
            LAST_END_CPU[0] = time.process_time()
        if on_event is not None:
            on_event(event, handle)
        if event.type == "turn_done":
            break
    wall = time.perf_counter() - started
    ended = sum(1 for _, e in events if e.type == "agent_event" and e.event["type"] == "turn_done")
    while ended < children and time.monotonic() < deadline:
        try:
            event, _ = handle.events.get(timeout=0.5)
        except queue.Empty:
            continue
        events.append((time.perf_counter(), event))
        if event.type == "agent_event" and event.event["type"] == "turn_done":
            ended += 1
            LAST_END_CPU[0] = time.process_time()
    handle.shutdown()
    return wall, events


WORK = [{"tool_calls": [{"id": "r", "name": "read", "input": {"path": "notes.txt"}},
                        {"id": "b", "name": "bash", "input": {"command": "echo hi"}}]},
        {"text": "read and ran"}]


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="cox-bench-agents-"))
    ws, home = tmp / "ws", tmp / "home"
    ws.mkdir()
    (ws / "notes.txt").write_text("notes\n")
    os.environ.setdefault("COX_HOME", str(home))
    app = App(home)
    try:
        run_parent(app, ws, home, parent_script(1, WORK, "warm"))  # imports, the sandbox probe, the db
        floor_wall, _ = run_parent(app, ws, home, parent_script(1, WORK, "floor"))
        with PeakTree() as peak:
            wall, events = run_parent(app, ws, home, parent_script(N, WORK, "work"))
        done = [e for _, e in events if e.type == "agent_event" and e.event["type"] == "turn_done"]
        ok = sum(1 for e in done if e.event["stop"] == "end_turn")
        growth = peak.peak - peak.base
        print(f"{N} subagents (a read and a bash call each): wall {wall:.2f} s, {ok}/{N} finished "
              f"(floor: one agent {floor_wall * 1000:.0f} ms; {wall / max(floor_wall, 1e-9) / N:.2f}x per agent)")
        print(f"  peak RSS of the process tree {peak.peak:.0f} MB (idle {peak.base:.0f} MB): +{growth:.0f} MB, "
              f"{growth / N:.2f} MB per agent (goal: all {N} within 300 MB)")

        stalled = [{"events": [{"text": "working"}, {"stall": True}]}]
        begun: set[str] = set()
        asked: list[float] = []

        def interrupt_when_all_run(event: Any, handle: Any) -> None:
            if event.type == "agent_event" and event.event["type"] == "user_message":
                begun.add(event.agent_id)
                if len(begun) == N and not asked:
                    asked.append(time.perf_counter())
                    asked.append(time.process_time())
                    handle.interrupt()

        _, events = run_parent(app, ws, home, parent_script(N, stalled, "stall"), interrupt_when_all_run, children=N)
        ends = [t for t, e in events if e.type == "agent_event" and e.event["type"] == "turn_done"]
        own = [t for t, e in events if e.type == "turn_done"]
        if asked and own:
            print(f"  (the parent's own turn_done came {(own[0] - asked[0]) * 1000:.1f} ms after the interrupt)")
        lat = [(t - asked[0]) * 1000 for t in ends] if asked else []
        floor_int = interrupt_floor(app, ws, home)
        if lat:
            print(f"interrupt -> every child's turn_done ({len(lat)}/{N} children): p50 {pct(lat, 50):.1f} ms, "
                  f"p99 {pct(lat, 99):.1f} ms, max {max(lat):.1f} ms (goal p99 <= 100 ms; floor: one session's "
                  f"own interrupt {floor_int:.1f} ms)")
            print(f"  CPU time of the process from the interrupt to the last of them: "
                  f"{(LAST_END_CPU[0] - asked[1]) * 1000:.0f} ms, {(LAST_END_CPU[0] - asked[1]) / N * 1e6:.0f} µs per child")
        graph_figure()
    finally:
        app.close()


def interrupt_floor(app: App, ws: Path, home: Path) -> float:
    provider = ScriptedProvider({"model": "scripted", "replies": [{"events": [{"text": "x"}, {"stall": True}]}]})
    settings = SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="scripted", home=home,
                               checkpoints=False)
    handle = app.open_session(settings, provider, builtin_tools(), Engine.compile(home=home, roots=[ws]))
    handle.submit(m.UserTurn(text="go"))
    asked = 0.0
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        event, _ = handle.events.get(timeout=BOUND_S)
        if event.type == "text_delta" and not asked:
            asked = time.perf_counter()
            handle.interrupt()
        if event.type == "turn_done":
            took = (time.perf_counter() - asked) * 1000
            handle.shutdown()
            return took
    return float("nan")


def graph_figure() -> None:
    from bench.agents_graph import figures

    for line in figures():
        print(line)


if __name__ == "__main__":
    main()
