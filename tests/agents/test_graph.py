"""Work graphs, the pure part: validation (every refusal a sentence, all at once), scope coverage
and overlap, and the scheduler's rules (dependencies, skips, one writer per environment)."""

from __future__ import annotations

import pytest

from cox.agents.graph import GraphError, Outcome, Scheduler, covers, overlaps, parse


def t(ident: str, deps: list[str] | None = None, scope: list[str] | None = None, writable: bool = False,
      **extra: object) -> dict[str, object]:
    return {"id": ident, "prompt": f"do {ident}", "deps": deps or [], "scope": scope or [], "writable": writable,
            **extra}


def refused(tasks: list[dict[str, object]]) -> str:
    with pytest.raises(GraphError) as e:
        parse({"tasks": tasks})
    return str(e.value)


# --- validation --------------------------------------------------------------------------------


def test_a_cycle_is_refused_with_its_path() -> None:
    msg = refused([t("a", ["c"]), t("b", ["a"]), t("c", ["b"]), t("d")])
    assert "cycle" in msg
    assert "a -> c -> b -> a" in msg
    assert "nothing ran" in msg


def test_a_cycle_below_an_acyclic_start_names_only_the_loop() -> None:
    msg = refused([t("top", ["x"]), t("x", ["y"]), t("y", ["x"])])
    assert "x -> y -> x" in msg
    assert "top ->" not in msg


def test_unknown_dep_duplicate_id_self_dep_and_empty_prompt_are_all_reported() -> None:
    msg = refused([t("a", ["ghost"]), t("a"), t("s", ["s"]), {"id": "e", "prompt": "  "}])
    assert "'a' depends on 'ghost', which is not a task" in msg
    assert "task id 'a' is used twice" in msg
    assert "'s' depends on itself" in msg
    assert "'e' has an empty prompt" in msg


@pytest.mark.parametrize("raw, says", [
    (None, "non-empty list"),
    ({"tasks": []}, "non-empty list"),
    ({"tasks": ["x"]}, "must be an object"),
    ({"tasks": [{"prompt": "p"}]}, "needs an 'id'"),
    ({"tasks": [t("a", writable=True)]}, "writable but its scope is empty"),
    ({"tasks": [t("a", writable="yes")]}, "'writable' must be true or false"),
    ({"tasks": [t("a", scope=["/etc/passwd"], writable=True)]}, "is absolute"),
    ({"tasks": [t("a", scope=["src/../../x"], writable=True)]}, "climbs out"),
    ({"tasks": [t("a", scope=["src/*.{ts,js}"], writable=True)]}, "uses braces"),
    ({"tasks": [t("a", scope=["./"], writable=True)]}, "whole workspace"),
    ({"tasks": [t("a", isolation="docker")]}, "'isolation' must be"),
    ({"tasks": [t("a", deps="b")]}, "depends on 'b'"),
    ({"tasks": [t("a", dependencies=["b"])]}, "unknown field 'dependencies'; a task's fields are id, prompt"),
    ({"tasks": [t("../x", isolation="worktree")]}, "names its worktree and branch"),
    ({"tasks": [t("Fix", isolation="worktree"), t("fix", isolation="worktree")]}, "would share one worktree"),
])
def test_bad_input_gets_a_sentence(raw: object, says: str) -> None:
    with pytest.raises(GraphError) as e:
        parse(raw)
    assert says in str(e.value)


def test_overlapping_writable_scopes_are_refused() -> None:
    msg = refused([t("a", scope=["src/"], writable=True), t("b", scope=["src/x/y.py"], writable=True)])
    assert "'a' and 'b' may both change 'src' / 'src/x/y.py'" in msg


def test_overlap_of_a_writable_and_a_read_only_task_is_allowed() -> None:
    tasks = parse([t("w", scope=["src/**"], writable=True), t("r", scope=["src/**"])])
    assert [x.id for x in tasks] == ["w", "r"]


def test_overlap_is_allowed_when_ordered_by_dependencies_or_in_its_own_worktree() -> None:
    parse([t("a", scope=["src"], writable=True), t("b", ["m"], scope=["src"], writable=True), t("m", ["a"])])
    parse([t("a", scope=["src"], writable=True), t("b", scope=["src"], writable=True, isolation="worktree")])
    parse([t("a", scope=["src/a.py"], writable=True), t("b", scope=["src/b.py"], writable=True)])


