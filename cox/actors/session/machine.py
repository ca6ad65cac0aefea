"""The turn loop as a pure machine: ``on(message) -> effects``.

The session actor owns no logic of its own: it feeds every submission and every report of its
children to :meth:`TurnMachine.on` and carries out the effects that come back, in order
(``messages.py`` lists both). The machine holds the conversation and the running turn's state —
the stream, the step's tool calls (``batch.py``), approvals waiting, the steering queue, the
stop reason — and never touches a thread, an actor, a process or a file. What it must ask the
world (a hook's answer, whether the code could be restored) it asks with an effect carrying a
continuation. So every path of a turn can be driven from a test by feeding messages.

One turn::

    UserTurn → [UserPromptSubmit hook] → sample ─→ StartStream ─→ StreamText… → StreamEnd
                      ↑                                                │
                      │        no tool call: [Stop hook] → Finish ←────┤
                      │                                                ↓ tool calls
                      └─ all results, in emission order ←─ run ←─ approval ←─ permission ←─ PreToolUse

Every tool call passes one choke point, in this order: PreToolUse hooks → permission engine →
approval → (checkpoint → run → cap and archive, in the call's actor) → PostToolUse hooks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cox.actors.store import messages as sm
from cox.policy.redact import scrub
from cox.protocol import messages as m
from cox.protocol.types import Decision, PermissionMode, Risk, StopReason, ToolCall, ToolResult
from cox.supervisors.cancel import CancelScope

from . import history as h
from . import messages as fx
from .batch import Batch
from .ledger import Ledger, Purse
from .state import Compaction, Turn

if TYPE_CHECKING:
    from cox.actors.provider.stream import StreamResult

    from .dedup import ReadCache
    from .request import Assembler
    from .resume import Rebuilt
    from .settings import SessionSettings

decisions = logging.getLogger("cox.session.permission")
"""One DEBUG line per permission decision (stdlib logging: free when ``--verbose`` is off)."""

Effects = list[Any]


class Ports(Protocol):
    """What the machine asks of the world synchronously: pure judgements, no effects."""

    provider_name: str

    def describe(self, call: ToolCall) -> ToolCall:
        """The call with its risk and subject (raises on bad input)."""
        ...

    def writes(self, call: ToolCall) -> list[Path] | None:
        """The files the call will change (None: it cannot say)."""
        ...

    def decide(self, call: ToolCall, mode: PermissionMode, grants: list[str], turn_allow: list[str]) -> Any:
        """The permission engine's outcome (``kind`` allow / deny / ask, ``reason``); ``turn_allow``:
        the running turn's own allow rules (``UserTurn.allow``)."""
        ...

    def grants_for(self, call: ToolCall) -> list[str]:
        ...

    def parallel(self, name: str) -> bool:
        """Whether the tool's read-only calls may run beside others."""
        ...

    def specs(self, tools: dict[str, Any]) -> list[Any]:
        ...


