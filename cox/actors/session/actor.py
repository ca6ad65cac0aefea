"""The session actor: the interpreter of its :class:`~cox.actors.session.machine.TurnMachine`.

Outside callers send ``Submission``s and receive ``Event``s. The turn loop itself is the
machine (``machine.py``: ``on(message) -> effects``, pure); this actor feeds it every submission
and every report of the turn's children, and carries out the effects in order: it spawns the
stream and tool-call actors (linked, so their exits come back as ``ChildExit``), runs hooks,
writes markers, and emits events through the recorder (rollout first, then the surfaces).
Its collaborators each hold one concern: ``recorder.py`` (how an event leaves), the
elicitation broker (``actors/mcp/elicitation.py``), ``checkpointing.py`` (markers, restore),
``watchdog.py`` (children that vanished) and the reaper (processes a turn left).

Nothing here blocks on I/O except the turn-end fsync and a bounded wait for the markers: an
Approve, a steering message or an Interrupt is handled while the turn runs. Interrupt cancels
the turn's scope once (out of band, from the caller's thread, through ``ScopeHolder``) and then
arrives here as a message that finishes the turn.

Invariants (DESIGN.md §5, each has a test): one TurnStarted and one TurnDone per turn and
nothing after TurnDone; one ToolCallDone per ToolCallRequested; results return in emission order;
history normalised before each request; every event reaches the rollout before the surface sees
the next turn; system[0..2] byte-stable.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pykka

from cox.actors.provider.stream import ProviderStreamActor
from cox.actors.store import messages as sm
from cox.actors.tools.base import BaseTool, ToolEnv
from cox.log import get_logger
from cox.protocol import messages as m
from cox.protocol.interfaces import Hook, Provider
from cox.protocol.types import Risk, SandboxMode, ToolCall
from cox.supervisors import CancelScope, CoxActor
from cox.supervisors.actor import Exit, spawn_linked

from . import messages as fx
from .checkpointing import Said
from .holder import LazyAgents
from .holder import ScopeHolder as ScopeHolder
from .ledger import Lineage, Purse
from .machine import TurnMachine
from .ports import MachinePorts
from .recorder import Recorder, Synced
from .recorder import Sink as Sink
from .services import SessionServices
from .settings import SessionSettings as SessionSettings
from .turn_runtime import TurnRuntime

if TYPE_CHECKING:
    from .agents import AgentHost
    from .resume import Rebuilt

log = get_logger("cox.session")

class SessionActor(CoxActor):
    def __init__(self, settings: SessionSettings, provider: Provider, tools: dict[str, BaseTool], engine: Any,
                 store: Callable[[], pykka.ActorRef[Any] | None], sinks: list[Sink], holder: ScopeHolder,
                 resumed: Rebuilt | None = None, hooks: Hook | None = None,
                 deferred: dict[str, BaseTool] | None = None, lineage: Lineage | None = None) -> None:
        super().__init__()
        from cox.actors.tools.registry import specs

        from .checkpointing import SessionCheckpoints
        from .dedup import ReadCache
        from .request import Assembler

        self.s = settings
        self.provider = provider
        self.tools = tools
        self.engine = engine
        self.store = store
        self.holder = holder
        self.hooks = hooks
        self.sandbox_warned = False
        self.checkpoints = SessionCheckpoints(settings.session_id, settings.roots[0], settings.cox_home,
                                              settings.checkpoints, store)
        # A subagent's turn ends are not fsynced one by one (hundreds at once would queue in the
        # store): its report is in the parent's record, which is. Turn ends answer with Synced.
        self.recorder = Recorder(settings.session_id, store, sinks, lambda: self.machine.last_turn,
                                 lineage is None or lineage.depth == 0, lambda: self.actor_ref.tell(Synced()))
        self.lineage = lineage or Lineage(0, Purse())
        self.lazy_agents = LazyAgents(self._make_agents)  # made when a tool first starts an agent
        self.turns: dict[int, TurnRuntime] = {}
        self.children: dict[tuple[str, int, Any], pykka.ActorRef[Any]] = {}
        self.deferred = deferred = dict(deferred or {})
        self.services = SessionServices(self, deferred)  # each made on its first need (services.py)
        if resumed is not None:  # the deferred tools it had loaded are loaded again, as before the resume
            from cox.actors.tools.deferral import used_in

            self.tools.update((name, deferred[name]) for name in used_in(resumed.history, deferred))
        guard = engine.read_guard() if hasattr(engine, "read_guard") else None
        assembler = Assembler.for_session(settings, specs(tools), guard)
        reads = ReadCache.for_session(settings.dedup_window_turns, settings.microcompact_after_turns)
        self.machine = TurnMachine(settings, tools, deferred, MachinePorts(self), assembler, reads, resumed,
                                   has_hooks=hooks is not None, purse=self.lineage.purse)

    # ------------------------------------------------------------------ life cycle

    def on_start(self) -> None:
        store = self.store()
        others: Any = []
        if store is not None:
            try:  # a failure is told back as StorageFailed and raised again at the turn's end
                meta = {"id": self.s.session_id, "cwd": str(self.s.cwd), "model": self.machine.main_model(),
                        "parent_id": self.lineage.parent_id or None}
                others = store.ask(sm.Open(meta, self.actor_ref), timeout=10)
            except Exception as exc:
                if type(exc).__name__ != "StorageError":
                    raise
                log.error("store open failed", error=str(exc))
            if self.s.monthly_budget_usd is not None:
                from .ledger import period_start

                spent: Any = store.ask(sm.SpentSince(period_start("month")), timeout=10)
                self.machine.ledger.month_spent = float(spent)
        # A subagent works beside its parent and siblings by design: no "other sessions" notice.
        alone = isinstance(others, list) and not self.lineage.parent_id
        self._apply(self.machine.opened(others if alone else []))
        self.recorder.flush()

    def _release(self) -> None:
        """End and remove what the session started: its children, hook sandbox (a child's hooks
        are its parent's), checkpoint writer, rename approvals, language servers, background jobs and temp folder."""
        self.lazy_agents.close_all()
        getattr(self.hooks, "close", lambda: None)()
        self.checkpoints.close()
        if stopped := self.services.release():
            log.info("stopped background jobs", session=self.s.session_id, count=stopped)

    def on_stop(self) -> None:
        self._apply(self.machine.closing_down())
        self._release()
        self.recorder.close()
        self.holder.finished.set()

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        # The rollout is intact up to the last event; tell the surfaces so they do not hang.
        turn = self.machine.active.turn if self.machine.active is not None else None
        for _ in range(3):  # a failure inside the failure handling (an injected kill) gets another go
            try:
                self._apply(self.machine.crashed())
                self.recorder.close_open(f"session crashed: {exception_value}", turn)
                break
            except BaseException:  # noqa: BLE001 - whatever happens, the surfaces must hear the end
                log.exception("session failure handling failed")
        self.holder.finished.set()
        try:  # on_stop does not run after a failure: what it would end and remove, end and remove here
            self._release()
        except Exception:
            log.exception("session cleanup after a failure failed")
        super().on_failure(exception_type, exception_value, traceback)

    def on_receive(self, message: Any) -> Any:
        try:
            return self._receive(message)
        finally:  # the message's rollout lines go out as one batch (held while others wait)
            self.recorder.flush(more=not self.actor_inbox.empty())

    def _receive(self, message: Any) -> Any:
        match message:
            case fx.ChildExit():
                self.children.pop((message.kind, message.gen, message.ident), None)
                if message.kind == "agent" and self.lazy_agents.made is not None:
                    self.lazy_agents.made.exited(message.ident, message.why)
                self._apply(self.machine.on(message))
            case fx.ChildEvent():
                for event, line in self.lazy_agents.host().relay(message):
                    self.recorder.emit(event, line)
            case m.Approve() if self.lazy_agents.made is not None and self.lazy_agents.made.route(message):
                pass  # a subagent's call: the child has the answer
            case m.Approve() if self.services.route(message):
                pass  # the files a running rename_symbol writes (lsp/approvals.py)
            case fx.AskWrites():
                self.recorder.emit(m.ApprovalRequired(call=message.call, reason=message.reason))
            case m.Interrupt():
                if self.lazy_agents.made is not None:
                    self.lazy_agents.made.interrupt_all()  # every child, in the same broadcast as the turn
                self._apply(self.machine.on(message))
            case m.CloseAgent():  # Claude Code's stop_task: as agent_close; None, or why not
                return self.lazy_agents.close(message.agent_id)
            case fx.WatchdogTick():
                self._watchdog(message.gen)
            case Synced():  # a turn end's answer: what it held back is shown (a failure kept, handled now)
                for again in self.recorder.settle():
                    self._receive(again)
            case fx.StorageFailed():
                if self.recorder.fresh_failure(message.episode, message):  # else the turn end reported it
                    self.recorder.emit(m.ErrorEvent(message=message.sentence))
                    self._apply(self.machine.on(message))
            case fx.Elicit():
                self.services.broker().elicit(message.request, message.reply, self.machine.accepting_questions())
            case fx.QuestionGone():
                self.services.broker().gone(message.did)
            case fx.UrlNotOpened():
                self.services.broker().url_not_opened(message.source, message.url, message.why)
            case m.Answer():
                self.services.broker().answer(message)
            case fx.Reap():
                from cox.actors.tools.bash import reap, reap_strays

                reap(message.processes)
                reap_strays()
            case _:
                self._apply(self.machine.on(message))
        return None

    # ------------------------------------------------------------------ the effects

    def _apply(self, effects: list[Any]) -> None:  # noqa: C901 - one case per effect, nothing else
        for effect in effects:
            match effect:
                case fx.Emit():
                    self.recorder.emit(effect.event)
                    if effect.breathe:
                        time.sleep(0)  # hand the GIL to the surface: the reply's first words show now
                case fx.StartStream():
                    self._start_stream(effect)
                case fx.StartCall():
                    self._start_call(effect)
                case fx.RunHook():
                    self._apply(effect.then(self._run_hook(effect)))
                case fx.Cancel():
                    effect.scope.cancel()
                case fx.Hold():
                    self.holder.set(effect.scope)
                case fx.BeginTurn():
                    self._begin_turn(effect)
                case fx.EndTurn():
                    self._end_turn(effect.gen)
                case fx.Store():
                    self.recorder.tell(effect.message)
                case fx.Mark():
                    self.checkpoints.mark(effect.turn, effect.text)
                case fx.SettleMarkers():
                    self._say(self.checkpoints.settle())
                case fx.RestoreCode():
                    done, said = self.checkpoints.restore(effect.to_turn, effect.next_turn, effect.force)
                    self._say(said)
                    self._apply(effect.then(done))
                case fx.CloseQuestions():
                    self.services.close_questions(effect.reason)
                case fx.Stop():
                    self.stop()
                case _:
                    raise ValueError(f"session: not an effect: {effect!r}")

    def _say(self, said: Said) -> None:
        for level, message in said:
            self.recorder.emit(m.Notice(level=level, message=message))

    def _begin_turn(self, effect: fx.BeginTurn) -> None:
        self.holder.set(effect.scope)
        self.turns[effect.gen] = TurnRuntime(self.actor_ref, effect.gen)

    def _end_turn(self, gen: int) -> None:
        runtime = self.turns.pop(gen, None)
        if runtime is not None:
            runtime.end(self.actor_ref)

    def _watchdog(self, gen: int) -> None:
        """A child whose thread is gone without any report (not even an exit) is a crash."""
        runtime = self.turns.get(gen)
        if runtime is None:
            return

        def alive(kind: str, ident: Any) -> bool | None:
            ref = self.children.get((kind, gen, ident))
            return None if ref is None else ref.is_alive()

        for kind, ident in runtime.vanished(self.machine.watched(gen), alive):
            self._apply(self.machine.on(fx.ChildExit(kind, gen, ident, f"the {kind} actor vanished without a report")))

    def _run_hook(self, effect: fx.RunHook) -> dict[str, Any] | None:
        """A broken hook is a warning and an absence, never a failed turn. An interrupt stops a
        running hook at once (the turn's scope goes with the payload)."""
        assert self.hooks is not None
        payload = effect.payload if effect.scope is None else {**effect.payload, "scope": effect.scope}
        try:
            reply = self.hooks.run(effect.point, payload)
        except Exception as exc:
            self.recorder.emit(m.Notice(level="warning", message=f"{effect.point} hook failed and was skipped: {exc}"))
            return None
        for text in (reply or {}).get("warnings") or ():  # a hook's word for the person
            self.recorder.emit(m.Notice(level="warning", message=str(text)))
        for text in (reply or {}).get("notices") or ():
            self.recorder.emit(m.Notice(level="info", message=str(text)))
        return reply

    def _start_stream(self, effect: fx.StartStream) -> None:
        key = (effect.kind, effect.gen, effect.stream_id)
        ref = self._spawn(key, lambda: ProviderStreamActor.start(
            self.provider, effect.request, self.actor_ref, effect.stream_id, self.holder.for_stream(effect.scope)))
        self.children[key] = ref
        ref.tell("run")

    def _start_call(self, effect: fx.StartCall) -> None:
        call, runtime = effect.call, self.turns[effect.gen]
        if call.name == "bash":
            self._warn_sandbox_once()
        env = self.env(effect.gen, runtime, call, effect.scope)
        if call.risk is not Risk.READ_ONLY:
            said: Said = []
            checkpoint = self.checkpoints.for_call(effect.turn, said)
            self._say(said)
            if checkpoint is not None:
                env.checkpoint = checkpoint
        key = ("call", effect.gen, call.id)
        from cox.actors.tools.call_actor import ToolCallActor  # with the first call, as the tool's own module

        ref = self._spawn(key, lambda: ToolCallActor.start(
            self.tools[call.name], call, env, self.actor_ref, effect.gen, self._archive_put, self.s.limits))
        self.children[key] = ref
        runtime.ran_commands = runtime.ran_commands or call.name == "bash"
        ref.tell("run")

    def env(self, gen: int, runtime: TurnRuntime | None, call: ToolCall, scope: CancelScope | None = None) -> ToolEnv:
        """A call's environment (``runtime`` None: a throwaway one, to describe a call)."""
        me = self.actor_ref
        return ToolEnv(
            roots=self.s.roots, cwd=self.s.cwd, cancel=scope or CancelScope(),
            processes=runtime.processes if runtime else [],
            output=lambda chunk: me.tell(fx.ToolOutput(gen, call.id, chunk)),
            bash_timeout_s=self.s.bash_timeout_s, bash_max_timeout_s=self.s.bash_max_timeout_s, home=self.s.home,
            services=self.services.tool_services(),
            reads=self.engine.read_guard() if hasattr(self.engine, "read_guard") else None,
        )

    def _make_agents(self) -> AgentHost:
        from .agents import AgentHost
        return AgentHost(self, self.lineage)

    def spawn_child(self, key: tuple[str, int, Any], start: Callable[[], pykka.ActorRef[Any]]) -> pykka.ActorRef[Any]:
        return self._spawn(key, start)  # a subagent's session, linked like a turn's children (any thread)

    def _spawn(self, key: tuple[str, int, Any], start: Callable[[], pykka.ActorRef[Any]]) -> pykka.ActorRef[Any]:
        """Start a turn child linked to this session: its exit, however it happens, comes back
        as ``ChildExit`` after anything it told us before."""
        me = self.actor_ref
        kind, gen, ident = key

        def on_exit(exit_: Exit) -> None:
            why = exit_.kind.value if exit_.error is None else f"{exit_.kind.value}: {exit_.error}"
            try:
                me.tell(fx.ChildExit(kind, gen, ident, why))
            except pykka.ActorDeadError:
                pass

        with spawn_linked(on_exit, parent=f"session:{self.s.session_id}"):
            return start()

    def _open_url(self, url: str, source: str) -> None:
        """Open the browser in a child actor of this session (``mcp/opener.py``); it says so if it
        could not. Its exit (kind "open_url", gen -1) matches no turn: nothing to do."""
        from cox.actors.mcp.opener import UrlOpener
        from cox.actors.mcp.questions import open_in_browser

        opener = self.s.open_url or open_in_browser
        self._spawn(("open_url", -1, url), lambda: UrlOpener.start(opener, url, source, self.actor_ref))

    def _archive_put(self, data: bytes) -> str:
        store = self.store()
        if store is None:
            raise RuntimeError("the store is not running")
        return str(store.ask(sm.ArchivePut(data), timeout=30))

    def _warn_sandbox_once(self) -> None:
        if self.sandbox_warned or self.s.sandbox_mode is SandboxMode.DANGER_FULL_ACCESS:
            return
        self.sandbox_warned = True
        from cox.actors.tools.shell_env import sandbox_warning

        if (warning := sandbox_warning()) is not None:
            self.recorder.emit(m.Notice(level="warning", message=warning))
