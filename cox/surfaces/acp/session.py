"""One ACP session: a cox session's handle, the thread that relays its events onto the event loop,
and the task that sends them to the client in order.

The session is an ordinary cox session (``App.open_session``, the rollout, the engine); this
module only interprets its Events (``updates.Translator``) and turns the client's requests into
Submissions: ``session/prompt`` a ``UserTurn`` answered at its ``turn_done``, ``session/cancel``
the broadcast ``Interrupt``, ``session/set_mode`` a ``SetMode``, each permission answer an
``Approve`` (``permission``). Events leave in the order the session emitted them: one consumer
task sends each update before it looks at the next event; a permission request is a task of its
own, so a client that takes its time to answer never stops the stream.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

from acp import RequestError
from acp.schema import PromptResponse, ToolCallUpdate

from cox.policy.redact import REDACTED
from cox.policy.sanitize import sanitize
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode

from .permission import OPTIONS, SessionDenies, answer, denied_before
from .updates import Translator, stop_reason

__all__ = ["MODES", "AcpSession", "mode_state"]

log = logging.getLogger(__name__)

SETTLE_S = 10.0
"""The longest a prompt's answer waits for the editor to kill a cancelled call's terminal."""
DEAD = object()
"""Put on the queue by the relay thread when the session stopped without being asked to."""

MODES = [("default", "Default", "edits and commands that are not read-only ask"),
         ("acceptEdits", "Accept edits", "edits in the workspace run without asking"),
         ("plan", "Plan", "read-only: the model describes the change instead of making it"),
         ("architect", "Architect", "plan mode, main turns on the think tier"),
         ("editor", "Editor", "back to the configured mode, main turns on the code tier")]
PRESETS = ("architect", "editor")


def mode_state(current: str) -> Any:
    from acp.schema import SessionMode, SessionModeState

    return SessionModeState(current_mode_id=current,
                            available_modes=[SessionMode(id=i, name=n, description=d) for i, n, d in MODES])


def _call_update(call: Any, shown_id: str) -> ToolCallUpdate:
    from .updates import kind_of

    return ToolCallUpdate(tool_call_id=shown_id, title=sanitize(f"{call.name} {call.subject}".strip())[:300],
                          kind=kind_of(call.name), status="pending", raw_input=dict(call.input or {}))


@dataclass(frozen=True)
class TerminalShown:
    """A call's bash now runs in the editor's terminal ``terminal_id`` (``terminal.Terminal``)."""

    call_id: str
    terminal_id: str


class AcpSession:
    def __init__(self, conn: Any, handle: Any, prep: Any, *, mode: str, commands: Any = None,
                 client: Any = None) -> None:
        self.conn = conn
        self.client = client
        """The ``bridge.Client`` its tools reach the editor through (None: none offered)."""
        self.handle = handle
        self.prep = prep
        self.id: str = handle.session_id
        self.commands = commands
        self.mode = mode
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.held: Any = None
        self.translator = Translator()
        self.denies = SessionDenies(prep.engine)
        self.turn: asyncio.Future[tuple[str, str | None]] | None = None
        self.cancelled = False
        self.asking: set[asyncio.Task[None]] = set()
        self.closed = threading.Event()
        self.consumer = self.loop.create_task(self._consume())
        self.relay = threading.Thread(target=self._relay, name=f"cox-acp-{self.id}", daemon=True)
        self.relay.start()

    # --- events ---------------------------------------------------------------------------

    def _relay(self) -> None:
        """The session's (event, line) queue onto the loop's queue (its own thread: the
        handle's queue blocks)."""
        events = self.handle.events
        while not self.closed.is_set():
            try:
                event, line = events.get(timeout=0.25)
            except queue.Empty:
                if not self.handle.alive():
                    if not self.closed.is_set():
                        self._put(DEAD)
                    return
                continue
            if event is None:
                continue
            if REDACTED in line:  # what the rollout holds: the scrubbed event, not the raw one
                try:
                    event = m.decode_event(line)
                except m.ProtocolError:
                    continue
            self._put(event)

    def _put(self, item: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: the process is ending
            pass

    async def _next(self) -> Any:
        """The next event; text deltas already waiting behind one are joined into it (under a
        burst one update carries them all; the first delta of a reply never waits)."""
        event = self.held if self.held is not None else await self.queue.get()
        self.held = None
        if getattr(event, "type", None) != "text_delta" or self.queue.empty():
            return event
        texts = [event.text]
        while not self.queue.empty():
            later = self.queue.get_nowait()
            if getattr(later, "type", None) != "text_delta":
                self.held = later
                break
            texts.append(later.text)
        return m.TextDelta(text="".join(texts))

    async def _consume(self) -> None:
        while True:
            event = await self._next()
            if event is DEAD:
                self._end("error", "the session stopped unexpectedly")
                return
            if isinstance(event, TerminalShown):
                await self._show_terminal(event)
                continue
            try:
                for update in self.translator.updates(event):
                    await self.conn.session_update(self.id, update)
            except Exception:  # the client went away, or a bug: the session goes on
                log.exception("session/update failed")
            t = event.type
            if t == "approval_required":
                task = self.loop.create_task(self._ask(event.call))
                self.asking.add(task)
                task.add_done_callback(self.asking.discard)
            elif t == "question":  # ACP's elicitation is unstable: declined, honestly, as headless does
                self.handle.submit(m.Answer(question_id=event.question_id, declined=True))
            elif t == "turn_done":
                await self._settle()
                self._end(event.stop.value, event.reason)

    async def _show_terminal(self, shown: TerminalShown) -> None:
        from acp import helpers as h

        cid = self.translator.shown_id(shown.call_id)
        if not self.translator.running(cid):
            return  # it ended (an interrupt) before its terminal was shown
        try:
            await self.conn.session_update(self.id, h.update_tool_call(
                cid, status="in_progress", content=[h.tool_terminal_ref(shown.terminal_id)]))
        except Exception:
            log.exception("session/update failed")

    async def _settle(self) -> None:
        """Wait (bounded) for what a cancelled call left under way in the editor (a terminal's
        kill), so a ``cancelled`` answer means the turn's processes are gone."""
        pending = list(self.client.settling) if self.client is not None else []
        if pending:
            await asyncio.wait([asyncio.wrap_future(f) for f in pending], timeout=SETTLE_S)

    def _end(self, stop: str, reason: str | None) -> None:
        turn, self.turn = self.turn, None
        if turn is not None and not turn.done():
            turn.set_result((stop, reason))

    async def _ask(self, call: Any) -> None:
        key = self.denies.covering(call)
        if key is not None:
            self.handle.submit(denied_before(call, key))
            return
        try:
            response = await self.conn.request_permission(self.id, _call_update(call, self.translator.shown_id(call.id)),
                                                            OPTIONS)
            outcome = response.outcome
        except Exception as exc:  # the client failed the request: nobody allowed the call
            log.warning("session/request_permission failed: %s", exc)
            outcome = None
        if self.cancelled or self.turn is None:
            return  # the turn was cancelled: the interrupt already ended the call
        self.handle.submit(answer(call, outcome, self.denies))

    # --- requests -------------------------------------------------------------------------

    async def prompt(self, turn: m.UserTurn) -> PromptResponse:
        if self.turn is not None:
            raise RequestError.invalid_request({"message": "a prompt is already running in this session; "
                                                "cancel it (session/cancel) or wait for its answer"})
        fut: asyncio.Future[tuple[str, str | None]] = self.loop.create_future()
        self.turn, self.cancelled = fut, False
        if not self.handle.submit(turn):
            self.turn = None
            raise RequestError.internal_error({"message": "the session is not running; start a new one"})
        stop, reason = await fut
        mapped = stop_reason(stop)
        if mapped is None:
            raise RequestError.internal_error({"message": sanitize(reason or f"the turn ended: {stop}")})
        return PromptResponse(stop_reason=mapped)

    def cancel(self) -> None:
        if self.turn is None:
            return
        self.cancelled = True
        self.handle.interrupt()

    async def set_mode(self, mode_id: str) -> None:
        if mode_id in PRESETS:
            sub = m.SetMode(preset=mode_id)  # type: ignore[arg-type]
        else:
            try:
                sub = m.SetMode(mode=PermissionMode(mode_id))
            except ValueError:
                raise RequestError.invalid_params({"message": f"unknown mode {mode_id!r}; the modes are "
                                                   + ", ".join(i for i, _, _ in MODES)}) from None
        self.handle.submit(sub)
        self.mode = mode_id if mode_id != "editor" else self.prep.settings.permission_mode.value
        from acp import helpers as h

        await self.conn.session_update(self.id, h.update_current_mode(self.mode))

    async def close(self) -> None:
        self.closed.set()
        self.cancel()
        self._end("interrupted", None)
        self.consumer.cancel()
        for task in list(self.asking):
            task.cancel()
        await asyncio.to_thread(self.handle.shutdown)
