"""How an event leaves the session: the rollout first (scrubbed), then every surface, in order.

- Secrets split across deltas: text deltas and each call's output chunks go through a carry-over
  window (``policy.redact.Carry``) so a secret's start is never released apart from its end; an
  event that ends a text block releases what the window holds first.
- The rollout gets a scrubbed copy of the events that carry model or tool text.
- A turn's end is the durability point: before its ``turn_done`` is written the rollout is
  fsynced, and a write that failed since the last sync makes that turn_done an error — one
  turn_done per turn, and it tells the truth about the disk.
- Lines leave in batches: the session's actor calls :meth:`Recorder.flush` when it has handled a
  message (``more``: others are waiting, so a batch may grow), and every sync, store message and
  close flushes first. One ``Append`` carries the batch, written with one ``write``: an interrupt
  of hundreds of subagents, each ending its turn with three lines and its parent relaying two,
  costs the one store writer a message per handled message, not per line. A sink with a
  ``flush`` (a subagent's relay to its parent) is flushed with it, after the lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pykka

from cox.actors.store import messages as sm
from cox.log import get_logger
from cox.policy.redact import Carry
from cox.protocol import messages as m
from cox.protocol.types import StopReason, ToolResult

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


class Recorder:
    def __init__(self, session_id: str, store: Callable[[], pykka.ActorRef[Any] | None], sinks: list[Sink],
                 turns: Callable[[], int], durable: bool = True) -> None:
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
        if self.open_turn is not None or turn is not None:  # else no turn was under way: nothing is open
            self.emit(m.ErrorEvent(message=why, fatal=True))
            if self.open_turn is None and turn is not None:
                self.emit(m.TurnStarted(turn=turn))
            for call_id in list(self.open_calls):
                self.emit(m.ToolCallDone(call_id=call_id, result=ToolResult.aborted(f"aborted: {why}")))
            if self.open_turn is not None:
                self.emit(m.TurnDone(turn=self.open_turn, stop=StopReason.ERROR, reason=why))
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
        self.flush()
        store = self.store()
        if store is None:
            return
        try:
            store.ask(sm.Close(self.session_id, self.durable, None if self.durable else {"turns": self.turns()}),
                      timeout=5)
        except Exception:
            log.warning("store close failed", session=self.session_id)

    def fresh_failure(self, episode: int) -> bool:
        """A storage failure not reported yet (the turn-end sync may have reported it)."""
        if episode <= self.storage_episode:
            return False
        self.storage_episode = episode
        return True

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
        if store is not None:
            if event.type == "turn_done" and event.stop is not StopReason.ERROR and self.durable:
                # Before the turn's end is written: is what the turn did all on disk? If not, the
                # turn did not succeed, and its one turn_done says so.
                failure = self._sync(store, durable=False)  # only: did every write so far succeed?
                if failure is not None:
                    self._out(m.ErrorEvent(message=failure))
                    event = m.TurnDone(turn=event.turn, stop=StopReason.ERROR, reason=failure)
                    line = m.encode(event)
            self.pending.append(line)
            self.pending_bytes += len(line)
            if event.type == "turn_done" and self.durable:
                failure = self._sync(store, durable=True, meta={"turns": self.turns()})
                if failure is not None and event.stop is not StopReason.ERROR:
                    # The turn_done line itself was not written: the surfaces still hear the
                    # error, and the rollout (whole lines only) ends before this turn's end.
                    error = m.ErrorEvent(message=failure)
                    self._to_sinks(error, m.encode(error))
                    event = m.TurnDone(turn=event.turn, stop=StopReason.ERROR, reason=failure)
                    line = m.encode(event)
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

    def _sync(self, store: pykka.ActorRef[Any], durable: bool, meta: dict[str, Any] | None = None) -> str | None:
        """Ask the store whether every write since the last sync succeeded (``durable``: and
        fsync the rollout); its sentence when one failed (the sync itself included), else None."""
        self.flush()
        try:
            store.ask(sm.Sync(self.session_id, meta, durable), timeout=10)
        except Exception as exc:
            log.error("rollout sync failed", error=str(exc))
            self.storage_episode = max(self.storage_episode, getattr(exc, "episode", 0))
            return str(exc) if type(exc).__name__ == "StorageError" else f"could not sync the rollout: {exc}"
        return None