@pytest.mark.parametrize("a, b, expected", [
    ("src", "src", True),
    ("src", "src/a.py", True),             # a folder covers what is below it
    ("src/a.py", "src/a.py.bak", False),   # no prefix matching inside a name
    ("src/a", "src/ab", False),
    ("src/*", "src/x/y.py", True),          # a glob matching a folder covers below it
    ("src/*.py", "src/x/y.py", False),      # * never crosses /
    ("**/*.py", "src/x/y.py", True),
    ("**", "anything/at/all", True),
    ("src/**/test_*.py", "src/pkg/test_a.py", True),
    ("src/**/test_*.py", "src/pkg/a.py", True),   # a.py may be a folder (see the next test)
    ("*.py", "*.ts", False),                # different tails
    ("*.py", "test_*", True),               # test_x.py matches both
    ("a*", "b*", False),                    # different heads
    ("docs/**", "src/**", False),
    ("src/**/x", "src/y/**", True),          # src/y/x
    ("src/?", "src/ab", False),
    ("src/[ab].py", "src/c.py", False),
    ("src/[ab].py", "src/a.py", True),
    ("a?", "abc*", True),                    # conservative: no name matches both, refused anyway
])
def test_overlap_edge_cases(a: str, b: str, expected: bool) -> None:
    assert overlaps(a, b) is expected
    assert overlaps(b, a) is expected


@pytest.mark.parametrize("a, b, expected", [
    ("src/**/test_*.py", "src/pkg/a.py", False),   # a.py is a file: nothing below it
    ("src/**", "src/pkg/a.py", True),              # ** matches a.py itself
    ("src/pkg/a.py", "src/pkg/a.py", True),
    ("src/pkg/a.py/x", "src/pkg/a.py", False),
    ("src/*/test_*.py", "src/pkg", True),          # pkg is no file: a folder, or to be made one
])
def test_overlap_knows_which_entries_are_files(a: str, b: str, expected: bool) -> None:
    def is_file(path: str) -> bool:
        return path == "src/pkg/a.py"

    assert overlaps(a, b, is_file) is expected
    assert overlaps(b, a, is_file) is expected


def test_parse_uses_what_is_a_file() -> None:
    tasks = [t("impl", scope=["src/pkg/a.py"], writable=True), t("tests", scope=["src/**/test_*.py"], writable=True)]
    assert "overlap" in refused(tasks)
    assert len(parse(tasks, is_file=lambda p: p == "src/pkg/a.py")) == 2


@pytest.mark.parametrize("entry, path, expected", [
    ("src", "src/a/b.py", True),
    ("src", "srcx/a.py", False),
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/a/b.py", False),
    ("src/*", "src/a/b.py", True),
    ("**/*.md", "README.md", True),
    ("**/*.md", "docs/x/y.md", True),
    ("a.py", "b/a.py", False),              # anchored at the workspace, unlike .gitignore
])
def test_covers(entry: str, path: str, expected: bool) -> None:
    assert covers(entry, path) is expected


# --- the scheduler -----------------------------------------------------------------------------


def ids(tasks: list[object]) -> list[str]:
    return [x.id for x in tasks]  # type: ignore[attr-defined]


def test_a_task_starts_only_when_every_dependency_is_done() -> None:
    s = Scheduler(parse([t("a"), t("b"), t("c", ["a", "b"])]))
    assert ids(s.start()) == ["a", "b"]
    s.finish(Outcome("a", "done"))
    assert s.start() == []
    s.finish(Outcome("b", "done"))
    assert ids(s.start()) == ["c"]
    s.finish(Outcome("c", "done"))
    assert s.done and [o.state for o in s.results()] == ["done"] * 3


def test_a_failed_dependency_skips_its_dependents_transitively() -> None:
    s = Scheduler(parse([t("a"), t("b", ["a"]), t("c", ["b"]), t("d")]))
    assert ids(s.start()) == ["a", "d"]
    s.finish(Outcome("a", "failed", "boom"))
    s.finish(Outcome("d", "done"))
    assert s.done
    out = {o.id: o for o in s.results()}
    assert out["b"].state == "skipped" and out["b"].reason == "dependency 'a' failed"
    assert out["c"].state == "skipped" and out["c"].reason == "dependency 'b' was skipped"
    assert out["d"].ok


def test_writable_tasks_of_one_workspace_run_one_at_a_time_and_alone() -> None:
    s = Scheduler(parse([t("w1", scope=["a"], writable=True), t("w2", scope=["b"], writable=True),
                         t("r1"), t("wt", scope=["a"], writable=True, isolation="worktree")]))
    assert ids(s.start()) == ["w1", "wt"]   # r1 waits: a writer holds the workspace; wt is elsewhere
    s.finish(Outcome("w1", "done"))
    assert ids(s.start()) == ["w2"]          # the waiting writer goes first: readers do not starve it
    s.finish(Outcome("w2", "done"))
    assert ids(s.start()) == ["r1"]


def test_read_only_tasks_run_in_parallel_bounded() -> None:
    s = Scheduler(parse([t(f"r{n}") for n in range(10)]), max_parallel=8)
    assert len(s.start()) == 8
    s.finish(Outcome("r0", "done"))
    assert ids(s.start()) == ["r8"]


def test_stop_skips_what_has_not_started() -> None:
    s = Scheduler(parse([t("a"), t("b", ["a"])]))
    s.start()
    s.stop("interrupted")
    assert not s.done
    s.finish(Outcome("a", "failed", "interrupted while it ran"))
    assert s.done and s.results()[1] == Outcome("b", "skipped", "interrupted")
