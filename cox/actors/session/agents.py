"""A session's subagents: child session actors, run for its ``agent`` tools (``AgentRunner``).

A subagent is a full session — its own machine, history, tools (narrowed by its type), grants
and rollout (``sessions/<child id>``, its index row naming the parent) — started linked to the
parent session, so its exit however it happens reaches the parent (``ChildExit`` kind "agent").
What binds it to the parent:

- **Permissions never widen**: the child runs in the parent's current permission mode and
  approval policy; a read-only type (explore) or task gets an engine that denies every call that
  is not read-only, whatever the mode.
- **One budget**: parent and children add every request's cost to one :class:`Purse`, and each
  judges its next request against the tree's spend. Each session's usage rows and totals are its
  own (a child's index row names its parent); a headless result's cost is the tree's.
- **One interrupt**: a foreground child is interrupted from the parent's turn scope (a cancel
  callback, in the canceller's thread: the whole tree is told in one broadcast, and each child's
  scope is then cancelled out of band in one pass on the timer thread); a background child by
  the parent's Interrupt; closing the parent stops every child, and their processes with them.
- **Its approvals reach the person** through the parent's surfaces, labelled with the agent;
  the answer comes back to the parent, which hands it to the child.
- **Only its report reaches the parent's model**: the final text of its turn.

The methods of :class:`AgentHost` are called from tool-call threads (``run`` blocks one); the
child's sink runs on the child's thread; ``exited``/``route_approval`` on the parent's. One lock.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pykka

from cox.agents.runner import AgentReport, AgentTask
from cox.log import get_logger
from cox.protocol import messages as m
from cox.protocol.interfaces import CancelToken
from cox.protocol.types import Risk, StopReason, ToolCall
from cox.supervisors.timer import scheduler

from . import messages as fx
from .holder import ScopeHolder
from .ledger import Lineage

if TYPE_CHECKING:
    from cox.actors.tools.base import BaseTool

    from .actor import SessionActor

log = get_logger("cox.session.agents")

RELAYED = frozenset({"user_message", "assistant_message", "tool_call_requested", "tool_call_done", "turn_done",
                     "error", "usage", "compacted", "rewound"})
"""The child events the parent's surfaces and rollout hear (notices only at warning level); the
child's own rollout has every line, deltas included."""

CHILD_HOOK_POINTS = {"Stop": "SubagentStop"}
SKIPPED_HOOK_POINTS = frozenset({"SessionStart", "SessionEnd", "UserPromptSubmit"})
"""A child's turn is not the person's prompt and its session not theirs: those hooks fire for the
parent only (as Claude Code does); a child's Stop is the parent's SubagentStop."""

CLOSE_AFTER_S = 0.2
"""How long after its report a foreground child's session is stopped."""

STREAM_CLOSE_BOUND_S = 0.5
"""How long the model streams of interrupted children may wait for the crowd's ends at most."""
CROWD_GRACE_S = 0.05
"""How long after the parent relayed the crowd's last end their streams close."""

STOP_WAIT_S = 10.0
"""How long closing the parent waits for each child to stop (they are stopped together)."""


class ReadOnlyEngine:
    """The parent's permission engine, refusing every call that is not read-only first."""

    def __init__(self, inner: Any, kind: str) -> None:
        self.inner = inner
        self.kind = kind
        self.deny = getattr(inner, "deny", ())

    def decide(self, call: ToolCall, mode: Any = None, *args: Any, **kwargs: Any) -> Any:
        if call.risk is not Risk.READ_ONLY:
            from cox.policy.permission import Outcome

            return Outcome("deny", f"{self.kind} agents only read; report what should change instead", step="mode")
        return self.inner.decide(call, mode, *args, **kwargs)

    def grants_for(self, call: ToolCall) -> list[str]:
        return list(self.inner.grants_for(call))

    def read_guard(self) -> Any:
        return self.inner.read_guard() if hasattr(self.inner, "read_guard") else None


