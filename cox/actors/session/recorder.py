"""How an event leaves the session: the rollout first (scrubbed), then every surface, in order.

- Secrets split across deltas: text deltas and each call's output chunks go through a carry-over
  window (``policy.redact.Carry``) so a secret's start is never released apart from its end; an
  event that ends a text block releases what the window holds first.
- The rollout gets a scrubbed copy of the events that carry model or tool text.
- A turn's end is the durability point: its ``turn_done`` goes to the store in one
  ``TurnEnd``, which writes it — or, when a write failed since the last sync, the error and an
  error turn_done instead — and fsyncs the rollout: one turn_done per turn, and it tells the
  truth about the disk. Nobody waits for the store: the session goes on handling its messages
  (the relayed ends of hundreds of interrupted subagents, behind whose store traffic the answer
  may queue), while its surfaces see nothing of its own after that turn_done — the turn_done
  itself included, which the answer may turn into an error — until the answer comes
  (:class:`Synced` wakes the session; :meth:`Recorder.settle`). So every event is in the rollout
  before a surface shows the next turn, and a failed disk still ends the turn with the error.
  Relayed subagent events (``agent_event``) are not held: they are the children's, recorded and
  fsynced by the tree as before, and their ends are what an interrupt waits for.
- Lines leave in batches: the session's actor calls :meth:`Recorder.flush` when it has handled a
  message (``more``: others are waiting, so a batch may grow), and every sync, store message and
  close flushes first. One ``Append`` carries the batch, written with one ``write``: an interrupt
  of hundreds of subagents, each ending its turn with three lines and its parent relaying two,
  costs the one store writer a message per handled message, not per line. A sink with a
  ``flush`` (a subagent's relay to its parent) is flushed with it, after the lines.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import pykka

from cox.actors.store import messages as sm
from cox.log import get_logger
from cox.policy.redact import Carry
from cox.protocol import messages as m
from cox.protocol.types import StopReason, ToolResult
from cox.supervisors.timer import scheduler

log = get_logger("cox.session")

Sink = Callable[[Any, str], None]
"""A surface's receiver: called with (event, its scrubbed JSON line), in order, on the session thread."""

ROLLOUT_SCRUBBED = {"text_delta", "tool_call_output", "tool_call_done", "assistant_message",
                    "error", "notice", "turn_done"}  # the last three carry provider error messages
"""(``agent_event`` is not among them: it wraps the child's line as the child's own rollout holds
it, scrubbed there by the same rule.)"""
MID_BLOCK = {"text_delta", "notice"}
"""Events that may come in the middle of a text block (a background notice); any other ends it."""
BATCH_LINES = 256
BATCH_BYTES = 256 * 1024
"""A batch held while more messages wait is sent once it reaches either bound."""
SYNC_WAIT_S = 10.0
"""How long a turn's end waits for the store's answer before it ends with the error."""


class Synced:
    """Told to the session when a turn end it sent has its answer: it calls :meth:`Recorder.settle`."""

    __slots__ = ()


class PendingEnd:
    """A turn_done sent to the store and not shown yet. Answered once, from any thread (the
    store's, the dying store's, or the timer's when the store never answers)."""

    def __init__(self, event: Any, line: str, post: Callable[[], None]) -> None:
        self.event, self.line, self.post = event, line, post
        self.answer: BaseException | None = None
        self.done = threading.Event()
        self._lock = threading.Lock()
        self.stop_clock: Callable[[], None] = lambda: None

    def reply(self, answer: BaseException | None) -> None:
        with self._lock:
            if self.done.is_set():
                return
            self.answer = answer
            self.done.set()
        self.stop_clock()
        try:
            self.post()
        except pykka.ActorDeadError:  # the session is gone: its close waited on ``done``
            pass


