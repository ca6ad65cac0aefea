"""``run_agent_work_graph`` end to end against a fake runner whose agents really write files in a
tmp workspace: the engine's own snapshots judge every report."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from cox.actors.tools.base import ToolEnv, ToolServices
from cox.actors.tools.execute import run as execute_run
from cox.actors.tools.registry import deferred_builtin_tools
from cox.actors.tools.work_graph import WorkGraphTool
from cox.agents.runner import AgentTask
from cox.protocol.interfaces import CancelToken
from cox.protocol.types import Risk, ToolCall, ToolResult, ToolStatus
from cox.supervisors.cancel import CancelScope
from tests.waits import BOUND_S

from .fake_runner import FakeRunner, Plan, reads, report, writes


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("def f(): pass\n")
    (root / "README.md").write_text("hello\n")
    return root


def task(ident: str, deps: list[str] | None = None, scope: list[str] | None = None, writable: bool = False,
         **extra: Any) -> dict[str, Any]:
    return {"id": ident, "prompt": f"do {ident}", "deps": deps or [], "scope": scope or [], "writable": writable,
            **extra}


def run_graph(ws: Path, runner: FakeRunner | None, tasks: list[dict[str, Any]],
              cancel: CancelScope | None = None) -> ToolResult:
    env = ToolEnv(roots=[ws], cwd=ws, cancel=cancel or CancelScope("test"), services=ToolServices(agents=runner))
    return execute_run(WorkGraphTool(), ToolCall(id="c1", name="run_agent_work_graph", input={"tasks": tasks}), env)


def states(result: ToolResult) -> dict[str, tuple[str, str]]:
    return {t["id"]: (t["state"], t["reason"]) for t in result.meta["tasks"]}


def test_a_graph_runs_and_each_task_passes_the_gate(ws: Path) -> None:
    runner = FakeRunner({
        "impl": writes(ws, {"src/b.py": "x = 1\n"}),
        "docs": writes(ws, {"docs/b.md": "b\n"}),
        "review": reads(),
    })
    result = run_graph(ws, runner, [task("impl", scope=["src/"], writable=True),
                                    task("docs", ["impl"], scope=["docs/*.md"], writable=True),
                                    task("review", ["impl", "docs"])])
    assert result.ok, result.visible
    assert states(result) == {"impl": ("done", ""), "docs": ("done", ""), "review": ("done", "")}
    assert [e for e in runner.log if e[0] == "start"] == [("start", "impl"), ("start", "docs"), ("start", "review")]
    assert result.visible.startswith("work graph: 3 done, 0 failed, 0 skipped")
    assert ("[done] impl (agent agent-impl)\n  changed: src/b.py\n  evidence: read it back\n  answer: Done.\n"
            in result.visible)  # the answer without its report block
    # every task was told its bounds and the report block, and ran read-only unless writable
    impl, review = runner.tasks["impl"], runner.tasks["review"]
    assert "You may change only files inside this scope" in impl.prompt and "```report" in impl.prompt
    assert not impl.read_only and review.read_only and "read-only" in review.prompt
    assert impl.description == "impl" and impl.isolation is None


def test_a_cycle_is_refused_before_anything_runs(ws: Path) -> None:
    runner = FakeRunner({"a": reads(), "b": reads()})
    result = run_graph(ws, runner, [task("a", ["b"]), task("b", ["a"])])
    assert result.status is ToolStatus.ERROR
    assert "cycle: a -> b -> a" in result.visible and "nothing ran" in result.visible
    assert runner.log == []


def test_overlapping_writable_scopes_are_refused_before_anything_runs(ws: Path) -> None:
    runner = FakeRunner({"a": reads(), "b": reads()})
    result = run_graph(ws, runner, [task("a", scope=["src"], writable=True), task("b", scope=["src/**/*.py"], writable=True)])
    assert result.status is ToolStatus.ERROR and "scopes overlap" in result.visible
    assert runner.log == []


def test_an_existing_file_has_nothing_below_it(ws: Path) -> None:
    runner = FakeRunner({"a": writes(ws, {"src/a.py": "def f(): return 1\n"}), "t": writes(ws, {"src/test_a.py": "ok\n"})})
    result = run_graph(ws, runner, [task("a", scope=["src/a.py"], writable=True),
                                    task("t", scope=["src/**/test_*.py"], writable=True)])
    assert result.ok and states(result)["t"] == ("done", ""), result.visible


def test_a_failed_dependency_skips_its_dependents(ws: Path) -> None:
    runner = FakeRunner({"build": writes(ws, {"src/b.py": "x\n"}), "test": reads(), "ship": reads(), "lint": reads()},
                        ok={"build": False})
    result = run_graph(ws, runner, [task("build", scope=["src"], writable=True), task("test", ["build"]),
                                    task("ship", ["test"]), task("lint")])
    got = states(result)
    assert got["build"] == ("failed", "the agent did not finish (it stopped with error)")
    assert got["test"] == ("skipped", "dependency 'build' failed")
    assert got["ship"] == ("skipped", "dependency 'test' was skipped")
    assert got["lint"] == ("done", "")
    assert {name for _, name in runner.log} == {"build", "lint"}
    assert "[skipped] test\n  reason: dependency 'build' failed" in result.visible


def test_a_report_that_lies_about_its_changes_is_rejected(ws: Path) -> None:
    runner = FakeRunner({
        "liar": writes(ws, {"src/a.py": "changed\n", "src/b.py": "new\n"}, claim=["src/a.py", "src/c.py"]),
        "after": reads(),
    })
    result = run_graph(ws, runner, [task("liar", scope=["src"], writable=True), task("after", ["liar"])])
    state, reason = states(result)["liar"]
    assert state == "failed"
    assert "disagrees with the engine's snapshot" in reason
    assert "it claims src/c.py but the engine saw no change there" in reason
    assert "it changed src/b.py without listing it" in reason
    assert states(result)["after"] == ("skipped", "dependency 'liar' failed")


def test_a_claim_of_nothing_with_a_silent_deletion_is_rejected(ws: Path) -> None:
    def delete(t: AgentTask, c: CancelToken) -> str:
        (ws / "src" / "a.py").unlink()
        return report([])
    result = run_graph(ws, FakeRunner({"d": delete}), [task("d", scope=["src"], writable=True)])
    assert states(result)["d"] == ("failed", "its report disagrees with the engine's snapshot: it changed src/a.py "
                                             "without listing it")


def test_a_mode_change_is_a_change(ws: Path) -> None:
    def chmod(t: AgentTask, c: CancelToken) -> str:
        (ws / "src" / "a.py").chmod(0o755)
        return report([])
    result = run_graph(ws, FakeRunner({"m": chmod}), [task("m", scope=["src"], writable=True)])
    assert states(result)["m"][0] == "failed" and "src/a.py without listing it" in states(result)["m"][1]


def test_a_task_that_writes_outside_its_scope_is_rejected(ws: Path) -> None:
    runner = FakeRunner({"w": writes(ws, {"src/b.py": "x\n", "README.md": "pwned\n"})})
    result = run_graph(ws, runner, [task("w", scope=["src/"], writable=True)])
    assert states(result)["w"] == ("failed", "it changed README.md, outside its scope (src)")


def test_an_out_of_scope_change_with_its_size_and_mtime_put_back_is_still_seen(ws: Path) -> None:
    import os

    def sneaky(t: AgentTask, c: CancelToken) -> str:
        readme = ws / "README.md"
        st = readme.stat()
        readme.write_text("PWNED\n")  # as long as "hello\n"
        os.utime(readme, ns=(st.st_atime_ns, st.st_mtime_ns))
        (ws / "src" / "b.py").write_text("b\n")
        return report(["src/b.py"])

    result = run_graph(ws, FakeRunner({"s": sneaky}), [task("s", scope=["src"], writable=True)])
    assert states(result)["s"] == ("failed", "it changed README.md, outside its scope (src)")


def test_a_read_only_task_that_writes_is_rejected(ws: Path) -> None:
    runner = FakeRunner({"r": writes(ws, {"notes.txt": "x\n"}, claim=[])})
    result = run_graph(ws, runner, [task("r", scope=["notes.txt"])])
    assert states(result)["r"] == ("failed", "it is read-only but changed notes.txt")


@pytest.mark.parametrize("answer, why", [
    ("I did it.", "does not end with the ```report block"),
    ("```report\nchanged: [src/a.py]\nevidence: x\n```", "is not a JSON list"),
    ("```report\nevidence: x\n```", "no 'changed:' line"),
    ("```report\nchanged: []\nevidence:   \n```", "gives no evidence"),
])
def test_a_report_without_the_block_or_evidence_fails(ws: Path, answer: str, why: str) -> None:
    result = run_graph(ws, FakeRunner({"r": lambda t, c: answer}), [task("r")])
    state, reason = states(result)["r"]
    assert state == "failed" and why in reason
    assert "  answer: " + answer.splitlines()[0] in result.visible


def test_the_last_report_block_counts_and_evidence_may_span_lines(ws: Path) -> None:
    answer = ("quoting the format: ```report\nchanged: [\"x\"]\nevidence: none\n```\n"
              "```report\nchanged: []\nevidence: ran pytest\n  3 passed\n```")
    result = run_graph(ws, FakeRunner({"r": lambda t, c: answer}), [task("r")])
    assert states(result)["r"] == ("done", ""), result.visible
    assert "evidence: ran pytest\n      3 passed" in result.visible


def test_two_writable_tasks_are_serialised(ws: Path) -> None:
    """w1 is held until the worktree task (same launch batch, after w2 in task order) has started,
    so a scheduler that launched w2 beside w1 would have done so while w1 still ran; w2 checks on
    entry that w1 had ended."""
    holder: dict[str, FakeRunner] = {}
    w2_saw_w1_ended: list[bool] = []

    def w1(t: AgentTask, c: CancelToken) -> str:
        assert holder["r"].started["iso"].wait(BOUND_S)
        (ws / "src" / "one.py").write_text("1\n")
        return report(["src/one.py"])

    def w2(t: AgentTask, c: CancelToken) -> str:
        w2_saw_w1_ended.append(holder["r"].ended["w1"].is_set())
        (ws / "src" / "two.py").write_text("2\n")
        return report(["src/two.py"])

    def iso(t: AgentTask, c: CancelToken) -> str:
        return report([])

    plans: dict[str, Plan] = {"w1": w1, "w2": w2, "iso": iso}
    runner = holder["r"] = FakeRunner(plans)
    result = run_graph(ws, runner, [task("w1", scope=["src/one.py"], writable=True),
                                    task("w2", scope=["src/two.py"], writable=True), task("iso", isolation="worktree")])
    assert states(result)["w1"] == ("done", "") and states(result)["w2"] == ("done", ""), result.visible
    assert w2_saw_w1_ended == [True]
    assert runner.max_writers == 1
    log = runner.log
    assert log.index(("end", "w1")) < log.index(("start", "w2"))


def test_a_read_only_task_never_runs_beside_a_writer(ws: Path) -> None:
    """Read-only tasks run in parallel with each other (r1 waits for r2 to start) but never beside
    the writer of their workspace, so a writer's changes are never charged to a reader."""
    holder: dict[str, FakeRunner] = {}

    def r1(t: AgentTask, c: CancelToken) -> str:
        assert holder["r"].started["r2"].wait(BOUND_S)
        return report([])

    def w(t: AgentTask, c: CancelToken) -> str:
        assert not any(holder["r"].started[n].is_set() and not holder["r"].ended[n].is_set() for n in ("r1", "r2"))
        (ws / "src" / "w.py").write_text("w\n")
        return report(["src/w.py"])

    runner = holder["r"] = FakeRunner({"r1": r1, "r2": reads(), "w": w})
    result = run_graph(ws, runner, [task("r1"), task("r2"), task("w", scope=["src"], writable=True)])
    assert [s for s, _ in states(result).values()] == ["done"] * 3, result.visible


