"""``--resume ID --fork-session``: continue a copy of a session under a new id.

The copy takes the source rollout's whole lines only (a live holder may be mid-append), so the
fork rebuilds the same history and then writes a rollout of its own; the source is never written.
"""

from __future__ import annotations

from cox.atomic import write_atomic
from cox.protocol.types import new_ulid

from .layout import Layout


def fork_rollout(layout: Layout, source_id: str, new_id: str | None = None) -> str:
    """Copy ``source_id``'s rollout to a new session id (``new_id``, default a fresh one) and
    return the new id."""
    data = layout.rollout(source_id).read_bytes()
    cut = data.rfind(b"\n")
    new_id = new_id or new_ulid()
    layout.sessions.mkdir(parents=True, exist_ok=True)
    write_atomic(layout.rollout(new_id), data[: cut + 1] if cut >= 0 else b"", fsync=True)
    return new_id
