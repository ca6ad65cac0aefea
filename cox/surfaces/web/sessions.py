"""The web agent mode's sessions: each a real cox session in this process's ``App``, opened the
way every surface opens one (``commands.prepare``, ``session_tools``, ``open_session``), so the
permission engine, grants, sandbox, hooks and rollout are the same as the TUI's and ``cox run``'s.

A :class:`Bridge` pumps one session's events (a thread reading the handle's queue) to the turn
stream that is listening, and remembers which approvals are open, so an answer for a call that
does not wait is refused instead of reaching the session. An unknown session id is loaded from the
store (``--resume``'s path: the rollout rebuilt, the session's lock claimed), so a session survives
a restart of the server.
"""

from __future__ import annotations

import argparse
import re
import threading
from collections.abc import Callable
from typing import Any

from cox.protocol import messages as m

from .frames import Frame, TurnFrames
from .validate import THINKING_BUDGET, Settings

ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
CANCEL_WAIT_S = 15.0
"""How long a new turn waits for the one whose stream closed to finish being interrupted (bash
calls get their process group killed; the session's own grace is 10 s)."""
STOP: tuple[Any, str] = (None, "")
"""Put on a session's event queue to end its pump."""


class Busy(Exception):
    """A turn of this session is running; ``str()`` says so."""


class Unknown(Exception):
    """No such session or approval; ``str()`` says which and what to do."""


class Bridge:
    def __init__(self, handle: Any, model: str) -> None:
        self.handle = handle
        self.model = model
        self.lock = threading.Condition()
        self.cancelling = False
        """The running turn's stream closed: it is being interrupted, and the next turn waits for it."""
        self.listener: Callable[[Frame | None], None] | None = None
        self.frames: TurnFrames | None = None
        self.running = False
        self.pending: set[str] = set()
        self.thread = threading.Thread(target=self._pump, name=f"web-session-{handle.session_id}", daemon=True)
        self.thread.start()

    @property
    def session_id(self) -> str:
        return str(self.handle.session_id)

    def begin(self, listener: Callable[[Frame | None], None], prompt: str, effort: str | None = None) -> None:
        """Start a turn whose frames go to ``listener`` (None after the last); Busy when one runs
        whose stream is open. One being cancelled (its stream closed) is waited for first."""
        with self.lock:
            if self.running and self.cancelling:
                self.lock.wait_for(lambda: not self.running, timeout=CANCEL_WAIT_S)
            if self.running:
                raise Busy(f"session {self.session_id} is running a turn; wait for its done event "
                           "(or close that stream to cancel it) and send the prompt again")
            if not self.handle.alive():
                raise Unknown(f"session {self.session_id} has ended; start a new one")
            self.running = True
            self.listener = listener
            self.frames = TurnFrames(self.model)
        self.handle.submit(m.UserTurn(text=prompt, effort=effort))  # the turn's own effort, over the session's

    def closed(self, finished: bool) -> None:
        """The turn's stream closed; before its done event it means cancel the turn."""
        with self.lock:
            self.listener = None
            running = self.running
            self.cancelling = running and not finished
        if running and not finished:
            self.handle.interrupt()

    def answer(self, approval_id: str, decision: Any) -> None:
        with self.lock:
            if approval_id not in self.pending:
                raise Unknown(f"no approval {approval_id!r} is waiting in session {self.session_id}")
            self.pending.discard(approval_id)
        self.handle.submit(m.Approve(call_id=approval_id, decision=decision))

    def _pump(self) -> None:
        while True:
            event, _line = self.handle.events.get()
            if event is None:
                return
            with self.lock:
                if isinstance(event, m.ApprovalRequired):
                    self.pending.add(event.call.id)
                elif isinstance(event, m.ToolCallDone):
                    self.pending.discard(event.call_id)
                frames = self.frames.of(event) if self.frames is not None else []
                listener = self.listener
                if isinstance(event, m.TurnDone):
                    self.running = self.cancelling = False
                    self.lock.notify_all()
                    self.pending.clear()
                    self.listener = None
                    if self.frames is not None:
                        self.model = self.frames.model
                    self.frames = None
            if listener is not None:
                for frame in frames:
                    listener(frame)
                if isinstance(event, m.TurnDone):
                    listener(None)

    def stop(self) -> None:
        self.handle.events.put(STOP)
        self.thread.join(timeout=10)


class Agents:
    """The sessions of one server: created, found, or loaded from the store by id."""

    def __init__(self, app: Any, base: argparse.Namespace) -> None:
        self.app = app
        self.base = base
        self.lock = threading.Lock()
        self.bridges: dict[str, Bridge] = {}

    def _open(self, settings: Settings | None, resume: str | None) -> Bridge:
        from ..commands import Refused, prepare, session_hooks, session_tools

        args = argparse.Namespace(**vars(self.base))
        args.resume = resume
        if settings is not None:
            args.model = settings.model
            args.permission_mode = settings.mode
        try:
            prep = prepare(args, approval_default="on-request")
        except Refused as exc:
            raise Unknown(str(exc)) from None
        if settings is not None:
            prep.settings.think_budget_tokens = THINKING_BUDGET[settings.effort]
        tools, deferred = session_tools(self.app, prep)
        handle = self.app.open_session(prep.settings, prep.provider, tools, prep.engine, prep.resumed,
                                       hooks=session_hooks(prep), deferred=deferred)
        return Bridge(handle, prep.settings.model)

    def create(self, settings: Settings) -> Bridge:
        bridge = self._open(settings, None)
        with self.lock:
            self.bridges[bridge.session_id] = bridge
        return bridge

    def live(self, session_id: str) -> Bridge | None:
        """The session if it runs in this process: the turn route's fast path, on the event loop,
        so it takes no lock (``get`` holds it while it loads a stored session; a dict read is atomic)."""
        bridge = self.bridges.get(session_id)
        return bridge if bridge is not None and bridge.handle.alive() else None

    def get(self, session_id: str) -> Bridge:
        """The live session, or the stored one loaded (Unknown when there is none)."""
        if not ULID.match(session_id):
            raise Unknown(f"{session_id!r} is not a session id (26 characters, as POST /api/agent/sessions returns)")
        with self.lock:
            bridge = self.bridges.get(session_id)
            if bridge is not None and bridge.handle.alive():
                return bridge
            path = self.app.layout.rollout(session_id)
            if not path.is_file():
                raise Unknown(f"no session {session_id}; start one with POST /api/agent/sessions")
            self._same_workspace(session_id, path)
            bridge = self._open(None, session_id)
            self.bridges[session_id] = bridge
            return bridge

    def _same_workspace(self, session_id: str, path: Any) -> None:
        """A stored session of another folder is not this server's to run: its turns would work
        here with that folder's history (``cox --resume`` there continues it)."""
        from pathlib import Path

        from cox.actors.store.rollout import read_rollout

        cwd = Path(getattr(self.base, "cwd", None) or ".").resolve()
        started = next((e for e in read_rollout(path).events if e.get("type") == "session_started"), {})
        if started.get("cwd") != str(cwd):
            raise Unknown(f"session {session_id} belongs to {started.get('cwd') or 'another folder'}, not to {cwd} "
                          "that this cox serve serves; continue it there (cox --resume ID)")

    def close(self) -> None:
        with self.lock:
            bridges = list(self.bridges.values())
            self.bridges.clear()
        for bridge in bridges:
            bridge.handle.shutdown()
        for bridge in bridges:
            bridge.stop()
