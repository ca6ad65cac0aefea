"""``--include-hook-events``: each command hook's run as Claude Code streams it.

``{"type": "system", "subtype": "hook_started", hook_id, hook_name, hook_event}`` when a hook
starts and ``hook_response`` (the same ids, plus ``output``, ``stdout``, ``stderr``,
``exit_code`` and ``outcome``: ``success``, ``error`` or ``cancelled``) when it ends, as the SDK's
``HookEventMessage`` reads them. ``hook_name`` is the event and what its matcher saw
(``PreToolUse:Bash``), or the event alone. Told by the session's hooks
(``cox.hooks.session.SessionHooks.observe``) from the thread that runs the hook; written through
the one locked wire. A hook's output is scrubbed of secrets like every other line, and cut.
"""

from __future__ import annotations

import uuid
from typing import Any

from cox.policy.redact import scrub

__all__ = ["HookEvents"]

OUTPUT_CAP = 10_000
"""Characters of a hook's stdout (and of its stderr) put in ``hook_response``."""


class HookEvents:
    def __init__(self, wire: Any, session_id: str) -> None:
        self.wire = wire
        self.session_id = session_id

    def started(self, point: str, spec: Any, names: tuple[str, ...] | None) -> dict[str, Any]:
        token = {"hook_id": str(uuid.uuid4()), "hook_name": f"{point}:{names[0]}" if names else point,
                 "hook_event": point}
        self._send("hook_started", token)
        return token

    def ended(self, token: dict[str, Any], outcome: Any) -> None:
        stdout = _text(outcome.stdout)
        stderr = _text(outcome.stderr)
        if outcome.timed_out or outcome.code is None and outcome.error is None:
            result = "cancelled"
        elif outcome.error is not None or outcome.code != 0:
            result = "error"
        else:
            result = "success"
        if outcome.error:
            stderr = (stderr + "\n" + str(outcome.error)).strip()
        self._send("hook_response", {**token, "output": (stdout + ("\n" if stdout and stderr else "") + stderr),
                                     "stdout": stdout, "stderr": stderr, "exit_code": outcome.code,
                                     "outcome": result})

    def _send(self, subtype: str, fields: dict[str, Any]) -> None:
        self.wire.send({"type": "system", "subtype": subtype, **fields, "uuid": str(uuid.uuid4()),
                        "session_id": self.session_id})


def _text(raw: bytes | str | None) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else (raw or "")
    return str(scrub(text[:OUTPUT_CAP])[0])
