"""``--permission-prompt-tool stdio``: every call cox would ask a person about becomes one
``can_use_tool`` control request to the client, and its answer the session's ``Approve``.

- ``{"behavior": "allow"}`` → allow; with an ``updatedInput`` that differs from what was shown →
  the call runs with that input (``Approve{edit}``, the input read back with ``spelling.to_cox``,
  so a callback may answer in Claude Code's field names);
- ``{"behavior": "deny", "message": …}`` → the call is denied and the message is its result for
  the model; the turn goes on (as in Claude Code). ``"interrupt": true`` also interrupts the turn;
- an error response, a malformed answer or a client that does not answer in time → denied, the
  reason given to the model (never allowed by default).

The question never blocks the driver: the answer comes on the stdin thread and is submitted there.
"""

from __future__ import annotations

from typing import Any

from cox.actors.tools.spelling import to_claude, to_cox
from cox.protocol import messages as m
from cox.protocol.types import Decision

from .outgoing import Outgoing

ASK_TIMEOUT_S = 600.0
"""How long a can_use_tool question may stay open; a person may be deciding behind it."""


class Permissions:
    def __init__(self, outgoing: Outgoing, handle_of: Any, cwd: str) -> None:
        self.outgoing = outgoing
        self.handle_of = handle_of
        self.cwd = cwd
        self.open: set[str] = set()

    def ask(self, event: Any) -> None:
        call = event.call
        name, shown = to_claude(call.name, call.input, self.cwd)
        request: dict[str, Any] = {"subtype": "can_use_tool", "tool_name": name, "input": shown,
                                   "permission_suggestions": None, "blocked_path": None, "tool_use_id": call.id}
        if event.reason:
            request["decision_reason"] = event.reason
        if call.subject:
            request["description"] = call.subject

        sent: list[str] = []

        def answer(payload: dict[str, Any] | None, why: str | None) -> None:
            self._decide(call, name, shown, payload, why, sent[0] if sent else "")

        sent.append(self.outgoing.send(request, answer))
        self.open.add(sent[0])

    def turn_ended(self) -> None:
        """The turn is over: a question still open about one of its calls is withdrawn
        (``control_cancel_request``), so the client stops asking a person about it."""
        for request_id in list(self.open):
            self.outgoing.cancel(request_id, "the turn ended before the client answered")
        self.open.clear()

    def _decide(self, call: Any, name: str, shown: dict[str, Any], payload: dict[str, Any] | None,
                why: str | None, request_id: str) -> None:
        self.open.discard(request_id)
        handle = self.handle_of()
        if handle is None or (why is not None and why.startswith("the turn ended")):
            return
        interrupt = False
        if why is not None or not isinstance(payload, dict):
            sub = m.Approve(call_id=call.id, decision=Decision.DENY,
                            message=f"denied: the client did not allow this call ({why or 'no answer'})")
        elif payload.get("behavior") == "allow":
            updated = payload.get("updatedInput")
            if isinstance(updated, dict) and updated != shown:
                _, given = to_cox(name, updated)
                sub = m.Approve(call_id=call.id, decision=Decision.EDIT, edited_input=given)
            else:
                sub = m.Approve(call_id=call.id, decision=Decision.ALLOW)
        elif payload.get("behavior") == "deny":
            message = payload.get("message")
            text = message if isinstance(message, str) and message.strip() else "denied by the client"
            sub = m.Approve(call_id=call.id, decision=Decision.DENY, message=text)
            interrupt = payload.get("interrupt") is True
        else:
            sub = m.Approve(call_id=call.id, decision=Decision.DENY,
                            message=f"denied: the client's answer has no behavior allow or deny ({payload!r:.200})")
        handle.submit(sub)
        if interrupt:
            handle.interrupt()
