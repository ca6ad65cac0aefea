"""What ``--verbose`` tells a person about a session while it runs, one ``cox: trace:`` line each:
every model request (its size in tokens, its time, its cost) and every tool call as it ends
(status and duration; text output names each call as it starts, ``● bash  ls``). Permission decisions are logged by the session where they are
made (``cox.session``: decision, reason, time). The lines go through logging at DEBUG, so they
reach stderr only under ``--verbose`` (and then the log file too), scrubbed of secret shapes
and terminal escapes like every status line.
"""

from __future__ import annotations

import logging
from typing import Any

from cox.policy.redact import scrub
from cox.policy.sanitize import sanitize

log = logging.getLogger("cox.trace")


def _shown(text: str) -> str:
    return sanitize(scrub(text)[0]).replace("\n", " ")


class Trace:
    """Turns session events into trace lines; cheap (one check) when DEBUG is off."""

    def __init__(self) -> None:
        self.calls: dict[str, str] = {}
        self.requests = 0

    def event(self, event: Any) -> None:
        if not log.isEnabledFor(logging.DEBUG):
            return
        t = event.type
        if t == "usage":
            self.requests += 1
            u = event.usage
            cached = f", {u.cache_read_tokens:,} from the cache" if u.cache_read_tokens else ""
            took = f"{event.api_ms:.0f} ms" if getattr(event, "api_ms", None) is not None else "time unknown"
            log.debug("model request #%d to %s: %s tokens in%s, %s out, %s, $%.4f", self.requests,
                      _shown(str(u.model)), f"{u.input_tokens:,}", cached, f"{u.output_tokens:,}", took, u.cost_usd)
        elif t == "tool_call_requested":
            call = event.call
            self.calls[call.id] = f"{_shown(call.name)} {_shown(call.subject or '')}".strip()
        elif t == "tool_call_done":
            r = event.result
            ms = getattr(event, "duration_ms", None)
            log.debug("tool call %s done: %s, %s%s", event.call_id, self.calls.get(event.call_id, "?"),
                      getattr(r.status, "value", r.status), f" in {ms:.0f} ms" if ms is not None else " (did not run)")
