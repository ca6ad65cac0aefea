"""A session's checkpoints: the turn markers /rewind goes back to, and restoring code.

Kept out of the session actor so the turn loop does not carry the checkpointer's life cycle
(made on first need, off without git, closed at the end) or the marker writes. Nothing here
writes cox.db and no thread is started: the markers, like the checkpointer's rows, are messages
to the store actor, cox.db's one writer. Nothing here emits: what the person must hear comes
back as ``(level, message)`` notices that the session emits on its own thread, in its turn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cox.protocol.types import NoticeLevel

Said = list[tuple["NoticeLevel", str]]
"""Notices for the person, as (level, message), emitted by the caller in order."""

MARKER_WAIT_S = 2.0
"""The most a turn end or a stop waits for the turn markers, in total."""


class SessionCheckpoints:
    def __init__(self, session_id: str, root: Path, cox_home: Path | None, enabled: bool,
                 store: Callable[[], Any] | None = None) -> None:
        self.session_id = session_id
        self.root = root
        self.cox_home = cox_home
        self.store = store or (lambda: None)
        """The store actor (called at each use: a restarted store is found again)."""
        self.cp: Any = None
        self.state = "on" if enabled else "off"
        self.lock = threading.Lock()
        self.markers: list[Any] = []  # the store's futures for the markers sent, oldest first
        self.marker_root: str | None = None

    def checkpointer(self, said: Said) -> Any:
        """The session's checkpointer, made on first need; None without git, after one warning
        into ``said``. The lock: a tool call's thread may reach it through ``for_call``'s
        checkpointer while the session's thread asks for it."""
        with self.lock:
            if self.state == "off":
                return None
            if self.cp is None:
                from cox.actors.store.checkpoints import Checkpointer
                from cox.actors.store.layout import Layout, cox_home

                ok, why = Checkpointer.available()
                if not ok:
                    self.state = "off"
                    said.append(("warning", f"no checkpoints in this session ({why}); /rewind cannot restore code"))
                    return None
                self.cp = Checkpointer(Layout(self.cox_home or cox_home()), self.root, store=self.store)
            return self.cp

    def for_call(self, turn: int, said: Said) -> Any:
        """What a writing call's tool environment gets to save pre-images under ``turn`` (None:
        no checkpoints in this session)."""
        cp = self.checkpointer(said)
        return None if cp is None else (cp, self.session_id, turn)

    def mark(self, turn: int, text: str) -> None:
        """The turn's /rewind marker: one message to the store actor, not waited for (the store
        writes it, in order, before the turn's closing ``Sync``), so neither the reply's first
        deltas nor the session's thread wait on a db row, and no thread is started for it. No
        checkpointer is needed for a marker (no git probe here); a failure is a warning at
        ``settle``."""
        if self.state == "off":
            return
        store = self.store()
        if store is None:
            return
        from cox.actors.store.messages import Marker

        if self.marker_root is None:
            self.marker_root = str(Path(self.root).resolve())  # the checkpointer's key for this root
        self.markers.append(store.ask(Marker(self.session_id, turn, self.marker_root, text), block=False))

    def settle(self, within_s: float = MARKER_WAIT_S) -> Said:
        """Wait for the store to have written the markers sent so far and hand over their
        warnings: before a turn's turn_done, so a warning is part of its turn, and before a
        rewind reads the markers. Bounded in total, so a stuck disk or a locked database cannot
        hold up a turn's end or the session's stop; a marker still pending is waited for the
        next time."""
        import pykka

        deadline = time.monotonic() + within_s
        said: Said = []
        pending: list[Any] = []
        for future in self.markers:
            try:
                future.get(timeout=max(0.0, deadline - time.monotonic()))
            except pykka.Timeout:
                pending.append(future)
            except pykka.ActorDeadError:
                said.append(("warning", "checkpoint marker failed: the store stopped before it was written"))
            except Exception as exc:  # noqa: BLE001 - the store's StorageError, or a bug: a warning either way
                said.append(("warning", f"checkpoint marker failed: {exc}"))
        self.markers = pending
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
        if self.cp is not None:
            self.cp.close()
