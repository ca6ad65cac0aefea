"""The session actor: the turn loop, driven only by messages.

Outside callers send ``Submission``s and receive ``Event``s. Inside, the loop is

    assemble → stream (a ProviderStream actor) → route tool calls (a ToolCall actor each;
    read-only calls in parallel, a writing call alone) → results back in emission order → repeat

until the model ends the turn. Nothing here blocks on I/O: the session only reacts to messages
(submissions, stream deltas, tool results, child exits), so an Approve, a steering message or an
Interrupt is handled while the turn runs. Interrupt cancels the turn's scope once (out of band,
from the caller's thread) and then arrives here as a message that finishes the turn.

Invariants (DESIGN.md §5, each has a test): one TurnStarted and one TurnDone per turn and
nothing after TurnDone; one ToolCallDone per ToolCallRequested; results return in emission order;
history normalised before each request; every event reaches the rollout before the surface sees
the next turn; system[0..2] byte-stable.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pykka

from cox.actors.provider.stream import ProviderStreamActor, StreamResult
from cox.actors.store import messages as sm
from cox.actors.tools.base import BaseTool, DeferredTool, ToolEnv, ToolServices
from cox.actors.tools.call_actor import ToolCallActor
from cox.actors.tools.deferred import activated
from cox.log import get_logger
from cox.policy.redact import Carry, scrub
from cox.protocol import messages as m
from cox.protocol.interfaces import Hook, Provider
from cox.protocol.model import ProviderError
from cox.protocol.record import to_plain
from cox.protocol.types import (
    ApprovalPolicy,
    Decision,
    PermissionMode,
    QuestionCloseReason,
    Risk,
    SandboxMode,
    StopReason,
    ToolCall,
    ToolResult,
    Usage,
)
from cox.supervisors import CancelScope, CoxActor
from cox.supervisors.actor import Exit, spawn_linked
from cox.supervisors.timer import scheduler

from . import history as h
from .checkpointing import MARKER_WAIT_S, Said
from .request import Assembler
from .resume import Rebuilt
from .state import Compaction, Turn

log = get_logger("cox.session")
decisions = logging.getLogger("cox.session.permission")
"""One DEBUG line per permission decision (stdlib logging: free when ``--verbose`` is off)."""

Sink = Callable[[Any, str], None]
"""A surface's receiver: called with (event, its scrubbed JSON line), in order, on the session thread."""

WATCHDOG_S = 0.5
"""How often a running turn checks that its children are still alive."""

ROLLOUT_SCRUBBED = {"text_delta", "tool_call_output", "tool_call_done", "assistant_message",
                    "error", "notice", "turn_done"}  # the last three carry provider error messages
MID_BLOCK = {"text_delta", "notice"}
"""Events that may come in the middle of a text block (a background notice); any other ends it."""


@dataclass
class SessionSettings:
    session_id: str
    cwd: Path
    roots: list[Path]
    model: str
    permission_mode: PermissionMode = PermissionMode.DEFAULT
    approval_policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST
    sandbox_mode: SandboxMode = SandboxMode.WORKSPACE_WRITE
    max_turns: int = 50
    budget_usd: float | None = None
    limits: dict[str, int] = field(default_factory=dict)
    bash_timeout_s: float = 120.0
    bash_max_timeout_s: float = 600.0
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    home: Path = field(default_factory=Path.home)
    writable_roots: list[Path] = field(default_factory=list)
    network: bool = False
    dedup_window_turns: int = 8
    microcompact_after_turns: int = 6
    checkpoints: bool = True
    cox_home: Path | None = None
    env_keep: list[str] = field(default_factory=list)
    """Secret-looking variables the user's own config passes to commands (``sandbox.env_keep``)."""
    cheap_model: str = ""
    think_model: str = ""
    preset: str = "editor"  # architect | editor (core.mode)
    compact_at: float = 0.75
    keep_turns: int = 2
    think_budget_tokens: int = 16_000
    model_overrides: dict[str, Any] = field(default_factory=dict)
    monthly_budget_usd: float | None = None
    open_url: Callable[[str], str | None] | None = None
    """Opens a URL an MCP server asked for, once the person chose open (URL elicitation); returns
    why it could not, or None. Default: the system browser (``questions.open_in_browser``)."""

    def main_model(self, preset: str) -> str:
        """The model main turns start on under ``preset`` (architect: the think tier), for a
        surface's status before the session says (the session's ``_main_model`` is the live
        answer, which every report of "the model" uses: session_started, usage, the window)."""
        return self.think_model if preset == "architect" and self.think_model else self.model


@dataclass
class OpenDialogue:
    """An MCP server's elicitation being asked: its dialogue, the server's waiting reply
    (resolved once, with what goes to the server and nowhere else) and the open question."""

    did: int
    dialogue: Any
    reply: concurrent.futures.Future[dict[str, Any]]
    question_id: str = ""


def _resolve(reply: concurrent.futures.Future[dict[str, Any]], outcome: dict[str, Any]) -> None:
    try:
        reply.set_result(outcome)
    except concurrent.futures.InvalidStateError:
        pass  # the server's request was withdrawn (cancelled) meanwhile


REAP_AFTER_S = 1.0
"""How long the calls of a finished turn have to reap their own processes before the session does."""


def _reap_later(me: pykka.ActorRef[Any], processes: list[Any]) -> None:
    """Processes of a finished turn that their calls have not reaped yet (a call that crashed
    or was killed). Usually there are none: the exited ones nobody waited for are reaped now, and
    nothing waits. Otherwise the calls get ``REAP_AFTER_S`` to do it themselves (each removes its
    own from ``processes``), then the session ends and reaps what is left — a timer task telling
    the session, not a thread of its own."""
    from cox.actors.tools.bash import reap, reap_strays

    if not processes:
        reap_strays()
        return

    def end_them() -> None:
        reap(processes)
        reap_strays()

    def due() -> None:
        try:
            me.tell(("reap", processes))
        except pykka.ActorDeadError:  # the session is gone: nobody else will
            threading.Thread(target=end_them, name="cox-reaper", daemon=True).start()

    scheduler.call_later(REAP_AFTER_S, due)


