"""An ``approval_required`` as ACP's ``session/request_permission``, and the answer as the
``Approve`` submission every surface sends.

The four options map onto the session's own machinery: allow once is ``allow``; allow always is
``allow_for_session`` (the session grant the engine records with ``grants_for``, normalised as
its rules are); reject once is ``deny`` (the turn ends and the model is told to ask); reject
always is that deny plus a deny for the rest of the session: the call's grant keys (the same
``grants_for``) are remembered, and a later call whose keys meet them is denied without asking,
the model told why, the turn going on. Nothing here decides what may run: a call reaches this
module only because the engine asked.

A ``cancelled`` outcome (the client cancelled the prompt, or dropped the request) is no answer:
when the turn still waits, the call is denied as reject once is.
"""

from __future__ import annotations

from typing import Any

from acp.schema import PermissionOption

from cox.protocol import messages as m
from cox.protocol.types import Decision

__all__ = ["ALLOW_ALWAYS", "ALLOW_ONCE", "OPTIONS", "REJECT_ALWAYS", "REJECT_ONCE", "SessionDenies", "answer"]

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS = "allow_once", "allow_always", "reject_once", "reject_always"

OPTIONS = [
    PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
    PermissionOption(option_id=ALLOW_ALWAYS, name="Allow for this session", kind="allow_always"),
    PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"),
    PermissionOption(option_id=REJECT_ALWAYS, name="Reject for this session", kind="reject_always"),
]


class SessionDenies:
    """What "reject always" refused, as the engine's grant keys for the calls it refused."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.keys: set[str] = set()

    def _keys(self, call: Any) -> set[str]:
        try:
            return set(self.engine.grants_for(call))
        except Exception:
            return set()

    def add(self, call: Any) -> None:
        self.keys |= self._keys(call)

    def covering(self, call: Any) -> str | None:
        """The remembered key that denies ``call`` (any of its commands, for a bash line)."""
        hit = sorted(self._keys(call) & self.keys)
        return hit[0] if hit else None


def answer(call: Any, outcome: Any, denies: SessionDenies) -> m.Approve:
    """The Approve for the client's ``RequestPermissionResponse.outcome``."""
    chosen = getattr(outcome, "option_id", None) if getattr(outcome, "outcome", None) == "selected" else None
    if chosen == ALLOW_ONCE:
        return m.Approve(call_id=call.id, decision=Decision.ALLOW)
    if chosen == ALLOW_ALWAYS:
        return m.Approve(call_id=call.id, decision=Decision.ALLOW_FOR_SESSION)
    if chosen == REJECT_ALWAYS:
        denies.add(call)
    return m.Approve(call_id=call.id, decision=Decision.DENY)


def denied_before(call: Any, key: str) -> m.Approve:
    """The answer for a call "reject always" already covers: denied, the model told why."""
    return m.Approve(call_id=call.id, decision=Decision.DENY,
                     message=f"denied: the user rejected `{key}` for this session; do not ask for it again")
