"""Work graphs: agent tasks with dependencies, checked whole before any of them runs, and the
scheduler that decides which may start now. Pure: no threads, no files, no agents.

A graph is ``{tasks: [{id, prompt, deps, scope, writable, isolation?}]}``. :func:`parse` refuses,
with one sentence per problem and all problems at once, a graph a run could only fail on or
would run wrongly: a task without an id or prompt, an unknown field (a misspelt ``deps`` would
otherwise run the task too early), a duplicate id, an unknown dependency, a cycle (a topological
sort; the cycle is named ``a -> b -> a``), a scope entry that is absolute, climbs out with ``..``
or uses braces, a writable task with nothing in its scope, a worktree task whose id cannot name a
worktree and branch (or names the same one as another's, case aside), and two writable tasks of
one environment whose scopes overlap while neither depends on the other (their order would be
arbitrary and one could undo the other; ordered by a dependency they are a pipeline, which is
fine). A read-only task's scope is not checked: it may change nothing.

Scopes. An entry is a path or a glob relative to the workspace (``src/a.py``, ``src/``,
``tests/**/*.py``), read in git's wildmatch dialect (:mod:`cox.policy.wildmatch`: ``*``/``?``
never cross ``/``, ``**`` as a whole segment spans folders, braces are refused rather than read
literally). An entry **covers** a path when it matches the path or one of its folders: ``src``
covers ``src/a/b.py``, ``src/*`` covers ``src/a/b.py`` too, ``a.py`` does not cover ``b/a.py``
(anchored at the workspace, unlike a .gitignore line). Two entries **overlap** when some path is
covered by both; :func:`overlaps` decides it segment by segment: a ``**`` eats any number of
segments, and one entry running out first means everything below what it matched is covered,
so they overlap, unless that entry is a literal path naming a file that exists now (a file has
nothing below it: ``src/a.py`` and ``src/**/test_*.py`` are disjoint when ``src/a.py`` is a file,
and overlap while it could be a folder). Two single segments with wildcards on both sides
(``*.py`` against ``test_*``) are compared by their literal head and tail: different heads or
tails mean disjoint, anything else counts as overlapping. That test never calls overlapping
entries disjoint; it may refuse a pair no file matches both of (``a?`` against ``abc*``; a
``[...]`` class meeting another wildcard counts as overlapping), and the refusal names the two
entries so they can be narrowed.

Environments. A task with ``isolation: "worktree"`` gets a worktree of its own and is its own
environment; every other task runs in the parent's workspace (environment ``"workspace"``). The
:class:`Scheduler` lets a writable task start only when nothing else runs in its environment, and
a read-only task only when no writable task runs (or waits, first in line) there: read-only
tasks share an environment with each other, never with a writer. That exclusion is what makes
the evidence gate's before/after snapshot exact (see :mod:`cox.agents.evidence`). At most
``max_parallel`` tasks run at once (8 by default: each is a child session with its own model
stream, and eight keep a provider's rate limit and the person's screen readable).

A task starts when every dependency is done; when a dependency fails or is skipped, the task is
skipped with the reason, and so on down the graph. Each step is O(degree), so scheduling a graph
costs microseconds per task (``bench/agents_graph.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from cox.policy.wildmatch import translate
from cox.slim import dataclass

WORKSPACE = "workspace"
FIELDS = ("id", "prompt", "deps", "scope", "writable", "isolation")
_WORKTREE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
ISOLATIONS = (None, "worktree")
MAX_PARALLEL = 8
MAX_TASKS = 200
_WILD = re.compile(r"[*?\[\\]")


class GraphError(ValueError):
    """The graph cannot run; the message has one sentence per problem, for the model."""


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    prompt: str
    deps: tuple[str, ...] = ()
    scope: tuple[str, ...] = ()
    writable: bool = False
    isolation: str | None = None

    @property
    def env(self) -> str:
        """The environment the task changes: its own worktree, or the shared workspace."""
        return f"worktree:{self.id.lower()}" if self.isolation == "worktree" else WORKSPACE


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a task ended: ``done``, ``failed`` (with the reason) or ``skipped`` (with the reason)."""

    id: str
    state: str
    reason: str = ""
    evidence: str = ""
    changed: tuple[str, ...] = ()
    agent_id: str = ""
    worktree: str = ""
    """``<path>, branch <name>`` for a task run in a worktree of its own."""

    @property
    def ok(self) -> bool:
        return self.state == "done"


# --- parsing and validation --------------------------------------------------------------------