def test_an_interrupt_cancels_running_tasks_and_skips_pending_ones(ws: Path) -> None:
    def blocks(t: AgentTask, c: CancelToken) -> str:
        gone = threading.Event()
        c.on_cancel(gone.set)
        assert gone.wait(BOUND_S)
        return "interrupted"

    runner = FakeRunner({"a": blocks, "b": blocks, "later": reads()})
    scope = CancelScope("turn")
    out: list[ToolResult] = []
    caller = threading.Thread(target=lambda: out.append(run_graph(ws, runner, [task("a"), task("b"), task("later", ["a"])],
                                                                  scope)))
    caller.start()
    assert runner.started["a"].wait(BOUND_S) and runner.started["b"].wait(BOUND_S)
    scope.cancel("interrupted")
    caller.join(BOUND_S)
    assert not caller.is_alive()
    result = out[0]
    assert result.status is ToolStatus.ABORTED
    got = states(result)
    assert got["a"] == ("failed", "interrupted while it ran") and got["b"] == ("failed", "interrupted while it ran")
    assert got["later"] == ("skipped", "the graph was interrupted before this task started")
    assert not runner.started["later"].is_set()


def test_without_a_runner_the_tool_says_so(ws: Path) -> None:
    result = run_graph(ws, None, [task("a")])
    assert result.status is ToolStatus.ERROR and "runs no subagents" in result.visible