class ScopeHolder:
    """Shared between the session and its handle so an interrupt can cancel the running turn
    from the caller's thread, before the Interrupt message waits in the session's queue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scope: CancelScope | None = None

    def set(self, scope: CancelScope | None) -> None:
        with self._lock:
            self._scope = scope

    def cancel(self) -> bool:
        with self._lock:
            scope = self._scope
        if scope is None:
            return False
        scope.cancel()
        return True


class SessionActor(CoxActor):
    def __init__(self, settings: SessionSettings, provider: Provider, tools: dict[str, BaseTool], engine: Any,
                 store: Callable[[], pykka.ActorRef[Any] | None], sinks: list[Sink], holder: ScopeHolder,
                 resumed: Rebuilt | None = None, hooks: Hook | None = None,
                 deferred: dict[str, BaseTool] | None = None) -> None:
        super().__init__()
        self.s = settings
        self.provider = provider
        self.tools = tools
        self.engine = engine
        self.store = store
        self.sinks = sinks
        self.carry = Carry()  # the text deltas' carry-over window (see policy.redact.Carry)
        self.output_carry: dict[str, Carry] = {}  # the same for each running call's output chunks
        self.holder = holder
        self.base_mode = settings.permission_mode
        self.preset = settings.preset
        self.mode = self._effective_mode()
        self.history: list[dict[str, Any]] = []
        self.turn_starts: dict[int, int] = {}
        self.last_turn = 0
        self.gen = 0
        self.stream_seq = 0
        self.active: Turn | None = None
        self.grants: list[str] = []
        self.denials: list[dict[str, Any]] = []
        self.usage_total = Usage(model=settings.model)
        self.chosen_model = ""  # /model NAME (SetModel): main turns run on it instead of settings.model
        self.last_request_cost = 0.0
        self.last_context_tokens = 0
        self.compaction: Compaction | None = None
        self.pending_inputs: list[str] = []
        self.month_spent = 0.0
        self.closing = False
        self.hooks = hooks
        self.hook_context: str | None = None
        """A SessionStart hook's additionalContext, sent with the first prompt."""
        self.resumed = resumed
        from cox.actors.tools.jobs import Jobs
        from cox.actors.tools.shell_env import SessionTmp
        from cox.policy.sandbox import read_deny_patterns

        self.jobs = Jobs()
        self.tmp = SessionTmp(settings.session_id)
        self.sandbox_warned = False
        from .checkpointing import SessionCheckpoints

        self.checkpoints = SessionCheckpoints(settings.session_id, settings.roots[0], settings.cox_home,
                                              settings.checkpoints, store)
        self.storage_episode = 0  # the last storage failure reported (store.actor.StorageError)
        # The session's services its tools use (background jobs, sandbox settings, the archive).
        self.tool_services = ToolServices(
            sandbox_mode=settings.sandbox_mode, writable_roots=tuple(settings.writable_roots),
            network=settings.network, jobs=self.jobs, archive=self._archive_put,
            deferred_tools=tuple(DeferredTool(t.name, t.description) for t in (deferred or {}).values()),
            ask=self._ask_from_thread, session_tmp=self.tmp,
            read_deny=tuple(read_deny_patterns(getattr(engine, "deny", ()))),
            cox_home=settings.cox_home, env_keep=tuple(settings.env_keep),
        )
        # MCP elicitations being asked (see questions.py): by dialogue, and the open question's id.
        self.dialogues: dict[int, OpenDialogue] = {}
        self.open_questions: dict[str, int] = {}
        self.dialogue_seq = 0
        # Questions closed without the surface's answer (QuestionClosed): an Answer to one of
        # them that was already on its way is ignored quietly. The latest few are enough.
        self.closed_questions: collections.deque[str] = collections.deque(maxlen=64)
        self.deferred: dict[str, BaseTool] = dict(deferred or {})
        if resumed is not None:
            self.history = resumed.history
            self.turn_starts = resumed.turn_starts
            self.last_turn = resumed.last_turn
            from cox.actors.tools.deferral import used_in

            for name in used_in(self.history, self.deferred):  # loaded again, as before the resume
                self.tools[name] = self.deferred[name]
        from cox.actors.tools.registry import specs

        self.assembler = Assembler(settings.model, specs(tools), settings.cwd,
                                   microcompact_after_turns=settings.microcompact_after_turns,
                                   reads=engine.read_guard() if hasattr(engine, "read_guard") else None)
        from .dedup import ReadCache

        # A repeated read is answered from the earlier result only while that result is still
        # sent whole (microcompaction has not turned it into a pointer yet).
        window = settings.dedup_window_turns
        if settings.microcompact_after_turns > 0:
            window = min(window, settings.microcompact_after_turns)
        self.reads = ReadCache(window)

    # ------------------------------------------------------------------ plumbing

    def on_start(self) -> None:
        store = self.store()
        others: Any = []
        if store is not None:
            try:  # a failure is told back as ("storage_failed", …) and raised again at the turn's end
                meta = {"id": self.s.session_id, "cwd": str(self.s.cwd), "model": self._main_model()}
                others = store.ask(sm.Open(meta, self.actor_ref), timeout=10)
            except Exception as exc:
                if type(exc).__name__ != "StorageError":
                    raise
                log.error("store open failed", error=str(exc))
            if self.s.monthly_budget_usd is not None:
                import datetime

                first = datetime.date.today().replace(day=1)
                since = datetime.datetime.combine(first, datetime.time()).timestamp()
                spent: Any = store.ask(sm.SpentSince(since), timeout=10)
                self.month_spent = float(spent)
        self.emit(m.SessionStarted(
            session_id=self.s.session_id, cwd=str(self.s.cwd), model=self._main_model(),
            permission_mode=self.mode, tools=sorted(self.tools), mcp_servers=self.s.mcp_servers,
            resumed=self.resumed is not None,
        ))
        for notice in self.resumed.notices if self.resumed else []:
            self.emit(m.Notice(level="warning", message=notice))
        reply = self._hook("SessionStart", {"source": "resume" if self.resumed else "startup",
                                            "model": self._main_model()})
        self.hook_context = reply.get("context") if reply and isinstance(reply.get("context"), str) else None
        if isinstance(others, list) and others:
            from cox.actors.store.presence import notice as presence_notice

            self.emit(m.Notice(level="warning", message=presence_notice(others)))

    def on_stop(self) -> None:
        self._shutdown_turn()
        self._hook("SessionEnd", {"reason": "other"})
        self._cancel_questions("session_closed")
        self._settle_markers()
        self.checkpoints.close()
        stopped = self.jobs.stop_all()
        if stopped:
            log.info("stopped background jobs", session=self.s.session_id, count=stopped)
        self.tmp.remove()
        store = self.store()
        if store is not None:
            try:
                store.ask(sm.Close(self.s.session_id), timeout=5)
            except Exception:
                log.warning("store close failed", session=self.s.session_id)

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        # The rollout is intact up to the last event; tell the surfaces so they do not hang.
        try:
            if self.active is not None:
                self.active.scope.cancel()
                self.emit(m.ErrorEvent(message=f"session crashed: {exception_value}", fatal=True))
                self._finish(StopReason.ERROR, f"session crashed: {exception_value}")
        except Exception:
            log.exception("session failure handling failed")
        try:  # on_stop does not run after a failure: what it would end and remove, end and remove here
            self.jobs.stop_all()
            self.tmp.remove()
        except Exception:
            log.exception("session cleanup after a failure failed")
        super().on_failure(exception_type, exception_value, traceback)

    def emit(self, event: Any) -> None:
        """Rollout first (scrubbed copy), then every surface, in order. An event that ends a text
        block sends what the carry-over window still holds first (never earlier: a secret's start
        released alone would be scrubbed apart from its end)."""
        if self.carry.held and event.type not in MID_BLOCK:
            self.emit(m.TextDelta(text=self.carry.flush()))
        if event.type == "tool_call_done":
            output = self.output_carry.pop(event.call_id, None)
            if output is not None and output.held:
                self.emit(m.ToolCallOutput(call_id=event.call_id, chunk=output.flush()))
        if event.type in ROLLOUT_SCRUBBED:
            line, changed = m.encode_scrubbed(event)
        else:
            line, changed = m.encode(event), False
        store = self.store()
        if store is not None:
            if event.type == "turn_done" and event.stop is not StopReason.ERROR:
                # Before the turn's end is written: is what the turn did all on disk? If not, the
                # turn did not succeed, and its one turn_done says so.
                failure = self._sync(store)
                if failure is not None:
                    self.emit(m.ErrorEvent(message=failure))
                    event = m.TurnDone(turn=event.turn, stop=StopReason.ERROR, reason=failure)
                    line = m.encode(event)
            store.tell(sm.Append(self.s.session_id, line))
            if event.type == "turn_done":
                failure = self._sync(store)
                if failure is not None and event.stop is not StopReason.ERROR:
                    # The turn_done line itself was not written: the surfaces still hear the
                    # error, and the rollout (whole lines only) ends before this turn's end.
                    error = m.ErrorEvent(message=failure)
                    self._to_sinks(error, m.encode(error))
                    event = m.TurnDone(turn=event.turn, stop=StopReason.ERROR, reason=failure)
                    line = m.encode(event)
        self._to_sinks(event, line)
        if changed and event.type == "tool_call_done":
            self.emit(m.Notice(level="security",
                               message="tool output contained a secret-shaped string; redacted in the rollout"))

    def _to_sinks(self, event: Any, line: str) -> None:
        for sink in self.sinks:
            try:
                sink(event, line)
            except Exception:
                log.exception("surface sink failed")

    def _sync(self, store: pykka.ActorRef[Any]) -> str | None:
        """fsync the rollout at a turn's end; the store's sentence when a write failed since the
        last sync (a failure of the sync itself included), else None."""
        try:
            store.ask(sm.Sync(self.s.session_id, {"turns": self.last_turn}), timeout=10)
        except Exception as exc:
            log.error("rollout sync failed", error=str(exc))
            episode = getattr(exc, "episode", 0)
            self.storage_episode = max(self.storage_episode, episode)
            return str(exc) if type(exc).__name__ == "StorageError" else f"could not sync the rollout: {exc}"
        return None

    def _on_reap(self, processes: list[Any]) -> None:
        from cox.actors.tools.bash import reap, reap_strays

        reap(processes)
        reap_strays()

    def _on_storage_failed(self, episode: int, sentence: str) -> None:
        """The store could not write this session's record: say so, and end the running turn
        with an error (what it does next would not be recorded)."""
        if episode <= self.storage_episode:
            return  # the turn-end sync already reported it
        self.storage_episode = episode
        self.emit(m.ErrorEvent(message=sentence))
        turn = self.active
        if turn is not None:
            turn.scope.cancel()
            turn.stream_ref = None
            self._abort_unfinished(turn)
            self._finish(StopReason.ERROR, sentence)

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, tuple):
            handler = getattr(self, "_on_" + message[0], None)
            if handler is None:
                raise ValueError(f"session: unknown internal message {message[0]!r}")
            handler(*message[1:])
            return None
        kind = getattr(message, "type", None)
        handler = getattr(self, "_sub_" + str(kind), None)
        if handler is None:
            raise ValueError(f"session: not a submission: {message!r}")
        handler(message)
        return None

    # ------------------------------------------------------------------ submissions

    def _sub_user_turn(self, sub: m.UserTurn) -> None:
        if self.active is None and self.compaction is not None:
            self.pending_inputs.append(sub.text)
            self.emit(m.Notice(level="info", message="message queued; the context is being compacted first"))
            return
        if self.active is not None:
            self.active.steer.append(sub.text)
            self.emit(m.Notice(level="info", message="message queued; the model sees it at its next step"))
            return
        self._start_turn(sub.text)

    def _sub_interrupt(self, sub: m.Interrupt) -> None:
        turn = self.active
        if self.compaction is not None and (turn is None or self.compaction.retry_turn is turn):
            self.compaction.scope.cancel()
            self.compaction = None
            self.holder.set(None)
            self.emit(m.Notice(level="warning", message="compaction interrupted; the history is unchanged"))
            if turn is None:
                self._drain_pending()
        if turn is None:
            return
        turn.scope.cancel()
        if turn.stream_ref is not None and turn.partial:
            text = "".join(turn.partial)
            self._add({"role": "assistant", "content": [{"type": "text", "text": text}]})
            self.emit(m.AssistantMessage(turn=turn.turn, content=[{"type": "text", "text": text}]))
        turn.stream_ref = None
        self._abort_unfinished(turn)
        self._finish(StopReason.INTERRUPTED)

    def _sub_approve(self, sub: m.Approve) -> None:
        turn = self.active
        call = turn.awaiting_approval.pop(sub.call_id, None) if turn else None
        if turn is None or call is None:
            self.emit(m.Notice(level="warning", message=f"no call is waiting for approval with id {sub.call_id}"))
            return
        if sub.decision is Decision.DENY:
            turn.denied_by_user = True
            self._deliver(turn, call, ToolResult.denied("denied by the user; ask them how to proceed"))
            for other in list(turn.awaiting_approval.values()):
                turn.awaiting_approval.pop(other.id)
                self._deliver(turn, other, ToolResult.denied("not run: the user denied another call of this step"))
            for other in list(turn.queued):
                turn.queued.remove(other)
                self._deliver(turn, other, ToolResult.denied("not run: the user denied another call of this step"))
        else:
            if sub.decision is Decision.ALLOW_FOR_SESSION:
                self.grants.extend(self.engine.grants_for(call))
            if sub.decision is Decision.EDIT and sub.edited_input is not None:
                call = self._describe(replace(call, input=sub.edited_input))
                self._replace_call(turn, call)
                self.emit(m.ToolCallEdited(call=call))
            turn.queued.append(call)
        self._schedule(turn)
        self._maybe_next(turn)

    def _sub_set_mode(self, sub: m.SetMode) -> None:
        if sub.preset is not None:
            self.preset = sub.preset
        else:
            assert sub.mode is not None
            self.base_mode = sub.mode
        self.mode = self._effective_mode()
        model = self._main_model()
        self.emit(m.Notice(level="info", message=f"mode {self.preset}: permission mode {self.mode.value}, "
                                                  f"main turns on {model}"))

    def _sub_set_model(self, sub: m.SetModel) -> None:
        """``/model NAME``: main turns run on NAME from the next request, when the session's
        provider can serve it (an Anthropic session cannot send to an OpenAI model, nor back)."""
        from cox.actors.provider.catalog import describe

        serves = str(getattr(self.provider, "name", "") or "")
        family = describe(sub.model, self.s.model_overrides).provider
        if serves in ("anthropic", "openai") and (family == "anthropic") != (serves == "anthropic"):
            self.emit(m.Notice(level="warning", message=f"cannot switch to {sub.model}: this session talks to "
                                                        f"{serves}; start cox with --model {sub.model} instead"))
            return
        self.chosen_model = sub.model
        main = self._main_model()
        said = (f"model {sub.model}: main turns on {main} from the next request" if main == sub.model else
                f"model {sub.model}: the code tier from now on; architect mode runs main turns on {main} "
                "until /mode editor")
        self.emit(m.Notice(level="info", message=said))

    def _effective_mode(self) -> PermissionMode:
        """A preset never widens permissions: architect is plan; editor is the configured mode."""
        return PermissionMode.PLAN if self.preset == "architect" else self.base_mode

    def _main_model(self) -> str:
        if self.preset == "architect" and self.s.think_model:
            return self.s.think_model
        return self.chosen_model or self.s.model

    def _sub_compact(self, sub: m.Compact) -> None:
        if self.active is not None or self.compaction is not None:
            self.emit(m.Notice(level="warning", message="cannot compact while a turn or a compaction runs"))
            return
        self._start_compaction(sub.focus, None, trigger="manual")

    def _sub_answer(self, sub: m.Answer) -> None:
        """The person's answer to an open question: fed to its dialogue, which asks the next
        question or settles the server's request. The answer itself is never emitted, added to
        the history or logged: it goes to the asking server only."""
        did = self.open_questions.pop(sub.question_id, None)
        state = self.dialogues.get(did) if did is not None else None
        if state is None and sub.question_id in self.closed_questions:
            return  # closed (QuestionClosed) while the answer was on its way: nothing to do
        if state is None or state.question_id != sub.question_id:
            self.emit(m.Notice(level="warning", message=f"no open question with id {sub.question_id}"))
            return
        state.question_id = ""
        self._dialogue_step(state, state.dialogue.answer(sub.answer, cancelled=bool(sub.declined)))

    # ------------------------------------------------------------------ questions (MCP elicitation)

    def _ask_from_thread(self, request: dict[str, Any]) -> concurrent.futures.Future[dict[str, Any]]:
        """Called by an McpServer connection's loop thread when its server elicits during one of
        this session's calls (``env.services.ask``). The returned future settles with the
        ``ElicitResult`` fields; cancelling it (the server withdrew the request, the call ended)
        withdraws the open question."""
        reply: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        try:
            self.actor_ref.tell(("elicit", request, reply))
        except pykka.ActorDeadError:
            _resolve(reply, {"action": "cancel"})
        return reply

    def _on_elicit(self, request: dict[str, Any], reply: concurrent.futures.Future[dict[str, Any]]) -> None:
        from .questions import dialogue_for

        if reply.done():
            return
        if self.active is None or self.closing:
            _resolve(reply, {"action": "cancel"})
            return
        self.dialogue_seq += 1
        state = OpenDialogue(self.dialogue_seq, dialogue_for(request), reply)
        self.dialogues[state.did] = state
        me, did = self.actor_ref, state.did

        def gone(future: concurrent.futures.Future[dict[str, Any]]) -> None:
            if future.cancelled():
                try:
                    me.tell(("question_gone", did))
                except pykka.ActorDeadError:
                    pass

        reply.add_done_callback(gone)
        self._dialogue_step(state, state.dialogue.start())

    def _dialogue_step(self, state: OpenDialogue, step: Any) -> None:
        from cox.protocol.types import new_ulid

        from .questions import Done

        if isinstance(step, Done):
            self.dialogues.pop(state.did, None)
            if step.note:
                self.emit(m.Notice(level="warning", message=step.note))
            if step.open_url:
                self._open_url(step.open_url, state.dialogue.source)
            _resolve(state.reply, step.reply())
            return
        state.question_id = "q" + new_ulid()
        self.open_questions[state.question_id] = state.did
        self.emit(m.Question(question_id=state.question_id, prompt=step.prompt, schema=step.schema, url=step.url,
                             source=state.dialogue.source))

    def _on_question_gone(self, did: int) -> None:
        """The server's request was cancelled (it withdrew the question, or the call or the
        connection it came from ended first): its open question closes on every surface."""
        state = self.dialogues.pop(did, None)
        if state is None:
            return
        self._close_question(state, "withdrawn")

    def _close_question(self, state: OpenDialogue, reason: QuestionCloseReason) -> None:
        if not state.question_id:
            return
        self.open_questions.pop(state.question_id, None)
        self.closed_questions.append(state.question_id)
        self.emit(m.QuestionClosed(question_id=state.question_id, reason=reason))
        state.question_id = ""

    def _cancel_questions(self, reason: QuestionCloseReason) -> None:
        """Cancel every open question (an interrupt, the turn's end, shutdown): each closes on
        the surfaces (``QuestionClosed{reason}``), then its waiting server request gets ``cancel``."""
        states, self.dialogues = list(self.dialogues.values()), {}
        for state in states:
            self._close_question(state, reason)
        self.open_questions.clear()
        for state in states:
            _resolve(state.reply, {"action": "cancel"})

    def _open_url(self, url: str, source: str) -> None:
        """Open the browser in a child actor of this session (opener.py); it says so if it could
        not. Its exit report (key kind "open_url", gen -1) matches no turn: nothing to do."""
        from .opener import UrlOpener
        from .questions import open_in_browser

        opener = self.s.open_url or open_in_browser
        self._spawn(("open_url", -1, url), lambda: UrlOpener.start(opener, url, source, self.actor_ref))

    def _on_url_not_opened(self, source: str, url: str, why: str) -> None:
        self.emit(m.Notice(level="warning", message=f"could not open the browser for {source} ({why}); "
                                                    f"open it yourself: {url}"))

    def _sub_rewind(self, sub: m.Rewind) -> None:
        if self.active is not None:
            self.emit(m.Notice(level="warning", message="cannot rewind while a turn runs; interrupt it first"))
            return
        self._settle_markers()
        # Code can go back to any checkpointed turn, a rewind's own included (that is how a rewind
        # is undone); the conversation only to a turn it still has.
        known = sub.to_turn in self.turn_starts or (sub.what == "code" and 1 <= sub.to_turn <= self.last_turn + 1)
        if not known:
            self.emit(m.Notice(level="warning", message=f"there is no turn {sub.to_turn} to rewind to"))
            return
        if sub.what in ("code", "both") and not self._restore_code(sub.to_turn, sub.force):
            return
        self.reads.clear()
        if sub.what in ("conversation", "both"):
            del self.history[self.turn_starts[sub.to_turn]:]
        self.turn_starts = {t: i for t, i in self.turn_starts.items() if t < sub.to_turn}
        self.emit(m.Rewound(to_turn=sub.to_turn, what=sub.what))

    def _restore_code(self, to_turn: int, force: bool = False) -> bool:
        done, said = self.checkpoints.restore(to_turn, self.last_turn + 1, force)
        self._say(said)
        if done:
            self.reads.clear()
        return done

    def _say(self, said: Said) -> None:
        for level, message in said:
            self.emit(m.Notice(level=level, message=message))

    def _sub_shutdown(self, sub: m.Shutdown) -> None:
        self.stop()

    def _shutdown_turn(self) -> None:
        self.closing = True
        if self.active is not None:
            self._sub_interrupt(m.Interrupt())

    # ------------------------------------------------------------------ the loop

    def _start_turn(self, text: str, queued: list[str] | None = None) -> None:
        self.last_turn += 1
        self.gen += 1
        scope = CancelScope()
        turn = Turn(turn=self.last_turn, gen=self.gen, scope=scope, steer=list(queued or []))
        self.active = turn
        self.holder.set(scope)
        me = self.actor_ref
        gen = turn.gen

        def tick() -> bool:
            try:
                me.tell(("watchdog", gen))
            except pykka.ActorDeadError:
                return False
            return True

        turn.stop_watchdog = scheduler.call_every(WATCHDOG_S, tick)
        self.turn_starts[turn.turn] = len(self.history)
        self.emit(m.TurnStarted(turn=turn.turn))
        reply = self._hook("UserPromptSubmit", {"prompt": text})
        if reply and isinstance(reply.get("prompt"), str):
            text = reply["prompt"]
        self.emit(m.UserMessage(turn=turn.turn, text=text))
        if reply and reply.get("block"):
            self._finish(StopReason.DENIED, f"a UserPromptSubmit hook blocked the prompt: {reply['block']}")
            return
        message = h.user_text(text)
        for context in (self.hook_context, reply and reply.get("context")):
            if isinstance(context, str) and context:  # a hook's additionalContext, after the prompt
                message["content"].append({"type": "text", "text": context})
        self.hook_context = None
        self._add(message)
        store = self.store()
        if store is not None:
            store.tell(sm.Title(self.s.session_id, text))
        self._sample(turn)
        # After the request has left: the checkpoint marker (git probe, a db row) is not on the
        # path to the model's first token.
        self._mark(turn.turn, text)

    def _mark(self, turn: int, text: str) -> None:
        self.checkpoints.mark(turn, text)

    def _settle_markers(self, within_s: float = MARKER_WAIT_S) -> None:
        self._say(self.checkpoints.settle(within_s))

    def _sample(self, turn: Turn) -> None:
        if turn.scope.cancelled:
            return  # interrupted out of band: the Interrupt message that follows ends the turn
        while turn.steer:
            text = turn.steer.pop(0)
            self.emit(m.UserMessage(turn=turn.turn, text=text, steered=True))
            self._add(h.user_text(text))
        if turn.requests >= self.s.max_turns:
            self._finish(StopReason.MAX_TURNS, f"reached the limit of {self.s.max_turns} model requests")
            return
        over = self._budget_stop()
        if over is not None:
            self._finish(StopReason.BUDGET, over)
            return
        turn.requests += 1
        self._start_stream(turn)

    def _start_stream(self, turn: Turn) -> None:
        self.stream_seq += 1
        turn.stream_id = self.stream_seq
        turn.partial = []
        turn.stream_emitted = False
        request = self.assembler.build(self.history, turn.turn, self.s.session_id)
        request.model = self._main_model()
        if self.preset == "architect":
            request.tier = "think"
            request.thinking_budget = self.s.think_budget_tokens
        ref = self._spawn(("stream", turn.gen, turn.stream_id), lambda: ProviderStreamActor.start(
            self.provider, request, self.actor_ref, turn.stream_id, turn.scope))
        turn.stream_ref = ref
        ref.tell("run")

    def _current(self, stream_id: int) -> Turn | None:
        turn = self.active
        if turn is None or turn.stream_id != stream_id or turn.stream_ref is None:
            return None
        return turn

    def _on_s_text(self, stream_id: int, text: str) -> None:
        if self.compaction is not None and stream_id == self.compaction.stream_id:
            self.compaction.text.append(text)
            return
        turn = self._current(stream_id)
        if turn is not None:
            turn.partial.append(text)
            first = not turn.stream_emitted
            turn.stream_emitted = True
            shown = self.carry.feed(text)  # a tail that may start a secret waits for the next delta
            if shown:
                self.emit(m.TextDelta(text=shown))
            if first:
                time.sleep(0)  # hand the GIL to the surface: the reply's first words show now

    def _on_s_thinking(self, stream_id: int, text: str) -> None:
        turn = self._current(stream_id)
        if turn is not None:
            turn.stream_emitted = True
            self.emit(m.ThinkingDelta(text=text))

    def _on_s_notice(self, stream_id: int, text: str) -> None:
        if self._current(stream_id) is not None or (self.compaction and stream_id == self.compaction.stream_id):
            self.emit(m.Notice(level="warning", message=text))

    def _on_s_end(self, result: StreamResult) -> None:
        if self.compaction is not None and result.stream_id == self.compaction.stream_id:
            self._finish_compaction(result)
            return
        turn = self._current(result.stream_id)
        if turn is None or result.cancelled:
            return
        turn.stream_ref = None
        if result.usage.input_tokens or result.usage.output_tokens:
            self._record_usage(result)
        if result.error is not None and result.error.context_overflow and not turn.compacted and not turn.partial:
            turn.compacted = True
            self.emit(m.Notice(level="warning", message="the context is too long for the model; compacting and "
                                                        "trying again"))
            if self._start_compaction(None, turn):
                return
        if result.error is not None:
            text = "".join(turn.partial)
            if text:
                self._add({"role": "assistant", "content": [{"type": "text", "text": text}]})
            self.emit(m.ErrorEvent(message=f"model request failed: {result.error}"))
            self._finish(StopReason.ERROR, str(result.error))
            return
        content = [{k: v for k, v in b.items() if k != "input_error"} for b in result.content]
        if content:
            self.emit(m.AssistantMessage(turn=turn.turn, content=content))
            self._add({"role": "assistant", "content": content})
        uses = [b for b in result.content if b.get("type") == "tool_use"]
        if result.stop == "pause_turn" and not uses:
            self._sample(turn)
            return
        if result.stop == "refusal":
            # Roll the turn back, so a rephrased request is not answered in the refusal's shadow.
            start = self.turn_starts.get(turn.turn, len(self.history))
            del self.history[start:]
            self.turn_starts.pop(turn.turn, None)
            self.emit(m.Rewound(to_turn=turn.turn, what="conversation"))
            self._abort_unfinished(turn)
            self._finish(StopReason.ERROR, "the model declined to answer (refusal); the turn was rolled back — "
                                           "rephrase the request and try again")
            return
        if not uses and result.stop == "max_tokens" and not turn.steer:
            self._finish_cut(turn)
            return
        if not uses:
            if not turn.steer:
                reply = self._hook("Stop", {"turn": turn.turn})
                if reply and isinstance(reply.get("continue"), str) and reply["continue"]:
                    turn.steer.append(reply["continue"])  # the hook keeps the turn going
            if turn.steer:
                self._sample(turn)
            else:
                self._finish(StopReason.END_TURN)
            return
        self._dispatch(turn, uses, cut=result.stop == "max_tokens")

    def _finish_cut(self, turn: Turn) -> None:
        """A reply cut by ``max_tokens`` with no tool call ends the turn with a note (cod's stop
        table), never as a plain ``end_turn`` that reads like a finished answer."""
        note = ("the reply was cut off at the model's output limit (max_tokens), so it may be incomplete; "
                "ask to continue, or for a shorter answer")
        self.emit(m.Notice(level="warning", message=note))
        self._finish(StopReason.MAX_TOKENS, note)

    def _dispatch(self, turn: Turn, uses: list[dict[str, Any]], cut: bool) -> None:
        turn.calls = []
        turn.results = {}
        turn.denied_by_user = False
        prepared: list[tuple[ToolCall, ToolResult | None]] = []
        for block in uses:
            call = ToolCall(id=block["id"], name=block["name"], input=block.get("input") or {})
            early: ToolResult | None = None
            tool = self.tools.get(call.name)
            if tool is None and call.name in self.deferred:
                early = ToolResult.error(f"{call.name} is deferred and not loaded yet: call tool_search with "
                                         f"query 'select:{call.name}' first, then call it")
            elif tool is None:
                early = ToolResult.error(f"unknown tool {call.name!r}; available: {', '.join(sorted(self.tools))}")
            elif cut or "input_error" in block:
                early = ToolResult.error(
                    "not run: your response was cut off (max_tokens) before this call's input was complete; "
                    "send it again with smaller input (split a big file into several edits)")
            else:
                try:
                    call = self._describe(call)
                except Exception as exc:
                    early = ToolResult.error(f"{call.name}: bad input: {exc}")
            turn.calls.append(call)
            prepared.append((call, early))
            self.emit(m.ToolCallRequested(call=call))
        for call, early in prepared:
            if early is None:
                reply = self._hook("PreToolUse", {"tool": call.name, "input": call.input, "subject": call.subject,
                                                  "id": call.id, "mode": str(self.mode.value)})
                if reply and reply.get("deny"):
                    early = ToolResult.denied(f"denied by a PreToolUse hook: {reply['deny']}")
                elif reply and isinstance(reply.get("input"), dict):
                    try:
                        changed = self._describe(replace(call, input=reply["input"]))
                    except Exception as exc:  # a hook's bad input is the hook's failure, not the turn's
                        self.emit(m.Notice(level="warning", message=f"a PreToolUse hook's updatedInput for "
                                                                    f"{call.name} is not valid ({exc}); ignored"))
                    else:
                        call = changed
                        self._replace_call(turn, call)
            if early is not None:
                self._deliver(turn, call, early)
                continue
            started = time.monotonic()
            outcome = self.engine.decide(call, self.mode, self.s.approval_policy, self.s.sandbox_mode, self.grants)
            kind = str(getattr(outcome.kind, "value", outcome.kind))
            if decisions.isEnabledFor(logging.DEBUG):  # --verbose; a command may carry a secret
                decisions.debug("%s", scrub(f"permission {kind} for {call.name} {call.subject}: {outcome.reason} "
                                            f"({(time.monotonic() - started) * 1000:.1f} ms)")[0])
            if kind == "allow":
                earlier = self.reads.lookup(call, turn.turn)
                if earlier is not None:
                    self._deliver(turn, call, ToolResult(visible=f"unchanged since #{earlier} (same call, no "
                                                                 "write to it since); see that result above"))
                    continue
                turn.queued.append(call)
            elif kind == "deny":
                self.denials.append({"tool_name": call.name, "tool_use_id": call.id, "tool_input": call.input,
                                     "reason": outcome.reason})
                self._deliver(turn, call, ToolResult.denied(f"denied: {outcome.reason}"))
            else:
                reply = self._hook("PermissionRequest", {"tool": call.name, "input": call.input, "id": call.id,
                                                         "mode": str(self.mode.value)})
                if reply and reply.get("deny"):
                    self._deliver(turn, call, ToolResult.denied(f"denied by a PermissionRequest hook: {reply['deny']}"))
                    continue
                turn.awaiting_approval[call.id] = call
                self.emit(m.ApprovalRequired(call=call, reason=outcome.reason))
                self._hook("Notification", {"message": f"cox needs your permission to use {call.name}",
                                            "notification_type": "permission_prompt"})
        self._schedule(turn)
        self._maybe_next(turn)

    def _describe(self, call: ToolCall) -> ToolCall:
        return self.tools[call.name].describe(call, self._env(None, call))

    def _replace_call(self, turn: Turn, call: ToolCall) -> None:
        turn.calls = [call if c.id == call.id else c for c in turn.calls]
        for msg in reversed(self.history):
            if msg["role"] != "assistant":
                continue
            for block in msg["content"]:
                if block.get("type") == "tool_use" and block.get("id") == call.id:
                    block["input"] = call.input
            break

    def _exclusive(self, call: ToolCall) -> bool:
        """A call runs alone unless its tool may run in parallel and the call only reads."""
        return not (self.tools[call.name].parallel and call.risk is Risk.READ_ONLY)

    def _schedule(self, turn: Turn) -> None:
        """Start what may start: read-only calls together, a writing call alone, in order."""
        if turn.scope.cancelled:
            return
        while turn.queued:
            call = turn.queued[0]
            exclusive = self._exclusive(call)
            if exclusive and turn.running:
                return
            if not exclusive and any(ex for _, ex in turn.running.values()):
                return
            turn.queued.pop(0)
            self._start_call(turn, call, exclusive)
            if exclusive:
                return

    def _env(self, turn: Turn | None, call: ToolCall) -> ToolEnv:
        me = self.actor_ref
        gen = turn.gen if turn else 0
        scope = turn.scope if turn else CancelScope()
        return ToolEnv(
            roots=self.s.roots, cwd=self.s.cwd, cancel=scope, processes=turn.processes if turn else [],
            output=lambda chunk: me.tell(("tool_output", gen, call.id, chunk)),
            bash_timeout_s=self.s.bash_timeout_s, bash_max_timeout_s=self.s.bash_max_timeout_s, home=self.s.home,
            services=replace(self.tool_services, loaded=frozenset(n for n in self.deferred if n in self.tools)),
            reads=self.engine.read_guard() if hasattr(self.engine, "read_guard") else None,
        )

    def _archive_put(self, data: bytes) -> str:
        store = self.store()
        if store is None:
            raise RuntimeError("the store is not running")
        return str(store.ask(sm.ArchivePut(data), timeout=30))

    def _warn_sandbox_once(self) -> None:
        if self.sandbox_warned or self.s.sandbox_mode is SandboxMode.DANGER_FULL_ACCESS:
            return
        self.sandbox_warned = True
        from cox.actors.tools.shell_env import sandbox_status

        ok, why = sandbox_status()
        if not ok:
            from cox.policy.sandbox import fail_closed_sentence

            self.emit(m.Notice(level="warning", message=f"shell commands are {fail_closed_sentence(why)} "
                                                        "(`cox doctor` checks it again)"))

    def _start_call(self, turn: Turn, call: ToolCall, exclusive: bool) -> None:
        if call.name == "bash":
            self._warn_sandbox_once()
        env = self._env(turn, call)
        if call.risk is not Risk.READ_ONLY:
            said: Said = []
            checkpoint = self.checkpoints.for_call(turn.turn, said)
            self._say(said)
            if checkpoint is not None:
                env.checkpoint = checkpoint
        if not (self.tools[call.name].parallel and call.risk is Risk.READ_ONLY):
            try:
                self.reads.invalidate(self.tools[call.name].writes(call, env))
            except Exception:
                self.reads.invalidate(None)
        ref = self._spawn(("call", turn.gen, call.id), lambda: ToolCallActor.start(
            self.tools[call.name], call, env, self.actor_ref, turn.gen, self._archive_put, self.s.limits))
        turn.running[call.id] = (ref, exclusive)
        turn.ran_commands = turn.ran_commands or call.name == "bash"
        ref.tell("run")

    def _spawn(self, key: tuple[Any, ...], start: Callable[[], pykka.ActorRef[Any]]) -> pykka.ActorRef[Any]:
        """Start a turn child linked to this session: its exit, however it happens, comes back
        as ``("child_exit", key, why)`` after anything it told us before."""
        me = self.actor_ref

        def on_exit(exit_: Exit) -> None:
            why = exit_.kind.value if exit_.error is None else f"{exit_.kind.value}: {exit_.error}"
            try:
                me.tell(("child_exit", key, why))
            except pykka.ActorDeadError:
                pass

        with spawn_linked(on_exit, parent=f"session:{self.s.session_id}"):
            return start()

    def _on_tool_output(self, gen: int, call_id: str, chunk: str) -> None:
        turn = self.active
        if turn is not None and turn.gen == gen and call_id in turn.running:
            shown = self.output_carry.setdefault(call_id, Carry()).feed(chunk)  # a split secret too
            if shown:
                self.emit(m.ToolCallOutput(call_id=call_id, chunk=shown))

    def _on_tool_done(self, gen: int, call_id: str, result: ToolResult, ms: float,
                      files: list[str] | None = None) -> None:
        turn = self.active
        if turn is None or turn.gen != gen or call_id not in turn.running:
            return
        turn.running.pop(call_id)
        call = next(c for c in turn.calls if c.id == call_id)
        if files:
            self.emit(m.CheckpointEvent(turn=turn.turn, call_id=call_id, files=files))
        if call.name == "tool_search":
            self._activate_deferred(activated(result))
        if isinstance(result.meta.get("notice"), str):  # a tool's word for the person (an MCP tool changed)
            self.emit(m.Notice(level="warning", message=result.meta["notice"]))
        if self.hooks is not None:  # only for calls that really ran
            reply = self._hook("PostToolUse" if result.ok else "PostToolUseFailure",
                               {"tool": call.name, "input": call.input, "status": result.status.value,
                                "output": result.visible, "id": call.id, "mode": str(self.mode.value)})
            if reply and isinstance(reply.get("context"), str) and reply["context"]:  # fed back to the model
                result = replace(result, visible=f"{result.visible}\n\n[hook] {reply['context']}")
        if turn.scope.cancelled:
            # It ended because the turn was interrupted: it did not finish, whatever it says.
            partial = f"\n{result.visible}" if result.visible else ""
            result = ToolResult.aborted(f"aborted: the turn was interrupted while this call ran{partial}")
        self._deliver(turn, call, result, ms)
        self._schedule(turn)
        self._maybe_next(turn)

    def _on_child_exit(self, key: tuple[Any, ...], reason: str) -> None:
        """A watched child stopped. A normal stop after its report means nothing; a crash or a
        kill before it reported becomes an error result (call) or a retry/error (stream)."""
        kind, gen, ident = key
        if kind == "compact":
            state = self.compaction
            if state is not None and state.stream_id == ident and not state.scope.cancelled:
                self._finish_compaction(StreamResult(ident, error=ProviderError(f"the summary stream stopped: {reason}")))
            return
        turn = self.active
        if turn is None or turn.gen != gen:
            return
        if kind == "call" and ident in turn.running:
            turn.running.pop(ident)
            call = next(c for c in turn.calls if c.id == ident)
            self._deliver(turn, call, ToolResult.error(f"the {call.name} call crashed before it finished: {reason}"))
            self._schedule(turn)
            self._maybe_next(turn)
        elif (kind == "stream" and ident == turn.stream_id and turn.stream_ref is not None
              and not turn.scope.cancelled):
            turn.stream_ref = None
            if not turn.stream_emitted and not turn.stream_retried and not turn.scope.cancelled:
                turn.stream_retried = True
                self.emit(m.Notice(level="warning", message=f"the model stream stopped unexpectedly ({reason}); retrying"))
                self._start_stream(turn)
            else:
                self.emit(m.ErrorEvent(message=f"the model stream stopped unexpectedly: {reason}"))
                self._finish(StopReason.ERROR, f"model stream crashed: {reason}")

    def _on_watchdog(self, gen: int) -> None:
        """A child whose thread is gone without any report (not even an exit) is a crash."""
        turn = self.active
        if turn is None or turn.gen != gen:
            return
        # A child found dead is only suspected at first: its last messages may still be queued
        # behind this tick. Found dead again on the next tick, it vanished without a word.
        dead: set[tuple[str, Any]] = set()
        for call_id, (ref, _) in list(turn.running.items()):
            if not ref.is_alive():
                dead.add(("call", call_id))
        if turn.stream_ref is not None and not turn.stream_ref.is_alive():
            dead.add(("stream", turn.stream_id))
        for kind, ident in dead & turn.suspects:
            self._on_child_exit((kind, gen, ident), f"the {kind} actor vanished without a report")
        turn.suspects = dead

    def _deliver(self, turn: Turn, call: ToolCall, result: ToolResult, ms: float | None = None) -> None:
        if call.id in turn.results:
            return
        turn.results[call.id] = result
        self.emit(m.ToolCallDone(call_id=call.id, result=result, duration_ms=ms))
        if result.ok and not result.visible.startswith("unchanged since #"):
            self.reads.remember(call, turn.turn)


    def _add(self, message: dict[str, Any]) -> None:
        """Append to the history, tagged with its turn (microcompaction ages results by turn)."""
        message["_turn"] = self.last_turn
        self.history.append(message)

    @staticmethod
    def _result_block(call: ToolCall, result: ToolResult) -> dict[str, Any]:
        block = h.result_block(call.id, result.visible, not result.ok, result.images)
        if result.archive_id:
            block["_archive"] = result.archive_id
            block["_label"] = f"{call.name} {call.subject}".strip()
        return block

    def _activate_deferred(self, chosen: list[str]) -> None:
        """Deferred tools chosen through tool_search (its result names them) join the tool set.
        That changes system[0], so every cached prefix is invalidated once: say so."""
        names = [n for n in dict.fromkeys(chosen) if n in self.deferred and n not in self.tools]
        if not names:
            return
        for name in names:
            self.tools[name] = self.deferred[name]
        from cox.actors.tools.registry import specs

        self.assembler.set_tools(specs(self.tools))
        self.emit(m.Notice(level="info", message=f"tools added: {', '.join(names)}; the prompt cache prefix "
                                                  "changed once because the tool list did"))

    def _hook(self, point: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The hook seam (``cox.hooks`` maps Claude Code's answers to it): UserPromptSubmit may
        rewrite (``prompt``), ``block`` or add ``context``; SessionStart may add ``context`` (sent
        with the first prompt); PreToolUse and PermissionRequest may ``deny``, PreToolUse replace
        ``input``; PostToolUse(Failure) may add ``context`` to the result; Stop may ``continue``
        with a message; the others observe. Any answer may carry ``warnings`` and ``notices`` for
        the person. A broken hook is a warning and an absence, never a failed turn."""
        if self.hooks is None:
            return None
        if self.active is not None:  # an interrupt stops a running hook at once
            payload = {**payload, "scope": self.active.scope}
        try:
            reply = self.hooks.run(point, payload)
        except Exception as exc:
            self.emit(m.Notice(level="warning", message=f"{point} hook failed and was skipped: {exc}"))
            return None
        for text in (reply or {}).get("warnings") or ():  # a hook's word for the person
            self.emit(m.Notice(level="warning", message=str(text)))
        for text in (reply or {}).get("notices") or ():
            self.emit(m.Notice(level="info", message=str(text)))
        return reply

    def _maybe_next(self, turn: Turn) -> None:
        if self.active is not turn or not turn.calls or not turn.batch_done():
            return
        self._add(h.tool_results([self._result_block(c, turn.results[c.id]) for c in turn.calls]))
        turn.calls = []
        if turn.denied_by_user:
            self._finish(StopReason.DENIED, "the user denied a tool call")
            return
        self._sample(turn)

    def _abort_unfinished(self, turn: Turn) -> None:
        for call in turn.unfinished():
            self._deliver(turn, call, ToolResult.aborted())
        turn.awaiting_approval.clear()
        turn.queued.clear()
        turn.running.clear()
        if turn.calls:
            self._add(h.tool_results([self._result_block(c, turn.results[c.id]) for c in turn.calls]))
            turn.calls = []

    def _finish(self, stop: StopReason, reason: str | None = None) -> None:
        turn = self.active
        if turn is None:
            return
        self.active = None
        self.holder.set(None)
        if turn.stop_watchdog is not None:
            turn.stop_watchdog()
        turn.scope.cancel()  # stops anything still running for this turn (no-op when all done)
        self._cancel_questions("session_closed" if self.closing else
                               "interrupted" if stop is StopReason.INTERRUPTED else "turn_ended")
        if turn.ran_commands:
            _reap_later(self.actor_ref, turn.processes)
        self._settle_markers()
        self.emit(m.TurnDone(turn=turn.turn, stop=stop, reason=reason))
        if self.closing:
            return
        # Messages typed too late for this turn's last step start the next turn, in order.
        self.pending_inputs.extend(turn.steer)
        if stop in (StopReason.END_TURN, StopReason.MAX_TOKENS) and self._context_full():
            if self._start_compaction(None, None):
                return
        self._drain_pending()

    def _drain_pending(self) -> None:
        if self.pending_inputs and self.active is None and self.compaction is None:
            first, *rest = self.pending_inputs
            self.pending_inputs = []
            self._start_turn(first, rest)

    def _context_full(self) -> bool:
        from cox.actors.provider.catalog import describe

        window = describe(self._main_model(), self.s.model_overrides).context_window
        return self.last_context_tokens >= self.s.compact_at * window

    def _start_compaction(self, focus: str | None, turn: Turn | None, trigger: str = "auto") -> bool:
        """Summarise all but the last ``keep_turns`` turns on the cheap tier. ``turn`` is the
        turn to resume afterwards (a context-length error); None for /compact and the automatic
        compaction after a turn. False when there is nothing old enough to summarise."""
        from . import compaction as c

        old, new, dropped = c.split_turns(self.history, self.s.keep_turns)
        if old and dropped:
            self._hook("PreCompact", {"trigger": trigger, "focus": focus})
        if not old or not dropped:
            self.emit(m.Notice(level="info", message="nothing to compact: every turn is among the last "
                                                      f"{self.s.keep_turns} kept whole"))
            return False
        scope = turn.scope if turn is not None else CancelScope()
        if turn is None:
            self.holder.set(scope)
        self.stream_seq += 1
        request = c.request(self.s.cheap_model or self.s.model, old, focus, self.s.session_id)
        state = Compaction(stream_id=self.stream_seq, scope=scope, new=new, dropped=dropped, retry_turn=turn,
                           before_tokens=self.last_context_tokens or c.estimate_tokens(self.history, []))
        self.compaction = state
        ref = self._spawn(("compact", turn.gen if turn else -1, state.stream_id), lambda: ProviderStreamActor.start(
            self.provider, request, self.actor_ref, state.stream_id, scope))
        state.ref = ref
        ref.tell("run")
        return True

    def _finish_compaction(self, result: StreamResult) -> None:
        from . import compaction as c

        state = self.compaction
        self.compaction = None
        if state is None or result.cancelled:
            return
        if state.retry_turn is None:
            self.holder.set(None)
        if result.usage.input_tokens or result.usage.output_tokens:
            self._record_usage(result)
        summary = "".join(state.text).strip()
        turn = state.retry_turn
        if result.error is not None or not summary:
            why = str(result.error) if result.error else "the summary came back empty"
            self.emit(m.Notice(level="error", message=f"compaction failed ({why}); the history is unchanged"))
            if turn is not None and self.active is turn:
                self._finish(StopReason.ERROR, f"the context is too long and compaction failed: {why}")
            else:
                self._drain_pending()
            return
        self.history = [c.summary_message(summary, min(state.dropped)), *state.new]
        self.turn_starts = {t: i for t, i in self.turn_starts.items() if t not in state.dropped}
        self._reindex_turn_starts()
        self.reads.clear()
        after = c.estimate_tokens(self.history, self.assembler.stable)
        self.emit(m.Compacted(summary=summary, dropped=[str(t) for t in state.dropped],
                              before_tokens=state.before_tokens, after_tokens=after))
        self.last_context_tokens = after
        if turn is not None and self.active is turn:
            self._start_stream(turn)
        else:
            self._drain_pending()

    def _reindex_turn_starts(self) -> None:
        starts: dict[int, int] = {}
        for i, msg in enumerate(self.history):
            t = int(msg.get("_turn", 0))
            if t not in starts and not msg.get("_summary"):
                starts[t] = i
        self.turn_starts = starts

    # ------------------------------------------------------------------ usage

    def _record_usage(self, result: StreamResult) -> None:
        u = result.usage
        from cox.actors.provider.catalog import describe

        model = result.model or self.s.model
        usage = Usage(model=model, input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                      cache_read_tokens=u.cache_read_tokens, cache_write_tokens=u.cache_write_tokens)
        usage.cost_usd = describe(model, self.s.model_overrides).cost(usage)
        self.usage_total = self.usage_total + usage
        self.last_request_cost = usage.cost_usd
        if self.compaction is None or result.stream_id != self.compaction.stream_id:
            self.last_context_tokens = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
        store = self.store()
        if store is not None:
            store.tell(sm.Usage(self.s.session_id, to_plain(usage)))
        self.emit(m.UsageEvent(usage=usage, session_total=self.usage_total, api_ms=result.api_ms))

    def _budget_stop(self) -> str | None:
        """Why the next request must not be sent: it would pass the session or monthly cap,
        judging its cost by the last request's (the best guess there is before sending it)."""
        spent = self.usage_total.cost_usd
        next_cost = self.last_request_cost
        cap = self.s.budget_usd
        monthly = self.s.monthly_budget_usd
        if monthly is not None and self.month_spent >= monthly:
            return (f"the monthly budget of ${monthly:.2f} is spent (${self.month_spent:.4f} this month); "
                    "raise budget.monthly_usd to go on")
        if spent <= 0:
            return None
        if cap is not None and spent + next_cost > cap:
            return (f"the session budget of ${cap:.2f} is spent (${spent:.4f} so far, the next request would "
                    f"cost about ${next_cost:.4f}); raise budget.session_usd to go on")
        if monthly is not None and self.month_spent + spent + next_cost > monthly:
            return (f"the monthly budget of ${monthly:.2f} is spent (${self.month_spent + spent:.4f} this month); "
                    "raise budget.monthly_usd to go on")
        return None