class TurnMachine:
    def __init__(self, settings: SessionSettings, tools: dict[str, Any], deferred: dict[str, Any], ports: Ports,
                 assembler: Assembler, reads: ReadCache, resumed: Rebuilt | None, has_hooks: bool,
                 purse: Purse | None = None) -> None:
        self.s = settings
        self.tools = tools
        self.deferred = deferred
        self.mcp_off: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        """The tools of the servers switched off (``SetMcpServer``), loaded and deferred."""
        self.ports = ports
        self.assembler = assembler
        self.reads = reads
        self.has_hooks = has_hooks
        self.resumed = resumed
        self.base_mode = settings.permission_mode
        self.preset = settings.preset
        self.mode = self._effective_mode()
        self.chosen_model = ""  # /model NAME: main turns run on it instead of settings.model
        self.history: list[dict[str, Any]] = resumed.history if resumed else []
        self.turn_starts: dict[int, int] = resumed.turn_starts if resumed else {}
        self.last_turn = resumed.last_turn if resumed else 0
        self.gen = 0
        self.stream_seq = 0
        self.active: Turn | None = None
        self.compaction: Compaction | None = None
        self.pending_inputs: list[str] = []
        self.grants: list[str] = []
        self.denials: list[dict[str, Any]] = []
        self.ledger = Ledger(settings.model, settings.budget_usd, settings.monthly_budget_usd,
                             settings.model_overrides, purse)
        self.closing = False
        self.hook_context: str | None = None
        """A SessionStart hook's additionalContext, sent with the first prompt."""
        self._fx: Effects = []

    # ------------------------------------------------------------------ the one entry

    def on(self, msg: Any) -> Effects:  # noqa: C901 - one case per message, nothing else
        """The effects of one message, in the order they must happen."""
        def handle() -> None:
            match msg:
                case fx.StreamText():
                    self._stream_text(msg.stream_id, msg.text)
                case fx.StreamThinking():
                    if self._current(msg.stream_id) is not None:
                        self._current_turn().stream_emitted = True
                        self._emit(m.ThinkingDelta(text=msg.text))
                case fx.StreamNotice():
                    if self._current(msg.stream_id) is not None or self._compacting(msg.stream_id):
                        self._emit(m.Notice(level="warning", message=msg.text))
                case fx.StreamEnd():
                    self._stream_end(msg.result)
                case fx.ToolOutput():
                    turn = self.active
                    if turn is not None and turn.gen == msg.gen and msg.call_id in turn.batch.running:
                        self._emit(m.ToolCallOutput(call_id=msg.call_id, chunk=msg.chunk))
                case fx.ToolDone():
                    self._tool_done(msg)
                case fx.ChildExit():
                    self._child_exit(msg)
                case fx.StorageFailed():
                    self._storage_failed(msg.sentence)
                case m.UserTurn():
                    self._user_turn(msg)
                case m.Interrupt():
                    self._interrupt()
                case m.Approve():
                    self._approve(msg)
                case m.SetMode():
                    self._set_mode(msg)
                case m.SetModel():
                    self._set_model(msg.model)
                case m.Compact():
                    if self.active is not None or self.compaction is not None:
                        self._notice("warning", "cannot compact while a turn or a compaction runs")
                    else:
                        self._start_compaction(msg.focus, None, trigger="manual")
                case m.Rewind():
                    self._rewind(msg)
                case m.SetMcpServer():
                    self._set_mcp_server(msg.server, msg.enabled)
                case m.Shutdown():
                    self._fx.append(fx.Stop())
                case _:
                    raise ValueError(f"session: not a message it knows: {msg!r}")
        return self._collect(handle)

    # The session's edges: opened, closing, crashed.

    def opened(self, others: list[Any]) -> Effects:
        """The store opened the session (``others``: the other live sessions in this folder)."""
        def handle() -> None:
            self._emit(m.SessionStarted(
                session_id=self.s.session_id, cwd=str(self.s.cwd), model=self.main_model(),
                permission_mode=self.mode, tools=sorted(self.tools), mcp_servers=self.s.mcp_servers,
                resumed=self.resumed is not None))
            for notice in self.resumed.notices if self.resumed else []:
                self._notice("warning", notice)

            def then(reply: dict[str, Any] | None) -> None:
                context = reply.get("context") if reply else None
                self.hook_context = context if isinstance(context, str) else None
                if others:
                    from cox.actors.store.presence import notice as presence_notice

                    self._notice("warning", presence_notice(others))

            self._hook("SessionStart", {"source": "resume" if self.resumed else "startup",
                                        "model": self.main_model()}, then)
        return self._collect(handle)

    def closing_down(self) -> Effects:
        """The session stops: the running turn ends interrupted, questions close, markers settle."""
        def handle() -> None:
            self.closing = True
            if self.active is not None:
                self._interrupt()
            self._hook("SessionEnd", {"reason": "other"}, None)
            self._fx.append(fx.CloseQuestions("session_closed"))
            self._fx.append(fx.SettleMarkers())
        return self._collect(handle)

    def crashed(self) -> Effects:
        """The session's own code failed, maybe halfway through a message's effects: the running
        turn stops here. What the surfaces already saw is closed by the recorder, which alone
        knows it (a turn_started or a call's request may never have been emitted)."""
        def handle() -> None:
            turn = self.active
            if turn is not None:
                self.active = None
                self._fx.append(fx.Hold(None))
                self._fx.append(fx.Cancel(turn.scope))
                self._fx.append(fx.CloseQuestions("session_closed"))
                self._fx.append(fx.EndTurn(turn.gen))
        return self._collect(handle)

    # ------------------------------------------------------------------ what the surfaces read

    def main_model(self) -> str:
        """The model main turns run on: architect's think tier, /model's choice, the config's."""
        if self.preset == "architect" and self.s.think_model:
            return self.s.think_model
        return self.chosen_model or self.s.model

    def accepting_questions(self) -> bool:
        return self.active is not None and not self.closing

    # ------------------------------------------------------------------ plumbing

    def _collect(self, handle: Callable[[], None]) -> Effects:
        saved, self._fx = self._fx, []
        try:
            handle()
            return self._fx
        finally:
            self._fx = saved

    def _emit(self, event: Any, breathe: bool = False) -> None:
        self._fx.append(fx.Emit(event, breathe))

    def _notice(self, level: Any, message: str) -> None:
        self._emit(m.Notice(level=level, message=message))

    def _cancel(self, scope: CancelScope) -> None:
        if self.active is not None and self.active.scope is scope:
            self.active.cancelled = True
        self._fx.append(fx.Cancel(scope))

    def _hook(self, point: str, payload: dict[str, Any],
              then: Callable[[dict[str, Any] | None], None] | None) -> None:
        """Ask the hooks of ``point``; ``then`` continues with their answer (at once, with None,
        when the session has no hooks). The answers cox understands (``cox.hooks`` maps Claude
        Code's to them): UserPromptSubmit ``prompt`` / ``block`` / ``context``; SessionStart
        ``context``; PreToolUse and PermissionRequest ``deny``, PreToolUse ``input``;
        PostToolUse(Failure) ``context``; Stop ``continue``; the others observe."""
        if not self.has_hooks:
            if then is not None:
                then(None)
            return
        turn = self.active

        def resume(reply: dict[str, Any] | None) -> Effects:
            return self._collect(lambda: then(reply) if then is not None else None)

        self._fx.append(fx.RunHook(point, payload, turn.scope if turn else None, resume))

    # ------------------------------------------------------------------ submissions

    def _user_turn(self, msg: m.UserTurn) -> None:
        text = msg.text
        if msg.allow and (self.active is not None or self.compaction is not None):
            self._notice("warning", "the command's allowed-tools apply only to a turn it starts; this message "
                                    "joins another, so they grant nothing")
        if msg.images and (self.active is not None or self.compaction is not None):
            self._notice("warning", f"{len(msg.images)} image(s) of a message sent while a turn runs were left "
                                    "out (only its text joins the turn); send them with a new message")
        if self.active is None and self.compaction is not None:
            self.pending_inputs.append(text)
            self._notice("info", "message queued; the context is being compacted first")
        elif self.active is not None:
            self.active.steer.append(text)
            self._notice("info", "message queued; the model sees it at its next step")
        else:
            self._start_turn(text, allow=msg.allow, images=msg.images, effort=msg.effort or "")

    def _interrupt(self) -> None:
        turn = self.active
        state = self.compaction
        if state is not None and (turn is None or state.retry_turn is turn):
            self._fx.append(fx.Cancel(state.scope))
            self.compaction = None
            self._fx.append(fx.Hold(None))
            self._notice("warning", "compaction interrupted; the history is unchanged")
            if turn is None:
                self._drain_pending()
        if turn is None:
            return
        self._cancel(turn.scope)
        if turn.streaming and turn.partial:
            content = [{"type": "text", "text": "".join(turn.partial)}]
            self._add({"role": "assistant", "content": content})
            self._emit(m.AssistantMessage(turn=turn.turn, content=content))
        turn.streaming = False
        self._abort_unfinished(turn)
        self._finish(StopReason.INTERRUPTED)

    def _approve(self, sub: m.Approve) -> None:
        turn = self.active
        call = turn.batch.awaiting_approval.pop(sub.call_id, None) if turn else None
        if turn is None or call is None:
            self._notice("warning", f"no call is waiting for approval with id {sub.call_id}")
            return
        batch = turn.batch
        if sub.decision is Decision.DENY and sub.message is not None:  # the model reads why; the turn goes on
            self._deliver(turn, call, ToolResult.denied(sub.message or "denied by the user"))
        elif sub.decision is Decision.DENY:
            turn.denied_by_user = True
            self._deliver(turn, call, ToolResult.denied("denied by the user; ask them how to proceed"))
            for other in [*batch.awaiting_approval.values(), *batch.queued]:
                self._deliver(turn, other, ToolResult.denied("not run: the user denied another call of this step"))
            batch.awaiting_approval.clear()
            batch.queued.clear()
        else:
            if sub.decision is Decision.ALLOW_FOR_SESSION:
                self.grants.extend(self.ports.grants_for(call))
            if sub.decision is Decision.EDIT and sub.edited_input is not None:
                call = self.ports.describe(replace(call, input=sub.edited_input))
                self._replace_call(turn, call)
                self._emit(m.ToolCallEdited(call=call))
            batch.queued.append(call)
        self._schedule(turn)
        self._maybe_next(turn)

    def _set_mode(self, sub: m.SetMode) -> None:
        if sub.preset is not None:
            self.preset = sub.preset
        else:
            assert sub.mode is not None
            self.base_mode = sub.mode
        self.mode = self._effective_mode()
        self._notice("info", f"mode {self.preset}: permission mode {self.mode.value}, "
                             f"main turns on {self.main_model()}")

    def _set_model(self, model: str) -> None:
        """``/model NAME``: main turns run on NAME from the next request, when the session's
        provider can serve it (an Anthropic session cannot send to an OpenAI model, nor back)."""
        from cox.actors.provider.catalog import describe

        serves = self.ports.provider_name
        family = describe(model, self.s.model_overrides).provider
        if serves in ("anthropic", "openai") and (family == "anthropic") != (serves == "anthropic"):
            self._notice("warning", f"cannot switch to {model}: this session talks to {serves}; "
                                    f"start cox with --model {model} instead")
            return
        self.chosen_model = model
        main = self.main_model()
        self._notice("info", f"model {model}: main turns on {main} from the next request" if main == model else
                     f"model {model}: the code tier from now on; architect mode runs main turns on {main} "
                     "until /mode editor")

    def _effective_mode(self) -> PermissionMode:
        """A preset never widens permissions: architect is plan; editor is the configured mode."""
        return PermissionMode.PLAN if self.preset == "architect" else self.base_mode

    def _rewind(self, sub: m.Rewind) -> None:
        if self.active is not None:
            self._notice("warning", "cannot rewind while a turn runs; interrupt it first")
            return
        self._fx.append(fx.SettleMarkers())
        # Code can go back to any checkpointed turn, a rewind's own included (that is how a rewind
        # is undone); the conversation only to a turn it still has.
        known = sub.to_turn in self.turn_starts or (sub.what == "code" and 1 <= sub.to_turn <= self.last_turn + 1)
        if not known:
            self._notice("warning", f"there is no turn {sub.to_turn} to rewind to")
            return

        def rewind_conversation() -> None:
            self.reads.clear()
            if sub.what in ("conversation", "both"):
                del self.history[self.turn_starts[sub.to_turn]:]
            self.turn_starts = {t: i for t, i in self.turn_starts.items() if t < sub.to_turn}
            self._emit(m.Rewound(to_turn=sub.to_turn, what=sub.what))

        if sub.what not in ("code", "both"):
            rewind_conversation()
            return

        def restored(done: bool) -> Effects:
            def go_on() -> None:
                if done:
                    self.reads.clear()
                    rewind_conversation()
            return self._collect(go_on)

        self._fx.append(fx.RestoreCode(sub.to_turn, self.last_turn + 1, sub.force, restored))

    # ------------------------------------------------------------------ the loop

    def _start_turn(self, text: str, queued: list[str] | None = None, allow: list[str] | None = None,
                    images: list[Any] | None = None, effort: str = "") -> None:
        self.last_turn += 1
        self.gen += 1
        turn = Turn(turn=self.last_turn, gen=self.gen, scope=CancelScope(), steer=list(queued or []),
                    allow=list(allow or []), effort=effort)
        self.active = turn
        self._fx.append(fx.BeginTurn(turn.gen, turn.scope))
        self.turn_starts[turn.turn] = len(self.history)
        self._emit(m.TurnStarted(turn=turn.turn))

        def then(reply: dict[str, Any] | None) -> None:
            prompt = reply["prompt"] if reply and isinstance(reply.get("prompt"), str) else text
            self._emit(m.UserMessage(turn=turn.turn, text=prompt))
            if reply and reply.get("block"):
                self._finish(StopReason.DENIED, f"a UserPromptSubmit hook blocked the prompt: {reply['block']}")
                return
            message = h.user_text(prompt)
            for context in (self.hook_context, reply and reply.get("context")):
                if isinstance(context, str) and context:  # a hook's additionalContext, after the prompt
                    message["content"].append({"type": "text", "text": context})
            self.hook_context = None
            if images:
                from cox.actors.tools.images import turn_images

                blocks, problems = turn_images(images)
                message["content"].extend(blocks)
                for problem in problems:  # the person is told, the model too; the text still goes
                    self._notice("warning", problem)
                    message["content"].append({"type": "text", "text": f"[{problem}]"})
            self._add(message)
            if turn.turn == 1:  # the session's title is its first prompt; later turns keep it
                self._fx.append(fx.Store(sm.Title(self.s.session_id, prompt)))
            self._sample(turn)
            # After the request has left: the checkpoint marker is not on the path to the first token.
            self._fx.append(fx.Mark(turn.turn, prompt))

        self._hook("UserPromptSubmit", {"prompt": text}, then)

    def _sample(self, turn: Turn) -> None:
        if turn.stopped:
            return  # interrupted out of band: the Interrupt message that follows ends the turn
        while turn.steer:
            text = turn.steer.pop(0)
            self._emit(m.UserMessage(turn=turn.turn, text=text, steered=True))
            self._add(h.user_text(text))
        if turn.requests >= self.s.max_turns:
            self._finish(StopReason.MAX_TURNS, f"reached the limit of {self.s.max_turns} model requests")
            return
        over = self.ledger.stop_reason()
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
        request.model = self.main_model()
        request.effort = turn.effort
        if self.preset == "architect":
            request.tier = "think"
            request.thinking_budget = self.s.think_budget_tokens
        turn.streaming = True
        self._fx.append(fx.StartStream("stream", turn.gen, turn.stream_id, request, turn.scope))

    def _current(self, stream_id: int) -> Turn | None:
        turn = self.active
        if turn is None or turn.stream_id != stream_id or not turn.streaming:
            return None
        return turn

    def _current_turn(self) -> Turn:
        assert self.active is not None
        return self.active

    def _compacting(self, stream_id: int) -> bool:
        return self.compaction is not None and stream_id == self.compaction.stream_id

    def _stream_text(self, stream_id: int, text: str) -> None:
        if self.compaction is not None and self._compacting(stream_id):
            self.compaction.text.append(text)
            return
        turn = self._current(stream_id)
        if turn is not None:
            turn.partial.append(text)
            first = not turn.stream_emitted
            turn.stream_emitted = True
            self._emit(m.TextDelta(text=text), breathe=first)

    def _stream_end(self, result: StreamResult) -> None:  # noqa: C901 - the stop table, one branch each
        if self._compacting(result.stream_id):
            self._finish_compaction(result)
            return
        turn = self._current(result.stream_id)
        if turn is None or result.cancelled:
            return
        turn.streaming = False
        if result.usage.input_tokens or result.usage.output_tokens:
            self._record_usage(result)
        error = result.error
        if error is not None and error.context_overflow and not turn.compacted and not turn.partial:
            turn.compacted = True
            self._notice("warning", "the context is too long for the model; compacting and trying again")
            if self._start_compaction(None, turn):
                return
        if error is not None and self._fall_back(turn, error):
            return
        if error is not None:
            text = "".join(turn.partial)
            if text:
                self._add({"role": "assistant", "content": [{"type": "text", "text": text}]})
            self._emit(m.ErrorEvent(message=f"model request failed: {error}"))
            self._finish(StopReason.ERROR, str(error))
            return
        content = [{k: v for k, v in b.items() if k != "input_error"} for b in result.content]
        if content:
            self._emit(m.AssistantMessage(turn=turn.turn, content=content))
            self._add({"role": "assistant", "content": content})
        uses = [b for b in result.content if b.get("type") == "tool_use"]
        if result.stop == "pause_turn" and not uses:
            self._sample(turn)
        elif result.stop == "refusal":
            # Roll the turn back, so a rephrased request is not answered in the refusal's shadow.
            del self.history[self.turn_starts.get(turn.turn, len(self.history)):]
            self.turn_starts.pop(turn.turn, None)
            self._emit(m.Rewound(to_turn=turn.turn, what="conversation"))
            self._abort_unfinished(turn)
            self._finish(StopReason.ERROR, "the model declined to answer (refusal); the turn was rolled back — "
                                           "rephrase the request and try again")
        elif not uses and result.stop == "max_tokens" and not turn.steer:
            # Cut by max_tokens with no tool call: a note (cod's stop table), never a plain end_turn
            # that reads like a finished answer.
            note = ("the reply was cut off at the model's output limit (max_tokens), so it may be incomplete; "
                    "ask to continue, or for a shorter answer")
            self._notice("warning", note)
            self._finish(StopReason.MAX_TOKENS, note)
        elif not uses:
            self._reply_ended(turn)
        else:
            self._dispatch(turn, uses, cut=result.stop == "max_tokens")

    def _fall_back(self, turn: Turn, error: Any) -> bool:
        """``--fallback-model``: the main model failed as overloaded or unavailable (after the
        stream's own retries, before any of its text was shown), so main turns move to the
        fallback for the rest of the session, this request first. Once, and not in architect
        mode (its think tier is the price consent)."""
        fallback = self.s.fallback_model
        if not fallback or turn.partial or self.preset == "architect" or self.chosen_model == fallback:
            return False
        if self.main_model() == fallback or not (error.retryable or error.status in (404, 529)):
            return False
        self._notice("warning", f"{self.main_model()} is unavailable ({error}); main turns go on with the "
                                f"fallback model {fallback}")
        self.chosen_model = fallback
        self._start_stream(turn)
        return True

    def _reply_ended(self, turn: Turn) -> None:
        """The model answered without a tool call: the turn ends, unless a steering message or a
        Stop hook's ``continue`` keeps it going."""
        def then(reply: dict[str, Any] | None) -> None:
            if reply and isinstance(reply.get("continue"), str) and reply["continue"]:
                turn.steer.append(reply["continue"])
            if turn.steer:
                self._sample(turn)
            else:
                self._finish(StopReason.END_TURN)

        if turn.steer:
            then(None)
        else:
            self._hook("Stop", {"turn": turn.turn}, then)

    # ------------------------------------------------------------------ the choke point

    def _dispatch(self, turn: Turn, uses: list[dict[str, Any]], cut: bool) -> None:
        """The step's calls, announced in emission order, then judged one by one."""
        turn.batch = Batch()
        turn.denied_by_user = False
        prepared: list[tuple[ToolCall, ToolResult | None]] = []
        from cox.actors.tools.spelling import as_cox_call  # with the first call (not on the start-up path)

        for block in uses:
            call = as_cox_call(block)  # Claude Code's spelling (Bash, file_path…) runs as cox's tool
            early: ToolResult | None = None
            if call.name not in self.tools and call.name in self.deferred:
                early = ToolResult.error(f"{call.name} is deferred and not loaded yet: call tool_search with "
                                         f"query 'select:{call.name}' first, then call it")
            elif call.name not in self.tools:
                early = ToolResult.error(f"unknown tool {block['name']!r}; available: {', '.join(sorted(self.tools))}")
            elif cut or "input_error" in block:
                early = ToolResult.error(
                    "not run: your response was cut off (max_tokens) before this call's input was complete; "
                    "send it again with smaller input (split a big file into several edits)")
            else:
                try:
                    call = self.ports.describe(call)
                except Exception as exc:
                    early = ToolResult.error(f"{call.name}: bad input: {exc}")
            turn.batch.add(call)
            prepared.append((call, early))
            self._emit(m.ToolCallRequested(call=call))
        self._admit(turn, prepared)

    def _admit(self, turn: Turn, prepared: list[tuple[ToolCall, ToolResult | None]]) -> None:
        """PreToolUse hooks → permission → approval, for each call in order; then run what may."""
        if self.active is not turn:
            return  # the turn ended while a hook ran
        if not prepared:
            self._schedule(turn)
            self._maybe_next(turn)
            return
        (call, early), rest = prepared[0], prepared[1:]
        if early is not None:
            self._deliver(turn, call, early)
            self._admit(turn, rest)
            return

        def then(reply: dict[str, Any] | None) -> None:
            judged = call
            if reply and reply.get("deny"):
                self._deliver(turn, call, ToolResult.denied(f"denied by a PreToolUse hook: {reply['deny']}"))
                self._admit(turn, rest)
                return
            if reply and isinstance(reply.get("input"), dict):
                try:
                    judged = self.ports.describe(replace(call, input=reply["input"]))
                except Exception as exc:  # a hook's bad input is the hook's failure, not the turn's
                    self._notice("warning", f"a PreToolUse hook's updatedInput for {call.name} is not valid "
                                            f"({exc}); ignored")
                else:
                    self._replace_call(turn, judged)
            self._judge(turn, judged, rest)

        self._hook("PreToolUse", {"tool": call.name, "input": call.input, "subject": call.subject, "id": call.id,
                                  "mode": str(self.mode.value)}, then)

    def _judge(self, turn: Turn, call: ToolCall, rest: list[tuple[ToolCall, ToolResult | None]]) -> None:
        started = time.monotonic()
        outcome = self.ports.decide(call, self.mode, self.grants, turn.allow)
        kind = str(getattr(outcome.kind, "value", outcome.kind))
        if kind == "ask" and call.name == "rename_symbol":
            kind = "allow"  # its ask waits: one approval for every file, once the server named them (lsp/approvals.py)
        if decisions.isEnabledFor(logging.DEBUG):  # --verbose; a command may carry a secret
            decisions.debug("%s", scrub(f"permission {kind} for {call.name} {call.subject}: {outcome.reason} "
                                        f"({(time.monotonic() - started) * 1000:.1f} ms)")[0])
        if kind == "allow":
            earlier = self.reads.lookup(call, turn.turn)
            if earlier is not None:
                self._deliver(turn, call, ToolResult(visible=f"unchanged since #{earlier} (same call, no write to "
                                                             "it since); see that result above"))
            else:
                turn.batch.queued.append(call)
        elif kind == "deny":
            self.denials.append({"tool_name": call.name, "tool_use_id": call.id, "tool_input": call.input,
                                 "reason": outcome.reason})
            self._deliver(turn, call, ToolResult.denied(f"denied: {outcome.reason}"))
        else:
            def then(reply: dict[str, Any] | None) -> None:
                if reply and reply.get("deny"):
                    self._deliver(turn, call, ToolResult.denied(f"denied by a PermissionRequest hook: {reply['deny']}"))
                else:
                    turn.batch.awaiting_approval[call.id] = call
                    self._emit(m.ApprovalRequired(call=call, reason=outcome.reason))
                    self._hook("Notification", {"message": f"cox needs your permission to use {call.name}",
                                                "notification_type": "permission_prompt"}, None)
                self._admit(turn, rest)

            self._hook("PermissionRequest", {"tool": call.name, "input": call.input, "id": call.id,
                                             "mode": str(self.mode.value)}, then)
            return
        self._admit(turn, rest)

    def _replace_call(self, turn: Turn, call: ToolCall) -> None:
        turn.batch.replace(call)
        from cox.actors.tools.spelling import as_called

        for msg in reversed(self.history):
            if msg["role"] != "assistant":
                continue
            for block in msg["content"]:
                if block.get("type") == "tool_use" and block.get("id") == call.id:
                    block["input"] = as_called(str(block.get("name", "")), call.name, call.input)
            break

    def _exclusive(self, call: ToolCall) -> bool:
        """A call runs alone unless its tool may run in parallel and the call only reads."""
        return not (self.ports.parallel(call.name) and call.risk is Risk.READ_ONLY)

    def _schedule(self, turn: Turn) -> None:
        """Start what may start: read-only calls together, a writing call alone, in order."""
        if turn.stopped:
            return
        for call, alone in turn.batch.startable(self._exclusive):
            if alone:
                try:
                    self.reads.invalidate(self.ports.writes(call))
                except Exception:
                    self.reads.invalidate(None)
            self._fx.append(fx.StartCall(turn.gen, turn.turn, call, turn.scope))

    def _tool_done(self, done: fx.ToolDone) -> None:
        turn = self.active
        if turn is None or turn.gen != done.gen or done.call_id not in turn.batch.running:
            return
        turn.batch.running.pop(done.call_id)
        call = turn.batch.call(done.call_id)
        if done.files:
            self._emit(m.CheckpointEvent(turn=turn.turn, call_id=done.call_id, files=done.files))
        result = done.result
        if call.name == "tool_search":
            from cox.actors.tools.deferred import activated

            self._activate_deferred(activated(result))
        if result.meta.get("changes_files"):  # a subagent's writes: no earlier read stands for a new one
            self.reads.invalidate(None)
        if result.ok and isinstance(result.meta.get("turn_allow"), list):  # a user's skill loaded: its allowed-tools
            turn.allow.extend(str(r) for r in result.meta["turn_allow"])
        if isinstance(result.meta.get("notice"), str):  # a tool's word for the person (an MCP tool changed)
            self._notice("warning", result.meta["notice"])

        def then(reply: dict[str, Any] | None) -> None:
            final = result
            if reply and isinstance(reply.get("context"), str) and reply["context"]:  # fed back to the model
                final = replace(final, visible=f"{final.visible}\n\n[hook] {reply['context']}")
            if turn.stopped:
                # It ended because the turn was interrupted: it did not finish, whatever it says.
                partial = f"\n{final.visible}" if final.visible else ""
                final = ToolResult.aborted(f"aborted: the turn was interrupted while this call ran{partial}")
            self._deliver(turn, call, final, done.ms)
            self._schedule(turn)
            self._maybe_next(turn)

        self._hook("PostToolUse" if result.ok else "PostToolUseFailure",  # only for calls that really ran
                   {"tool": call.name, "input": call.input, "status": result.status.value, "output": result.visible,
                    "id": call.id, "mode": str(self.mode.value)}, then)

    def _set_mcp_server(self, server: str, enabled: bool) -> None:
        """``mcp_toggle``: a server's tools (loaded and deferred) leave the tool set, kept aside,
        or come back; the next request's tool list says so."""
        prefix = f"mcp__{server}__"
        if server not in self.mcp_off and not any(n.startswith(prefix) for n in (*self.tools, *self.deferred)):
            self._notice("warning", f"mcp server {server!r} has no tools in this session; nothing to switch")
            return
        if not enabled:
            aside = self.mcp_off.setdefault(server, ({}, {}))
            for own, kept in ((self.tools, aside[0]), (self.deferred, aside[1])):
                for name in [n for n in own if n.startswith(prefix)]:
                    kept[name] = own.pop(name)
        else:
            loaded, deferred = self.mcp_off.pop(server, ({}, {}))
            self.tools.update(loaded)
            self.deferred.update(deferred)
        self.assembler.set_tools(self.ports.specs(self.tools))
        self._notice("info", f"mcp server {server} {'enabled' if enabled else 'disabled'}: its tools are "
                             f"{'back' if enabled else 'gone'} from the next request")

    def _activate_deferred(self, chosen: list[str]) -> None:
        """Deferred tools chosen through tool_search (its result names them) join the tool set.
        That changes system[0], so every cached prefix is invalidated once: say so."""
        names = [n for n in dict.fromkeys(chosen) if n in self.deferred and n not in self.tools]
        if not names:
            return
        for name in names:
            self.tools[name] = self.deferred[name]
        self.assembler.set_tools(self.ports.specs(self.tools))
        self._notice("info", f"tools added: {', '.join(names)}; the prompt cache prefix changed once because the "
                             "tool list did")

    def _deliver(self, turn: Turn, call: ToolCall, result: ToolResult, ms: float | None = None) -> None:
        if not turn.batch.deliver(call, result):
            return
        self._emit(m.ToolCallDone(call_id=call.id, result=result, duration_ms=ms))
        if result.ok and not result.visible.startswith("unchanged since #"):
            self.reads.remember(call, turn.turn)

    def _maybe_next(self, turn: Turn) -> None:
        if self.active is not turn or not turn.batch.done():
            return
        self._add(h.tool_results([self._result_block(c, r) for c, r in turn.batch.in_order()]))
        turn.batch.calls = []
        if turn.denied_by_user:
            self._finish(StopReason.DENIED, "the user denied a tool call")
            return
        self._sample(turn)

    def _abort_unfinished(self, turn: Turn) -> None:
        for call in turn.batch.unfinished():
            self._deliver(turn, call, ToolResult.aborted())
        turn.batch.drop_pending()
        if turn.batch.calls:
            self._add(h.tool_results([self._result_block(c, r) for c, r in turn.batch.in_order()]))
            turn.batch.calls = []

    @staticmethod
    def _result_block(call: ToolCall, result: ToolResult) -> dict[str, Any]:
        block = h.result_block(call.id, result.visible, not result.ok, result.images)
        if result.archive_id:
            block["_archive"] = result.archive_id
            block["_label"] = f"{call.name} {call.subject}".strip()
        return block

    # ------------------------------------------------------------------ children that stopped

    def _child_exit(self, exit_: fx.ChildExit) -> None:
        """A normal stop after its report means nothing; a crash or a kill before it reported
        becomes an error result (call) or one retry, then an error (stream)."""
        if exit_.kind == "compact":
            state = self.compaction
            if state is not None and state.stream_id == exit_.ident and not state.scope.cancelled:
                from cox.actors.provider.stream import StreamResult
                from cox.protocol.model import ProviderError

                self._finish_compaction(StreamResult(exit_.ident, error=ProviderError(
                    f"the summary stream stopped: {exit_.why}")))
            return
        turn = self.active
        if turn is None or turn.gen != exit_.gen:
            return
        if exit_.kind == "call" and exit_.ident in turn.batch.running:
            turn.batch.running.pop(exit_.ident)
            call = turn.batch.call(exit_.ident)
            self._deliver(turn, call, ToolResult.error(f"the {call.name} call crashed before it finished: {exit_.why}"))
            self._schedule(turn)
            self._maybe_next(turn)
        elif exit_.kind == "stream" and exit_.ident == turn.stream_id and turn.streaming and not turn.stopped:
            turn.streaming = False
            if not turn.stream_emitted and not turn.stream_retried:
                turn.stream_retried = True
                self._notice("warning", f"the model stream stopped unexpectedly ({exit_.why}); retrying")
                self._start_stream(turn)
            else:
                self._emit(m.ErrorEvent(message=f"the model stream stopped unexpectedly: {exit_.why}"))
                self._finish(StopReason.ERROR, f"model stream crashed: {exit_.why}")

    def watched(self, gen: int) -> list[tuple[str, Any]]:
        """The children of turn ``gen`` the watchdog must find alive: (kind, ident)."""
        turn = self.active
        if turn is None or turn.gen != gen:
            return []
        children: list[tuple[str, Any]] = [("call", call_id) for call_id in turn.batch.running]
        if turn.streaming:
            children.append(("stream", turn.stream_id))
        return children

    def _storage_failed(self, sentence: str) -> None:
        """The record cannot be written: the running turn ends with the error (what it did next
        would not be recorded). The interpreter emitted the error already."""
        turn = self.active
        if turn is not None:
            self._cancel(turn.scope)
            turn.streaming = False
            self._abort_unfinished(turn)
            self._finish(StopReason.ERROR, sentence)

    # ------------------------------------------------------------------ the end of a turn

    def _finish(self, stop: StopReason, reason: str | None = None) -> None:
        turn = self.active
        if turn is None:
            return
        self.active = None
        self._fx.append(fx.Hold(None))
        self._cancel(turn.scope)  # stops anything still running for this turn (no-op when all done)
        self._fx.append(fx.CloseQuestions("session_closed" if self.closing else
                                          "interrupted" if stop is StopReason.INTERRUPTED else "turn_ended"))
        self._fx.append(fx.EndTurn(turn.gen))
        self._fx.append(fx.SettleMarkers())
        self._emit(m.TurnDone(turn=turn.turn, stop=stop, reason=reason))
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

    def _add(self, message: dict[str, Any]) -> None:
        """Append to the history, tagged with its turn (microcompaction ages results by turn)."""
        message["_turn"] = self.last_turn
        self.history.append(message)

    # ------------------------------------------------------------------ usage and compaction

    def _record_usage(self, result: StreamResult) -> None:
        model = result.model or self.s.model
        usage = self.ledger.record(result.usage, model, main=not self._compacting(result.stream_id))
        # The event first, then its row: the index never leads the rollout.
        self._emit(m.UsageEvent(usage=usage, session_total=self.ledger.total, api_ms=result.api_ms))
        self._fx.append(fx.Store(sm.Usage(self.s.session_id, _plain(usage))))

    def _context_full(self) -> bool:
        from cox.actors.provider.catalog import describe

        window = describe(self.main_model(), self.s.model_overrides).context_window
        return self.ledger.last_context_tokens >= self.s.compact_at * window

    def _start_compaction(self, focus: str | None, turn: Turn | None, trigger: str = "auto") -> bool:
        """Summarise all but the last ``keep_turns`` turns on the cheap tier. ``turn`` is the
        turn to resume afterwards (a context-length error); None for /compact and the automatic
        compaction after a turn. False when there is nothing old enough to summarise."""
        from . import compaction as c

        old, new, dropped = c.split_turns(self.history, self.s.keep_turns)
        if not old or not dropped:
            self._notice("info", f"nothing to compact: every turn is among the last {self.s.keep_turns} kept whole")
            return False
        self._hook("PreCompact", {"trigger": trigger, "focus": focus}, None)
        scope = turn.scope if turn is not None else CancelScope()
        if turn is None:
            self._fx.append(fx.Hold(scope))
        self.stream_seq += 1
        request = c.request(self.s.cheap_model or self.s.model, old, focus, self.s.session_id)
        self.compaction = Compaction(
            stream_id=self.stream_seq, scope=scope, new=new, dropped=dropped, retry_turn=turn,
            before_tokens=self.ledger.last_context_tokens or c.estimate_tokens(self.history, []))
        self._fx.append(fx.StartStream("compact", turn.gen if turn else -1, self.stream_seq, request, scope))
        return True

    def _finish_compaction(self, result: StreamResult) -> None:
        from . import compaction as c

        state = self.compaction
        self.compaction = None
        if state is None or result.cancelled:
            return
        if state.retry_turn is None:
            self._fx.append(fx.Hold(None))
        if result.usage.input_tokens or result.usage.output_tokens:
            self._record_usage(result)
        summary = "".join(state.text).strip()
        turn = state.retry_turn
        if result.error is not None or not summary:
            why = str(result.error) if result.error else "the summary came back empty"
            self._notice("error", f"compaction failed ({why}); the history is unchanged")
            if turn is not None and self.active is turn:
                self._finish(StopReason.ERROR, f"the context is too long and compaction failed: {why}")
            else:
                self._drain_pending()
            return
        self.history = [c.summary_message(summary, min(state.dropped)), *state.new]
        self.turn_starts = {}
        for i, msg in enumerate(self.history):
            t = int(msg.get("_turn", 0))
            if t not in self.turn_starts and not msg.get("_summary"):
                self.turn_starts[t] = i
        self.reads.clear()
        after = c.estimate_tokens(self.history, self.assembler.stable)
        self._emit(m.Compacted(summary=summary, dropped=[str(t) for t in state.dropped],
                               before_tokens=state.before_tokens, after_tokens=after))
        self.ledger.last_context_tokens = after
        if turn is not None and self.active is turn:
            self._start_stream(turn)
        else:
            self._drain_pending()


def _plain(value: Any) -> Any:
    from cox.protocol.record import to_plain

    return to_plain(value)