def test_a_runner_crash_fails_only_that_task(ws: Path) -> None:
    def crash(t: AgentTask, c: CancelToken) -> str:
        raise RuntimeError("child actor died")
    result = run_graph(ws, FakeRunner({"x": crash, "y": reads()}), [task("x"), task("y")])
    assert states(result)["x"] == ("failed", "it crashed: RuntimeError: child actor died")
    assert states(result)["y"] == ("done", "")


def test_risk_and_registration() -> None:
    tool = deferred_builtin_tools()["run_agent_work_graph"]
    assert isinstance(tool.resolve(), WorkGraphTool)  # type: ignore[attr-defined]  # a registry's lazy entry
    assert tool.risk({"tasks": [task("a")]}) is Risk.WRITE
    assert tool.risk({"tasks": [task("a", isolation="worktree")]}) is Risk.DESTRUCTIVE


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    import os
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}).stdout


def test_ignored_files_are_not_seen_and_git_tracked_ones_are(ws: Path) -> None:
    (ws / ".gitignore").write_text("build/\n")
    _git(ws, "init", "-q")
    runner = FakeRunner({"w": writes(ws, {"build/out.o": "bin", "src/a.py": "2\n"}, claim=["src/a.py"])})
    result = run_graph(ws, runner, [task("w", scope=["src"], writable=True)])
    assert states(result)["w"] == ("done", ""), result.visible