class Recorder:
    def __init__(self, session_id: str, store: Callable[[], pykka.ActorRef[Any] | None], sinks: list[Sink],
                 turns: Callable[[], int], durable: bool = True, post: Callable[[], None] | None = None) -> None:
        self.session_id = session_id
        self.store = store
        self.sinks = sinks
        self.turns = turns
        self.durable = durable
        """fsync and update the index row at each turn's end, and check the writes before and
        after the turn_done line. A subagent's session does none of it: hundreds of them may end
        at once (an interrupt), and each waiting for the one store writer put the whole tree's
        ends behind that queue. Its writes are still in order (one writer); a failed one reaches
        it as ``StorageFailed`` (an error event, relayed to the parent), its row is updated when
        it closes, and the parent's own turn-end check covers the disk the tree shares."""
        self.pending: list[str] = []
        """Rollout lines not yet sent to the store (in order); :meth:`flush` sends them."""
        self.pending_bytes = 0
        self.flushers = [f for f in (getattr(s, "flush", None) for s in sinks) if f is not None]
        self.carry = Carry()
        self.output_carry: dict[str, Carry] = {}
        self.storage_episode = 0
        """The last storage failure reported (``store.actor.StorageError.episode``)."""
        self.open_turn: int | None = None
        self.open_calls: list[str] = []
        """What the surfaces saw begin and not end: a crash closes exactly these."""
        self.post = post
        """Wakes the session when a turn end is answered (None: each turn end is waited for here)."""
        self.gate: deque[PendingEnd | tuple[Any, str]] = deque()
        """The session's own events the surfaces have not seen, behind a turn end not answered yet."""
        self.stashed: list[Any] = []
        """Storage failures told while a turn end was not answered: that answer may be the same failure."""

    def emit(self, event: Any, line: str | None = None) -> None:
        """``line``: the event's line when the caller has it already (a relayed child's event)."""
        if line is not None:
            self._out(event, line)
            return
        if event.type == "text_delta":
            shown = self.carry.feed(event.text)  # a tail that may start a secret waits for the next delta
            if not shown:
                return
            event = m.TextDelta(text=shown)
        elif event.type == "tool_call_output":
            shown = self.output_carry.setdefault(event.call_id, Carry()).feed(event.chunk)
            if not shown:
                return
            event = m.ToolCallOutput(call_id=event.call_id, chunk=shown)
        self._out(event)

    def close_open(self, why: str, turn: int | None) -> None:
        """After a crash: end what the surfaces saw begin — each open call aborted, the open turn
        (or ``turn``, the one the machine had begun, when its turn_started never went out) with
        an error — so every surface still gets its one turn_done."""
        self._settle_all()
        if self.open_turn is not None or turn is not None:  # else no turn was under way: nothing is open
            self.emit(m.ErrorEvent(message=why, fatal=True))
            if self.open_turn is None and turn is not None:
                self.emit(m.TurnStarted(turn=turn))
            for call_id in list(self.open_calls):
                self.emit(m.ToolCallDone(call_id=call_id, result=ToolResult.aborted(f"aborted: {why}")))
            if self.open_turn is not None:
                self.emit(m.TurnDone(turn=self.open_turn, stop=StopReason.ERROR, reason=why))
        self._settle_all()  # the session will not hear the answer (it is failing): wait for it here
        self.flush()

    def flush(self, more: bool = False) -> None:
        """Send the lines held to the store as one ``Append`` (``more``: other messages wait for
        the session, so the batch is held until it is big enough), then flush the sinks that ask."""
        if more and len(self.pending) < BATCH_LINES and self.pending_bytes < BATCH_BYTES:
            return
        lines, self.pending, self.pending_bytes = self.pending, [], 0
        if lines:
            store = self.store()
            if store is not None:
                store.tell(sm.Append(self.session_id, "\n".join(lines)))
        for flush in self.flushers:
            try:
                flush()
            except Exception:
                log.exception("surface sink failed")

    def tell(self, message: Any) -> None:
        """A store message of the session's own (a title, a usage row): after the lines before it."""
        self.flush()
        store = self.store()
        if store is not None:
            store.tell(message)

    def close(self) -> None:
        """The session ends: what is held goes out, then the store closes its rollout (a subagent's
        unsynced one is fsynced here and its row gets its turn count)."""
        self._settle_all()
        self.flush()
        store = self.store()
        if store is None:
            return
        try:
            store.ask(sm.Close(self.session_id, self.durable, None if self.durable else {"turns": self.turns()}),
                      timeout=5)
        except Exception:
            log.warning("store close failed", session=self.session_id)

    def fresh_failure(self, episode: int, told: Any = None) -> bool:
        """A storage failure not reported yet (the turn-end sync may have reported it). While a
        turn end is not answered, the failure ``told`` is kept: that answer may be this failure
        (then it is reported once, as the turn's end); :meth:`settle` hands back the others."""
        if episode <= self.storage_episode:
            return False
        if told is not None and any(isinstance(x, PendingEnd) for x in self.gate):
            self.stashed.append(told)
            return False
        self.storage_episode = episode
        return True

    def settle(self, wait: bool = False) -> list[Any]:
        """Show what the answered turn ends held back, in order (``wait``: wait for each answer,
        bounded); the storage failures kept meanwhile that no answer reported, once none is
        awaited, for the session to handle again."""
        gate = self.gate
        while gate:
            head = gate[0]
            if isinstance(head, PendingEnd):
                if not head.done.is_set():
                    if not wait:
                        break
                    if not head.done.wait(SYNC_WAIT_S):
                        head.reply(TimeoutError(f"the store did not answer within {SYNC_WAIT_S:.0f} s"))
                gate.popleft()
                self._ended(head)
            else:
                gate.popleft()
                self._to_sinks(*head)
        if any(isinstance(x, PendingEnd) for x in gate):
            return []
        again = [x for x in self.stashed if x.episode > self.storage_episode]
        self.stashed = []
        return again

    def _settle_all(self) -> None:
        """Before the session's last words: every turn end answered and shown; a failure kept
        for a turn end that did not report it is said now."""
        for told in self.settle(wait=True):
            if self.fresh_failure(told.episode):
                self._out(m.ErrorEvent(message=told.sentence))

    def _ended(self, end: PendingEnd) -> None:
        """A turn end's answer came: its turn_done reaches the surfaces, an error if the answer is one."""
        event, line, answer = end.event, end.line, end.answer
        if answer is not None:
            self.storage_episode = max(self.storage_episode, getattr(answer, "episode", 0))
            failure = str(answer) if type(answer).__name__ == "StorageError" else f"could not sync the rollout: {answer}"
            log.error("rollout sync failed", error=failure)
            if event.stop is not StopReason.ERROR:
                # The store wrote the error and this error turn_done (a write before the end failed),
                # or the turn_done line itself failed: the surfaces hear the error either way.
                error = m.ErrorEvent(message=failure)
                self._to_sinks(error, m.encode_scrubbed(error)[0])
                event = m.TurnDone(turn=event.turn, stop=StopReason.ERROR, reason=failure)
                line = m.encode(event)
        self._to_sinks(event, line)

    def _end_turn(self, store: pykka.ActorRef[Any], event: Any, line: str) -> None:
        """Send the turn's end to the store (``sm.TurnEnd``) and hold the surfaces' view from
        its turn_done on until the answer."""
        self.flush()  # the lines before it go first
        failed = None
        if event.stop is not StopReason.ERROR:
            def failed(sentence: str) -> str:
                error = m.ErrorEvent(message=sentence)
                done = m.TurnDone(turn=event.turn, stop=StopReason.ERROR, reason=sentence)
                return m.encode_scrubbed(error)[0] + "\n" + m.encode(done)
        end = PendingEnd(event, line, self.post or (lambda: None))
        self.gate.append(end)
        end.stop_clock = scheduler.call_later(SYNC_WAIT_S, lambda: end.reply(
            TimeoutError(f"the store did not answer within {SYNC_WAIT_S:.0f} s")))
        try:
            store.tell(sm.TurnEnd(self.session_id, line, failed, {"turns": self.turns()}, end.reply))
        except pykka.ActorDeadError as exc:
            end.reply(exc)
        if self.post is None:
            self.settle(wait=True)

    def _out(self, event: Any, given: str | None = None) -> None:
        if self.carry.held and event.type not in MID_BLOCK:
            self._out(m.TextDelta(text=self.carry.flush()))
        if event.type == "tool_call_done":
            output = self.output_carry.pop(event.call_id, None)
            if output is not None and output.held:
                self._out(m.ToolCallOutput(call_id=event.call_id, chunk=output.flush()))
        if given is not None:
            line, changed = given, False
        elif event.type in ROLLOUT_SCRUBBED:
            line, changed = m.encode_scrubbed(event)
        else:
            line, changed = m.encode(event), False
        store = self.store()
        if store is not None and event.type == "turn_done" and self.durable:
            self._end_turn(store, event, line)
            return
        if store is not None:
            self.pending.append(line)
            self.pending_bytes += len(line)
        if self.gate and event.type != "agent_event":
            self.gate.append((event, line))  # the session's own: after the turn end not answered yet
        else:
            self._to_sinks(event, line)
        if changed and event.type == "tool_call_done":
            self._out(m.Notice(level="security",
                               message="tool output contained a secret-shaped string; redacted in the rollout"))

    def _to_sinks(self, event: Any, line: str) -> None:
        for sink in self.sinks:
            try:
                sink(event, line)
            except Exception:
                log.exception("surface sink failed")
        kind = event.type  # what the surfaces have seen, once they have
        if kind == "turn_started":
            self.open_turn = event.turn
        elif kind == "turn_done":
            self.open_turn = None
            self.open_calls.clear()
        elif kind == "tool_call_requested":
            self.open_calls.append(event.call.id)
        elif kind == "tool_call_done" and event.call_id in self.open_calls:
            self.open_calls.remove(event.call_id)