def parse(raw: Any, is_file: Callable[[str], bool] | None = None) -> list[Task]:
    """The graph's tasks in the order given, or :class:`GraphError` listing every problem.
    ``is_file`` tells scope checks which literal entries are files now (see :func:`overlaps`)."""
    if isinstance(raw, dict):
        raw = raw.get("tasks")
    if not isinstance(raw, list) or not raw:
        raise GraphError("'tasks' must be a non-empty list of {id, prompt, deps, scope, writable} objects.")
    if len(raw) > MAX_TASKS:
        raise GraphError(f"a work graph holds at most {MAX_TASKS} tasks, not {len(raw)}; split it into smaller graphs.")
    errors: list[str] = []
    tasks: list[Task] = []
    for n, item in enumerate(raw, start=1):
        task = _task(n, item, errors)
        if task is not None:
            tasks.append(task)
    seen: set[str] = set()
    worktrees: dict[str, str] = {}
    for t in tasks:
        if t.id in seen:
            errors.append(f"task id {t.id!r} is used twice; give every task its own id.")
        seen.add(t.id)
        if t.isolation == "worktree":
            other = worktrees.setdefault(t.env, t.id)
            if other != t.id:
                errors.append(f"tasks {other!r} and {t.id!r} would share one worktree (branch names are "
                              "lower-case); give them ids that differ in more than case.")
    for t in tasks:
        for d in t.deps:
            if d == t.id:
                errors.append(f"task {t.id!r} depends on itself.")
            elif d not in seen:
                errors.append(f"task {t.id!r} depends on {d!r}, which is not a task of this graph.")
    if not errors:
        cycle = find_cycle(tasks)
        if cycle:
            errors.append("the dependencies form a cycle: " + " -> ".join(cycle) + "; remove one of these dependencies.")
    if not errors:
        errors += scope_conflicts(tasks, is_file)
    if errors:
        raise GraphError("the work graph was refused, nothing ran:\n- " + "\n- ".join(errors))
    return tasks


def _task(n: int, item: Any, errors: list[str]) -> Task | None:
    if not isinstance(item, dict):
        errors.append(f"task {n} must be an object with id, prompt, deps, scope and writable.")
        return None
    ident = item.get("id")
    if not isinstance(ident, str) or not ident.strip():
        errors.append(f"task {n} needs an 'id' (a non-empty string).")
        return None
    ident = ident.strip()
    name = f"task {ident!r}"
    unknown = [k for k in item if k not in FIELDS]
    if unknown:
        errors.append(f"{name} has unknown field{'s' if len(unknown) > 1 else ''} "
                      f"{', '.join(repr(k) for k in unknown)}; a task's fields are {', '.join(FIELDS)}.")
    prompt = item.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        errors.append(f"{name} has an empty prompt; say what the agent should do.")
        prompt = ""
    deps = _strings(item.get("deps", []), f"{name}: 'deps'", errors)
    scope = tuple(dict.fromkeys(_scope_entry(s, name, errors) for s in _strings(item.get("scope", []), f"{name}: 'scope'", errors)))
    scope = tuple(s for s in scope if s)
    writable = item.get("writable", False)
    if not isinstance(writable, bool):
        errors.append(f"{name}: 'writable' must be true or false.")
        writable = False
    isolation = item.get("isolation")
    if isolation not in ISOLATIONS:
        errors.append(f"{name}: 'isolation' must be \"worktree\" or absent, not {isolation!r}.")
        isolation = None
    if isolation == "worktree" and not _WORKTREE_ID.match(ident):
        errors.append(f"{name} names its worktree and branch: use letters, digits, '.', '_' and '-' only "
                      "(at most 64, starting with a letter or digit).")
    if writable and not scope:
        errors.append(f"{name} is writable but its scope is empty; list the paths or globs it may change.")
    return Task(ident, prompt.strip(), tuple(dict.fromkeys(deps)), scope, writable, isolation)


def _strings(value: Any, what: str, errors: list[str]) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(f"{what} must be a list of strings.")
        return []
    return [v.strip() for v in value if v.strip()]


def _scope_entry(entry: str, name: str, errors: list[str]) -> str:
    """The entry normalised (``./`` and trailing ``/`` dropped, ``//`` folded), or "" with an error."""
    text = entry
    if text.startswith(("/", "~")):
        errors.append(f"{name}: scope entry {entry!r} is absolute; scopes are relative to the workspace.")
        return ""
    if "{" in text or "}" in text:
        errors.append(f"{name}: scope entry {entry!r} uses braces; list each alternative as its own entry.")
        return ""
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        errors.append(f"{name}: scope entry {entry!r} climbs out with '..'; scopes stay inside the workspace.")
        return ""
    if not parts:
        errors.append(f"{name}: scope entry {entry!r} names the whole workspace; use '**' if that is meant.")
        return ""
    return "/".join(parts)