PAST = {"GIT_COMMITTER_DATE": "@1500000000 +0000", "GIT_AUTHOR_DATE": "@1500000000 +0000"}


@pytest.mark.parametrize("reused", [False, True], ids=["new", "reused"])
def test_a_worktree_task_is_judged_on_its_own_worktree(ws: Path, tmp_path: Path, reused: bool) -> None:
    """Its changes (committed or not) are read by git in its worktree against where its branch
    stood when it started: a reused worktree's earlier commit is not charged to it."""
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    wt = tmp_path / "wt-iso"
    if reused:  # made by an earlier task, long ago
        _git(ws, "worktree", "add", "-q", "-b", "iso", str(wt), env=PAST)
        (wt / "src" / "old.py").write_text("earlier work\n")
        _git(wt, "add", "src/old.py")
        _git(wt, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "earlier", env=PAST)

    class WorktreeRunner(FakeRunner):
        def run(self, task: AgentTask, cancel: CancelToken, call_id: str = "") -> Any:
            got = super().run(task, cancel, call_id)
            if task.isolation != "worktree":
                return got
            from dataclasses import replace
            return replace(got, worktree=wt, branch=task.name)

    def in_worktree(t: AgentTask, c: CancelToken) -> str:
        if not reused:
            _git(ws, "worktree", "add", "-q", "-b", "iso", str(wt))
        (wt / "src" / "a.py").write_text("changed in the worktree\n")
        (wt / "src" / "new.py").write_text("new\n")
        _git(wt, "add", "src/new.py")
        _git(wt, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "new")
        (wt / "src" / "untracked.py").write_text("u\n")
        return report(["src/a.py", "src/new.py", "src/untracked.py"])

    def main_writer(t: AgentTask, c: CancelToken) -> str:
        (ws / "src" / "main.py").write_text("main\n")
        return report(["src/main.py"])

    runner = WorktreeRunner({"iso": in_worktree, "main": main_writer})
    result = run_graph(ws, runner, [task("iso", scope=["src"], writable=True, isolation="worktree"),
                                    task("main", scope=["src"], writable=True)])
    assert states(result) == {"iso": ("done", ""), "main": ("done", "")}, result.visible
    assert runner.tasks["iso"].isolation == "worktree" and runner.tasks["iso"].name == "iso"
    assert (ws / "src" / "a.py").read_text() == "def f(): pass\n"
    assert f"  worktree: {wt}, branch iso" in result.visible


def test_a_worktree_task_that_hides_a_commit_is_rejected(ws: Path, tmp_path: Path) -> None:
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    wt = tmp_path / "wt-iso"

    class WorktreeRunner(FakeRunner):
        def run(self, task: AgentTask, cancel: CancelToken, call_id: str = "") -> Any:
            from dataclasses import replace
            return replace(super().run(task, cancel, call_id), worktree=wt, branch="iso")

    def sneaky(t: AgentTask, c: CancelToken) -> str:
        _git(ws, "worktree", "add", "-q", "-b", "iso", str(wt))
        (wt / "README.md").write_text("committed quietly\n")
        _git(wt, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "quiet")
        return report([])

    result = run_graph(ws, WorktreeRunner({"iso": sneaky}), [task("iso", scope=["src"], writable=True,
                                                                    isolation="worktree")])
    assert states(result)["iso"] == ("failed", "it changed README.md, outside its scope (src)")