class ChildHooks:
    """The parent's hooks as a child runs them (see ``SKIPPED_HOOK_POINTS``)."""

    def __init__(self, inner: Any, agent_id: str, kind: str) -> None:
        self.inner, self.agent_id, self.kind = inner, agent_id, kind

    def run(self, point: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        if point in SKIPPED_HOOK_POINTS:
            return None
        point = CHILD_HOOK_POINTS.get(point, point)
        reply: dict[str, Any] | None = self.inner.run(point, {**payload, "agent_id": self.agent_id,
                                                              "agent_type": self.kind})
        return reply


class Child:
    """One subagent, as its host keeps it."""

    def __init__(self, agent_id: str, task: AgentTask, kind: str, call_id: str) -> None:
        self.agent_id = agent_id
        self.task = task
        self.kind = kind
        self.call_id = call_id
        self.ref: pykka.ActorRef[Any] | None = None
        self.holder = ScopeHolder()
        self.state = "running"  # running | idle | closed | failed
        self.text = ""
        self.cost = 0.0
        self.report: AgentReport | None = None
        self.ended = threading.Event()
        self.note = ""
        self.worktree: Any = None
        self.interrupt_sent = False
        """This turn's Interrupt was sent (a new turn, through ``send``, clears it)."""
        self.wake = threading.Event()
        """The foreground call may take the report (set with ``ended``; a cancelled call's later)."""
        self.call_cancelled = False
        """The parent's call that runs it was cancelled: its report is not awaited any more."""

    def interrupt(self) -> bool:
        """Once per turn (True: this call did it): the parent's scope (its call's cancel) and the
        parent's Interrupt both reach here, and a second pass over hundreds of children is only
        more contention. Only the message: the out-of-band cancel comes behind it
        (``AgentHost._cancel_soon``)."""
        if self.interrupt_sent:
            return False
        self.interrupt_sent = True
        ref = self.ref
        if ref is not None:
            try:
                ref.tell(m.Interrupt())
            except pykka.ActorDeadError:
                pass
        return True


class AgentHost:
    def __init__(self, parent: SessionActor, lineage: Lineage) -> None:
        self.parent = parent
        self.lineage = lineage
        self.lock = threading.Lock()
        self.children: dict[str, Child] = {}
        self.numbers = itertools.count(1)
        self.approvals: dict[str, str] = {}  # a child's call waiting for the person -> its agent
        self.closed = False
        self._definitions: Any = None
        self.due_later: list[tuple[float, Any]] = []  # what ``_later`` runs, by when
        self.later_pending = False
        self.to_cancel: list[Child] = []  # what ``_cancel_due`` cancels out of band
        self.crowd: dict[str, Child] = {}  # the children an interrupt under way told, by id
        self.deferred: list[Callable[[], object]] = []  # what waits for their ends (``defer``)
        self.relayed: set[str] = set()  # the crowd's children whose turn_done the parent relayed

    # ------------------------------------------------------------------ AgentRunner

    def run(self, task: AgentTask, cancel: CancelToken, call_id: str = "") -> AgentReport:
        child = self._start(task, call_id)

        def cancelled() -> None:
            child.call_cancelled = True
            self._interrupt(child)

        unregister = cancel.on_cancel(cancelled)  # the parent's interrupt reaches it at once
        try:
            while not child.wake.wait(1.0):
                ref = child.ref
                if ref is None or not ref.is_alive():  # gone without a word: its exit reports it
                    child.ended.wait(5.0)
                    break
        finally:
            unregister()
        report = child.report or self._failed(child, "the agent stopped without a report")
        self._close_later(child)
        return report

    def _close_later(self, child: Child) -> None:
        """Stop a reported child's session off the report's path: the report goes back now, and
        a crowd of children ending together (an interrupt) does not queue its clean-up in front
        of the reports."""
        self._later(lambda: self._close(child, wait=False))

    def _later(self, fn: Any) -> None:
        """Run ``fn`` ``CLOSE_AFTER_S`` from now, on the timer thread. One timer task for all that
        is due (a task each woke the timer thread for every child, in the middle of the crowd's
        reports)."""
        import time

        with self.lock:
            self.due_later.append((time.monotonic() + CLOSE_AFTER_S, fn))
            if self.later_pending:
                return
            self.later_pending = True
        scheduler.call_later(CLOSE_AFTER_S, self._run_due)

    def _run_due(self) -> None:
        import time

        now = time.monotonic()
        with self.lock:
            due = [fn for when, fn in self.due_later if when <= now]
            self.due_later = [(when, fn) for when, fn in self.due_later if when > now]
            later = self.due_later[0][0] - now if self.due_later else None
            self.later_pending = later is not None
        for fn in due:
            try:
                fn()
            except Exception:  # noqa: BLE001 - one child's clean-up never stops the others'
                log.exception("a subagent's clean-up failed")
        if later is not None:
            scheduler.call_later(max(0.0, later), self._run_due)

    def start(self, task: AgentTask, call_id: str = "") -> str:
        return self._start(task, call_id).agent_id

    def wait(self, ids: list[str], timeout_s: float, cancel: CancelToken) -> dict[str, AgentReport | None]:
        import time

        with self.lock:
            unknown = [i for i in ids if i not in self.children]
            chosen = [self.children[i] for i in ids if i in self.children]
        if unknown:
            raise KeyError(", ".join(unknown))
        woken = threading.Event()
        unregister = cancel.on_cancel(woken.set)
        deadline = time.monotonic() + max(0.0, timeout_s)
        try:
            for child in chosen:
                while not child.ended.is_set() and not woken.is_set():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    child.ended.wait(min(left, 0.25))
        finally:
            unregister()
        return {c.agent_id: c.report if c.ended.is_set() else None for c in chosen}

    def send(self, agent_id: str, text: str) -> str | None:
        with self.lock:
            child = self.children.get(agent_id)
        if child is None or child.ref is None:
            return f"there is no agent {agent_id}"
        if child.state in ("closed", "failed"):
            return f"agent {agent_id} is {child.state}"
        if child.state == "idle":  # a new turn of the same child: its report comes when it ends
            child.ended.clear()
            child.wake.clear()
            child.report = None
            child.state = "running"
            child.interrupt_sent = False
        try:
            child.ref.tell(m.UserTurn(text=text))
        except pykka.ActorDeadError:
            return f"agent {agent_id} has stopped"
        return None

    def close(self, agent_id: str) -> str | None:
        with self.lock:
            child = self.children.get(agent_id)
        if child is None:
            return f"there is no agent {agent_id}"
        self._close(child, wait=True)
        return None

    # ------------------------------------------------------------------ the parent's side

    def exited(self, agent_id: str, why: str) -> None:
        """A child's actor stopped (on the parent's thread): one that had not reported failed."""
        with self.lock:
            child = self.children.get(agent_id)
        if child is None:
            return
        child.ref = None
        self._relayed_end(agent_id)  # a crowd's child that is gone ends no turn: not waited for
        if not child.ended.is_set():
            child.report = self._failed(child, f"the agent stopped before it finished: {why}")
            child.state = "failed"
            child.ended.set()
        elif child.state != "failed":
            child.state = "closed"
        child.wake.set()

    def interrupt_all(self) -> None:
        with self.lock:
            running = [c for c in self.children.values() if c.state == "running"]
        for child in running:
            self._interrupt(child)

    def _interrupt(self, child: Child) -> None:
        with self.lock:  # one of the crowd before it is told: its end may be relayed at once
            if child.interrupt_sent:
                return
            first = not self.crowd
            self.crowd[child.agent_id] = child
        if first:
            scheduler.call_later(STREAM_CLOSE_BOUND_S, self._crowd_ended)
        if child.interrupt():
            self._cancel_soon(child)

    def defer(self, fn: Callable[[], object]) -> None:
        """Close an interrupted child's model stream (``ScopeHolder.for_stream``) once the parent
        has relayed the end of every child of the interrupt under way (and ``CROWD_GRACE_S``), or
        at ``STREAM_CLOSE_BOUND_S``;
        at once when none is under way. Each stream that closes wakes its thread, which then
        ends; hundreds of them woken among the children's ends put their clean-up in front of
        the ends the person waits for. A stream only reads: nothing it does after its turn
        ended reaches anyone (the turn's calls, processes and hooks are stopped at once)."""
        with self.lock:
            if self.crowd:
                self.deferred.append(fn)
                return
        fn()

    def _relayed_end(self, agent_id: str) -> None:
        """A child's turn_done went to the parent's surfaces (on the parent's thread): once every
        child of the crowd's has, their streams close, ``CROWD_GRACE_S`` later (the surfaces
        take the last ends first)."""
        with self.lock:
            if agent_id not in self.crowd:
                return
            self.relayed.add(agent_id)
            if len(self.relayed) < len(self.crowd):
                return
        scheduler.call_later(CROWD_GRACE_S, self._crowd_ended)

    def _crowd_ended(self) -> None:
        with self.lock:
            due, self.deferred, self.crowd, self.relayed = self.deferred, [], {}, set()
        for fn in due:
            try:
                fn()
            except Exception:  # noqa: BLE001 - one stream's close never stops the others'
                log.exception("closing a subagent's stream failed")

    def _cancel_soon(self, child: Child) -> None:
        """The out-of-band half of a child's interrupt: its turn's scope cancelled from outside
        its thread, so a hook that thread runs stops at once — for every child told in this
        broadcast, in one pass on the timer thread, right after. The messages go first and the
        interrupting thread (the parent's, or the person's surface) sends only those: a child
        that is not blocked ends its turn on its Interrupt (cancelling its own scope), and the
        hundreds of stream threads the cancels wake are not woken in the middle of the tells."""
        with self.lock:
            self.to_cancel.append(child)
            if len(self.to_cancel) > 1:
                return
        scheduler.call_later(0.0, self._cancel_due)

    def _cancel_due(self) -> None:
        with self.lock:
            due, self.to_cancel = self.to_cancel, []
        for child in due:
            if child.interrupt_sent and not child.ended.is_set():  # still that turn (a new one clears it)
                child.holder.cancel()

    def close_all(self) -> None:
        """Stop every child together (the parent is closing), each bounded; none starts after."""
        self._crowd_ended()
        with self.lock:
            self.closed = True
            children = list(self.children.values())
        futures = []
        for child in children:
            ref = child.ref
            if ref is not None:
                child.holder.cancel()
                try:
                    futures.append(ref.stop(block=False))
                except pykka.ActorDeadError:
                    pass
        for future in futures:
            try:
                future.get(timeout=STOP_WAIT_S)
            except Exception:  # noqa: BLE001 - a child that would not stop is logged, not fatal
                log.warning("a subagent did not stop in time")

    def relay(self, got: fx.ChildEvent) -> list[tuple[Any, str | None]]:
        """What the parent emits for a child's events (on the parent's thread), each with its
        line when it is known already: its approvals as the parent's own, labelled; the rest
        tagged with the agent (``AgentEvent``), whose line wraps the child's line as it is (the
        child's recorder scrubbed it) instead of encoding its parse again."""
        import json

        from cox.protocol.record import json_any

        out: list[tuple[Any, str | None]] = []
        head = f'{{"type":"agent_event","agent_id":{json_any(got.agent_id)},"call_id":{json_any(got.call_id)},"event":'
        for event, line in got.events:
            if event.type == "approval_required":
                with self.lock:
                    self.approvals[event.call.id] = got.agent_id
                reason = f"[agent {got.agent_id} · {got.kind}] {event.reason}"
                out.append((m.ApprovalRequired(call=event.call, reason=reason), None))
                continue
            if event.type == "tool_call_done":
                with self.lock:
                    self.approvals.pop(event.call_id, None)
            out.append((m.AgentEvent(agent_id=got.agent_id, call_id=got.call_id, event=json.loads(line)),
                        head + line + "}"))
            if event.type == "turn_done" and self.crowd:
                self._relayed_end(got.agent_id)
        return out

    def route(self, approve: m.Approve) -> bool:
        """Hand a person's answer to the child that asked (True), or leave it to the parent."""
        with self.lock:
            agent_id = self.approvals.pop(approve.call_id, None)
            child = self.children.get(agent_id) if agent_id else None
        if child is None or child.ref is None:
            return False
        try:
            child.ref.tell(approve)
        except pykka.ActorDeadError:
            return False
        return True

    # ------------------------------------------------------------------ starting one

    def definitions(self) -> dict[str, Any]:
        if self._definitions is None:
            from cox.agents.defs import load_agents

            s = self.parent.s
            agents = load_agents(s.cwd, s.home, cox_home=s.cox_home, parent_model=self.parent.machine.main_model(),
                                 models=s.model_overrides)
            self._definitions = agents.defs
        return dict(self._definitions)

    def _start(self, task: AgentTask, call_id: str) -> Child:
        from cox.actors.provider.catalog import describe
        from cox.agents.defs import SPAWNING_TOOLS, child_tools

        from .actor import SessionActor

        p = self.parent
        defs = self.definitions()
        by_lower = {name.lower(): d for name, d in defs.items()}  # Claude Code's prompts say "Explore"
        defn = defs.get(task.subagent_type) or by_lower.get(task.subagent_type.lower())
        if defn is None:
            raise AgentError(f"there is no subagent type {task.subagent_type!r}; the types are: "
                             f"{', '.join(sorted(defs))}")
        if self.lineage.depth + 1 > p.s.max_agent_depth:
            raise AgentError(f"subagents may nest {p.s.max_agent_depth} deep (agents.max_depth); this one may not "
                             "start another")
        agent_id = f"{p.s.session_id}-a{next(self.numbers)}"
        child = Child(agent_id, task, defn.name, call_id)
        child.holder.defer = self.defer
        model, note = self._model(task.model or defn.model, describe)
        child.note = note
        cwd, roots = p.s.cwd, list(p.s.roots)
        if task.isolation == "worktree":
            child.worktree = self._worktree(task, agent_id)
            cwd, roots = child.worktree.path, [child.worktree.path, child.worktree.repo]  # the checkout read-only
        machine = p.machine
        mode = machine.mode  # never wider than the parent's, as it is now
        settings = replace(p.s, session_id=agent_id, cwd=cwd, roots=roots, model=model, permission_mode=mode,
                           preset="editor", agent_prompt=defn.prompt, checkpoints=p.s.checkpoints,
                           system_prompt="", append_system_prompt="")  # the person's words are for the main agent
        read_only = defn.read_only or task.read_only
        shape = replace(defn, read_only=True) if read_only else defn
        tools: dict[str, BaseTool] = {n: p.tools[n] for n in child_tools(shape, list(p.tools))}
        if self.lineage.depth + 1 < p.s.max_agent_depth:  # it may start agents of its own
            tools.update({n: t for n, t in p.tools.items() if n in SPAWNING_TOOLS})
        engine = ReadOnlyEngine(p.engine, defn.name) if read_only else p.engine
        hooks = ChildHooks(p.hooks, agent_id, defn.name) if p.hooks is not None else None
        lineage = Lineage(self.lineage.depth + 1, self.lineage.purse, p.s.session_id, agent_id)
        with self.lock:
            if self.closed:
                raise AgentError("the session is closing; no agent starts now")
            self.children[agent_id] = child
        me = p.actor_ref
        child.ref = p.spawn_child(("agent", -1, agent_id), lambda: SessionActor.start(
            settings, p.provider, tools, engine, p.store, [self._sink(child, me)], child.holder, None, hooks,
            None, lineage))
        with self.lock:
            closed = self.closed  # the parent began closing while this child started: it stops too
        if closed:
            self._close(child, wait=False)
            raise AgentError("the session is closing; no agent starts now")
        child.ref.tell(m.UserTurn(text=task.prompt))
        return child

    def _model(self, wanted: str | None, describe: Any) -> tuple[str, str]:
        """The child's model: its type's tier or model where this provider serves it, else the
        parent's main model (and a note saying so)."""
        p = self.parent
        main = p.machine.main_model()
        tiers = {"cheap": p.s.cheap_model or main, "main": p.s.model, "code": p.s.model,
                 "think": p.s.think_model or main}
        if not wanted or wanted == "inherit":
            return main, ""
        model = tiers.get(wanted, wanted)
        serves = str(getattr(p.provider, "name", "") or "")
        family = describe(model, p.s.model_overrides).provider
        if serves in ("anthropic", "openai") and (family == "anthropic") != (serves == "anthropic"):
            return main, f"(model {model} is not served by this session's provider; the agent ran on {main})"
        return model, ""

    def _worktree(self, task: AgentTask, agent_id: str) -> Any:
        from cox.worktrees import WorktreeError, open_worktree, owner

        try:
            return open_worktree(self.parent.s.roots[0], (task.name or agent_id).lower(), owner())
        except WorktreeError as exc:
            raise AgentError(f"could not make a worktree for the agent: {exc}") from None

    def _sink(self, child: Child, parent: pykka.ActorRef[Any]) -> Relay:
        return Relay(self, child, parent)

    def _report(self, child: Child, done: m.TurnDone) -> AgentReport:
        wt = child.worktree
        text = child.text
        ok = done.stop in (StopReason.END_TURN, StopReason.MAX_TOKENS)
        if not ok:
            why = done.reason or done.stop.value
            text = f"the {child.kind} agent stopped ({done.stop.value}): {why}" + (f"\n\nits last words: {text}"
                                                                                  if text else "")
        if child.note:
            text = f"{text}\n{child.note}"
        if wt is not None:
            text = f"{text}\n\n[worktree {wt.path}, branch {wt.branch}]"
        return AgentReport(agent_id=child.agent_id, text=text or "(the agent said nothing)", stop=done.stop.value,
                           ok=ok, worktree=wt.path if wt is not None else None,
                           branch=wt.branch if wt is not None else None, cost_usd=child.cost)

    def _failed(self, child: Child, why: str) -> AgentReport:
        return AgentReport(agent_id=child.agent_id, text=f"the {child.kind} agent failed: {why}",
                           stop=StopReason.ERROR.value, ok=False, cost_usd=child.cost)

    def _close(self, child: Child, wait: bool) -> None:
        if self.crowd:  # its session stops: no stream of the crowd's waits any more
            self._crowd_ended()
        ref = child.ref
        if child.state not in ("failed",):
            child.state = "closed"
        if not child.ended.is_set():
            child.report = self._failed(child, "it was closed")
            child.ended.set()
        child.wake.set()
        if ref is None:
            return
        child.holder.cancel()
        try:
            future = ref.stop(block=False)
            if wait:
                future.get(timeout=STOP_WAIT_S)
        except pykka.ActorDeadError:
            pass
        except Exception:  # noqa: BLE001 - a child that will not stop is logged; the parent goes on
            log.warning("a subagent did not stop in time", agent=child.agent_id)


class Relay:
    """The child's surface, on the child's thread: keep what its report needs, relay to the parent.

    The events one message of the child emits reach the parent as one ``ChildEvent`` (its
    recorder calls :meth:`flush` when the message is handled): an interrupt's ending of
    hundreds of children is a message each to the parent, not one per event. A turn's report
    is handed over after its events have gone to the parent, as before."""

    def __init__(self, host: AgentHost, child: Child, parent: pykka.ActorRef[Any]) -> None:
        self.host, self.child, self.parent = host, child, parent
        self.held: list[tuple[Any, str]] = []

    def __call__(self, event: Any, line: str) -> None:
        child, kind = self.child, event.type
        if kind == "assistant_message":
            text = "".join(b.get("text", "") for b in event.content if b.get("type") == "text").strip()
            if text:
                child.text = text
        elif kind == "usage":
            child.cost += event.usage.cost_usd
        if kind in RELAYED or kind == "approval_required" or (
                kind == "notice" and event.level in ("warning", "error", "security")):
            self.held.append((event, line))
        if kind == "turn_done":
            self.flush()  # a turn's end (one per turn) goes at once, and its report after it
            child.report = self.host._report(child, event)
            child.state = "idle" if child.state == "running" else child.state
            child.ended.set()
            if child.call_cancelled:
                # The parent's turn was interrupted and has its aborted result already: the call's
                # thread takes the report after the crowd of reports, not in the middle of it.
                self.host._later(child.wake.set)
            else:
                child.wake.set()

    def flush(self) -> None:
        held, self.held = self.held, []
        if held:
            child = self.child
            try:
                self.parent.tell(fx.ChildEvent(child.agent_id, child.kind, child.call_id, tuple(held)))
            except pykka.ActorDeadError:
                pass


class AgentError(Exception):
    """A subagent that cannot start: the sentence is the agent tool's error result."""