def find_cycle(tasks: list[Task]) -> list[str]:
    """A cycle of the dependency graph as ``[a, b, ..., a]`` (a depends on b ...), or ``[]``.
    Kahn's topological sort finds whether one exists; a walk over what it left names one."""
    left = {t.id: set(t.deps) for t in tasks}
    dependents: dict[str, list[str]] = {t.id: [] for t in tasks}
    for t in tasks:
        for d in t.deps:
            dependents.setdefault(d, []).append(t.id)
    ready = [i for i, ds in left.items() if not ds]
    while ready:
        done = ready.pop()
        for child in dependents.get(done, ()):
            deps = left[child]
            deps.discard(done)
            if not deps:
                ready.append(child)
        del left[done]
    if not left:
        return []
    order = [t.id for t in tasks if t.id in left]
    path: list[str] = [order[0]]
    index = {order[0]: 0}
    while True:  # every task left has a dependency left, so the walk must close a loop
        nxt = next(d for d in _deps_of(tasks, path[-1]) if d in left)
        if nxt in index:
            return path[index[nxt]:] + [nxt]
        index[nxt] = len(path)
        path.append(nxt)


def _deps_of(tasks: list[Task], ident: str) -> tuple[str, ...]:
    return next(t.deps for t in tasks if t.id == ident)


def ancestors(tasks: list[Task]) -> dict[str, frozenset[str]]:
    """Every task's transitive dependencies (the graph has no cycle)."""
    by_id = {t.id: t for t in tasks}
    out: dict[str, frozenset[str]] = {}

    def visit(ident: str) -> frozenset[str]:
        if ident not in out:
            acc: set[str] = set()
            for d in by_id[ident].deps:
                acc.add(d)
                acc |= visit(d)
            out[ident] = frozenset(acc)
        return out[ident]

    for t in tasks:
        visit(t.id)
    return out


def scope_conflicts(tasks: list[Task], is_file: Callable[[str], bool] | None = None) -> list[str]:
    """Writable tasks of one environment, unordered by dependencies, whose scopes overlap."""
    writers = [t for t in tasks if t.writable]
    if len(writers) < 2:
        return []
    before = ancestors(tasks)
    errors: list[str] = []
    for i, a in enumerate(writers):
        for b in writers[i + 1:]:
            if a.env != b.env or a.id in before[b.id] or b.id in before[a.id]:
                continue
            pair = next(((x, y) for x in a.scope for y in b.scope if overlaps(x, y, is_file)), None)
            if pair is not None:
                errors.append(f"writable tasks {a.id!r} and {b.id!r} may both change {pair[0]!r} / {pair[1]!r} "
                              "(their scopes overlap); make one depend on the other, narrow the scopes, "
                              "or give one isolation \"worktree\".")
    return errors


# --- scopes ------------------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _cover_rx(entry: str) -> re.Pattern[str]:
    return re.compile(translate(entry, "gitignore") + r"(?:/.*)?\Z", re.DOTALL)


def covers(entry: str, path: str) -> bool:
    """Whether the scope entry covers the workspace-relative ``path`` (it or one of its folders)."""
    return _cover_rx(entry).match(path) is not None


def in_scope(scope: Iterable[str], path: str) -> bool:
    return any(covers(e, path) for e in scope)


@lru_cache(maxsize=1024)
def _seg_rx(seg: str) -> re.Pattern[str]:
    return re.compile(translate(seg, "gitignore") + r"\Z", re.DOTALL)


def _seg_meet(a: str, b: str) -> bool:
    """Whether one file name can match both segments (never False when one can)."""
    wa, wb = _WILD.search(a) is not None, _WILD.search(b) is not None
    if not wa and not wb:
        return a == b
    if not wb:
        return _seg_rx(a).match(b) is not None
    if not wa:
        return _seg_rx(b).match(a) is not None
    if "[" in a + b or "\\" in a + b:
        return True
    ha, hb = re.split(r"[*?]", a)[0], re.split(r"[*?]", b)[0]
    ta, tb = re.split(r"[*?]", a)[-1], re.split(r"[*?]", b)[-1]
    return (ha.startswith(hb) or hb.startswith(ha)) and (ta.endswith(tb) or tb.endswith(ta))


