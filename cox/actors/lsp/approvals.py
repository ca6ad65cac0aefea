"""``Relay::approve_writes``: a session judging the files a call writes that were unknown when
the call was admitted (rename_symbol: the server names them only once it answers).

Each file is judged by the session's permission engine as an edit of that path, in the live
mode with the session's grants: a deny on any one refuses the whole set and names the file; if
any file asks, the person gets *one* approval listing every file (``ApprovalRequired`` for a call
whose id is the tool call's plus ``/files``), answered once for the set; all allowed: go on. The
wait ends with the turn (an interrupt) or the session. The session actor routes the matching
``Approve`` here (:meth:`WriteApprovals.route`) before its machine sees it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.actors.session.messages import AskWrites
from cox.protocol.types import Decision, Risk, ToolCall

if TYPE_CHECKING:
    import concurrent.futures

__all__ = ["AskWrites", "WriteApprovals"]


class WriteApprovals:
    def __init__(self, session: Any) -> None:
        self.session = session
        self._lock = threading.Lock()
        self._waiting: dict[str, concurrent.futures.Future[Decision]] = {}

    def approve(self, call_id: str, files: list[Path], cancel: Any = None) -> str | None:
        """None when every file may be written, else why not (blocks until the person answers)."""
        s = self.session
        machine = s.machine
        asking: list[str] = []
        for f in files:
            one = ToolCall(id=call_id, name="rename_symbol", input={"path": str(f)}, risk=Risk.WRITE, subject=str(f))
            outcome = s.engine.decide(one, machine.mode, s.s.approval_policy, s.s.sandbox_mode, list(machine.grants))
            kind = str(getattr(outcome.kind, "value", outcome.kind))
            if kind == "deny":
                return f"{f}: {outcome.reason}"
            if kind == "ask":
                asking.append(f"{f} ({outcome.reason})")
        if not asking:
            return None
        key = f"{call_id}/files"
        import concurrent.futures  # with the first rename's approval: not on the way to cox run -p's first request

        future: concurrent.futures.Future[Decision] = concurrent.futures.Future()
        with self._lock:
            self._waiting[key] = future
        names = [str(f) for f in files]
        listed = ToolCall(id=key, name="rename_symbol", input={"files": names}, risk=Risk.WRITE,
                          subject=", ".join(names))
        reason = (f"rename_symbol would change {len(files)} file{'s' if len(files) != 1 else ''}: "
                  + ", ".join(names) + "; asked for: " + "; ".join(asking))
        def interrupted() -> None:
            if not future.done():
                future.set_result(Decision.DENY)

        undo = cancel.on_cancel(interrupted) if cancel is not None else None
        try:
            s.actor_ref.tell(AskWrites(listed, reason))
            decision = future.result()
        finally:
            if undo is not None:
                undo()
            with self._lock:
                self._waiting.pop(key, None)
        if decision in (Decision.ALLOW, Decision.ALLOW_FOR_SESSION):
            return None
        if cancel is not None and cancel.cancelled:
            return "the turn was interrupted while the approval waited"
        return "the person denied the rename of these files"

    def route(self, approve: Any) -> bool:
        """Settle the wait ``approve`` answers; False when it is not one of these."""
        with self._lock:
            future = self._waiting.get(approve.call_id)
        if future is None:
            return False
        if not future.done():
            future.set_result(Decision(approve.decision))
        return True

    def cancel_all(self) -> None:
        with self._lock:
            waiting = list(self._waiting.values())
        for future in waiting:
            if not future.done():
                future.set_result(Decision.DENY)
