"""A session's checkpoints: the turn markers /rewind goes back to, and restoring code.

Kept out of the session actor so the turn loop does not carry the checkpointer's life cycle
(made on first need, off without git, closed at the end) or the marker writes. Nothing here
emits: what the person must hear comes back as ``(level, message)`` notices that the session
emits on its own thread, in its turn.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cox.protocol.types import NoticeLevel

Said = list[tuple["NoticeLevel", str]]
"""Notices for the person, as (level, message), emitted by the caller in order."""

MARKER_WAIT_S = 2.0
"""The most a turn end or a stop waits for the turn markers, in total."""


class SessionCheckpoints:
    def __init__(self, session_id: str, root: Path, cox_home: Path | None, enabled: bool) -> None:
        self.session_id = session_id
        self.root = root
        self.cox_home = cox_home
        self.cp: Any = None
        self.state = "on" if enabled else "off"
        self.lock = threading.Lock()
        self.markers: list[threading.Thread] = []
        self.warnings: list[str] = []

    def checkpointer(self, said: Said | None = None) -> Any:
        """The session's checkpointer, made on first need (by the session's thread or a marker
        thread, hence the lock); None without git, after one warning (into ``said``, or kept for
        the next ``settle`` when it is made off the session's thread)."""
        with self.lock:
            if self.state == "off":
                return None
            if self.cp is None:
                from cox.actors.store.checkpoints import Checkpointer
                from cox.actors.store.layout import Layout, cox_home

                ok, why = Checkpointer.available()
                if not ok:
                    self.state = "off"
                    warning = f"no checkpoints in this session ({why}); /rewind cannot restore code"
                    if said is None:
                        self.warnings.append(warning)
                    else:
                        said.append(("warning", warning))
                    return None
                self.cp = Checkpointer(Layout(self.cox_home or cox_home()), self.root)
            return self.cp

    def for_call(self, turn: int, said: Said) -> Any:
        """What a writing call's tool environment gets to save pre-images under ``turn`` (None:
        no checkpoints in this session)."""
        cp = self.checkpointer(said)
        return None if cp is None else (cp, self.session_id, turn)

    def mark(self, turn: int, text: str) -> None:
        """The turn's /rewind marker, written on a short thread of its own: the first one also
        makes the checkpointer (git --version, the db connection, 5–20 ms), and the reply's first
        deltas must not queue behind it on the session's thread. A warning waits for ``settle``."""
        if self.state == "off":
            return

        def work() -> None:
            from cox.actors.store.checkpoints import CheckpointError

            cp = self.checkpointer()
            if cp is None:
                return
            try:
                cp.marker(self.session_id, turn, text)
            except CheckpointError as exc:
                self.warnings.append(f"checkpoint marker failed: {exc}")

        thread = threading.Thread(target=work, name=f"cox-marker-{turn}", daemon=True)
        self.markers.append(thread)
        thread.start()

    def settle(self, within_s: float = MARKER_WAIT_S) -> Said:
        """Wait for the markers (one db row each) and hand over their warnings: before a turn's
        turn_done, so a warning is part of its turn, and before a rewind reads the markers.
        Bounded in total, so a stuck disk or a locked database cannot hold up a turn's end or the
        session's stop; a marker still running is waited for the next time."""
        deadline = time.monotonic() + within_s
        for thread in self.markers:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self.markers = [t for t in self.markers if t.is_alive()]
        said: Said = []
        while self.warnings:
            said.append(("warning", self.warnings.pop(0)))
        return said

    def restore(self, to_turn: int, next_turn: int, force: bool) -> tuple[bool, Said]:
        """Put every file back as it was when ``to_turn`` began. The rewind's own writes are
        checkpointed under ``next_turn`` (the one the next turn will also use), so rewinding to
        that turn brings the later state back. (done, what to tell the person)."""
        said: Said = []
        cp = self.checkpointer(said)
        if cp is None:
            said.append(("warning", "cannot restore code: this session has no checkpoints"))
            return False, said
        from cox.actors.store.checkpoints import CheckpointError

        try:
            restored = cp.restore(self.session_id, to_turn, next_turn, force=force)
        except CheckpointError as exc:
            said.append(("error", f"rewind failed, nothing was changed: {exc}"))
            return False, said
        message = f"restored {len(restored)} file(s) to how they were before turn {to_turn}"
        if restored:
            message += ": " + ", ".join(restored[:20]) + (" …" if len(restored) > 20 else "")
        for path, why in getattr(restored, "not_restorable", {}).items():
            message += f"\nnot restored: {path} ({why})"
        said.append(("info", message))
        conflicts = getattr(restored, "conflicts", {})
        if conflicts:
            lines = "".join(f"\n  {path}: {why}" for path, why in sorted(conflicts.items())[:50])
            more = f"\n  … and {len(conflicts) - 50} more" if len(conflicts) > 50 else ""
            said.append(("warning", (
                f"rewind conflict: {len(conflicts)} file(s) changed by someone else since this session changed "
                f"them were left alone:{lines}{more}\n/rewind {to_turn} --force overwrites them")))
        return True, said

    def close(self) -> None:
        if self.cp is not None and not self.markers:  # never close it under a running marker
            self.cp.close()