def overlaps(a: str, b: str, is_file: Callable[[str], bool] | None = None) -> bool:
    """Whether some path is covered by both scope entries (see the module docstring).
    ``is_file``: whether a workspace path is a regular file now; a literal entry naming one has
    nothing below it, so only an entry that can match that very path overlaps it. Without it,
    any entry may be a folder."""
    sa, sb = a.split("/"), b.split("/")
    stack, seen = [(0, 0)], set()
    while stack:
        i, j = stack.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(sa) or j == len(sb):
            # one entry matched a path; the other's rest reaches it or (if it is a folder) below it
            whole, rest = (a, sb[j:]) if i == len(sa) else (b, sa[i:])
            if all(r == "**" for r in rest) or is_file is None or _WILD.search(whole) or not is_file(whole):
                return True
            continue
        if sa[i] == "**":
            stack += [(i + 1, j), (i, j + 1)]
        if sb[j] == "**":
            stack += [(i, j + 1), (i + 1, j)]
        if sa[i] != "**" and sb[j] != "**" and _seg_meet(sa[i], sb[j]):
            stack.append((i + 1, j + 1))
    return False


# --- the scheduler -----------------------------------------------------------------------------


class Scheduler:
    """Which tasks may start now, given what ended. Not thread-safe: one driver calls it.

    ``start()`` returns the tasks to launch (and marks them running); ``finish(outcome)`` records
    a running task's end and skips what depended on a failure; ``stop(reason)`` skips everything
    not yet started (an interrupt). ``done`` once nothing runs and nothing can start.
    """

    def __init__(self, tasks: list[Task], max_parallel: int = MAX_PARALLEL) -> None:
        self.tasks = tasks
        self.max_parallel = max(1, max_parallel)
        self.outcomes: dict[str, Outcome] = {}
        self.running: dict[str, Task] = {}
        self._waiting = {t.id: len(t.deps) for t in tasks}
        self._dependents: dict[str, list[Task]] = {t.id: [] for t in tasks}
        for t in tasks:
            for d in t.deps:
                self._dependents[d].append(t)
        self._ready: list[Task] = [t for t in tasks if not t.deps]
        self._order = {t.id: n for n, t in enumerate(tasks)}
        self._writer: dict[str, str] = {}  # env -> the writable task running there
        self._readers: dict[str, int] = {}  # env -> read-only tasks running there

    @property
    def done(self) -> bool:
        return len(self.outcomes) == len(self.tasks)

    def start(self) -> list[Task]:
        launch: list[Task] = []
        blocked: set[str] = set()  # environments a ready writer waits for: no new reader there
        keep: list[Task] = []
        for t in self._ready:
            if len(self.running) >= self.max_parallel:
                keep.append(t)
                continue
            env = t.env
            if t.writable:
                if env not in self._writer and not self._readers.get(env) and env not in blocked:
                    self._writer[env] = t.id
                    self.running[t.id] = t
                    launch.append(t)
                else:
                    blocked.add(env)
                    keep.append(t)
            elif env not in self._writer and env not in blocked:
                self._readers[env] = self._readers.get(env, 0) + 1
                self.running[t.id] = t
                launch.append(t)
            else:
                keep.append(t)
        self._ready = keep
        return launch

    def finish(self, outcome: Outcome) -> None:
        task = self.running.pop(outcome.id)
        env = task.env
        if task.writable:
            del self._writer[env]
        else:
            self._readers[env] -= 1
        self.outcomes[outcome.id] = outcome
        if outcome.ok:
            for child in self._dependents[outcome.id]:
                self._waiting[child.id] -= 1
                if self._waiting[child.id] == 0 and child.id not in self.outcomes:
                    self._insert_ready(child)
        else:
            self._skip_below(outcome.id, outcome.state)

    def _insert_ready(self, task: Task) -> None:
        n = self._order[task.id]
        at = next((k for k, r in enumerate(self._ready) if self._order[r.id] > n), len(self._ready))
        self._ready.insert(at, task)

    def _skip_below(self, ident: str, state: str) -> None:
        todo = [(ident, state)]
        while todo:
            cause, how = todo.pop()
            for child in self._dependents[cause]:
                if child.id in self.outcomes or child.id in self.running:
                    continue
                why = f"dependency {cause!r} {'failed' if how == 'failed' else 'was skipped'}"
                self.outcomes[child.id] = Outcome(child.id, "skipped", why)
                todo.append((child.id, "skipped"))

    def stop(self, reason: str) -> None:
        """Skip every task that has not started (running ones still report through ``finish``)."""
        self._ready = []
        for t in self.tasks:
            if t.id not in self.outcomes and t.id not in self.running:
                self.outcomes[t.id] = Outcome(t.id, "skipped", reason)

    def results(self) -> list[Outcome]:
        """Every task's outcome, in task order."""
        return [self.outcomes[t.id] for t in self.tasks]
