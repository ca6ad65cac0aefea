"""``SessionCheckpoints``' turn markers: messages to the store actor, their failures warnings.

``mark`` sends a ``Marker`` without waiting; ``settle`` waits for the store's answers within a
bound, hands over what failed as a warning (a marker never fails a turn), and keeps a marker the
store has not answered yet for the next time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pykka

from cox.actors.session.checkpointing import SessionCheckpoints
from cox.actors.store.actor import StorageError, StoreActor
from cox.actors.store.layout import Layout
from cox.actors.store.messages import Marker


class FakeStore:
    """Answers nothing by itself: the test settles each marker's future."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, pykka.ThreadingFuture[Any]]] = []

    def ask(self, message: Any, block: bool = True, timeout: float | None = None) -> Any:
        assert block is False  # the session's thread never waits for a marker
        future: pykka.ThreadingFuture[Any] = pykka.ThreadingFuture()
        self.sent.append((message, future))
        return future


def test_a_failed_marker_is_a_warning_and_an_unanswered_one_waits_for_the_next_settle(tmp_path: Path) -> None:
    store = FakeStore()
    cps = SessionCheckpoints("S", tmp_path, tmp_path / "home", True, lambda: store)
    cps.mark(1, "one")
    cps.mark(2, "two")
    (m1, f1), (m2, f2) = store.sent
    assert m1 == Marker("S", 1, str(tmp_path.resolve()), "one") and m2.turn == 2
    f1.set_exception(exc_info=(StorageError, StorageError("could not write the session index: disk full"), None))
    said = cps.settle(within_s=0.0)  # f2 not answered: kept, not reported
    assert said == [("warning", "checkpoint marker failed: could not write the session index: disk full")]
    assert cps.markers == [f2]
    f2.set(None)
    assert cps.settle(within_s=0.0) == [] and cps.markers == []


def test_no_marker_when_checkpoints_are_off_or_no_store_runs(tmp_path: Path) -> None:
    store = FakeStore()
    SessionCheckpoints("S", tmp_path, None, False, lambda: store).mark(1, "x")
    SessionCheckpoints("S", tmp_path, None, True, lambda: None).mark(1, "x")
    assert store.sent == []


def test_markers_through_a_real_store_are_in_the_timeline(tmp_path: Path, layout: Layout, ws: Path) -> None:
    ref = StoreActor.start(layout)
    try:
        cps = SessionCheckpoints("S", ws, layout.home, True, lambda: ref)
        cps.mark(1, "\n  first   words\nmore")
        cps.mark(2, "x" * 200)
        assert cps.settle() == []
        cp = cps.checkpointer([])
        tl = cp.timeline("S")
        assert [(t["turn"], t["title"]) for t in tl] == [(2, "x" * 79 + "…"), (1, "first words")]
        cps.close()
        ref.stop(timeout=30)
        cps.mark(3, "after the store stopped")
        assert cps.settle() == [("warning", "checkpoint marker failed: the store stopped before it was written")]
    finally:
        if ref.is_alive():
            ref.stop(timeout=30)


def test_without_a_running_store_a_checkpoint_is_a_clear_error_and_nothing_is_written(layout: Layout,
                                                                                       ws: Path) -> None:
    """The checkpointer never falls back to writing cox.db itself: no store, no rows — and the
    caller (the ToolCall) turns the error into a note on the call's result."""
    import pytest

    from cox.actors.store.checkpoints import Checkpointer, CheckpointError

    (ws / "a.txt").write_text("one")
    ref = StoreActor.start(layout)
    cp = Checkpointer(layout, ws, store=lambda: ref)
    assert cp.pre_images("S", 1, "c1", [ws / "a.txt"]) == ["a.txt"]
    ref.stop(timeout=30)
    with pytest.raises(CheckpointError, match="the store stopped before it recorded the checkpoint"):
        cp.pre_images("S", 2, "c2", [ws / "a.txt"])
    gone = Checkpointer(layout, ws, store=lambda: None)
    with pytest.raises(CheckpointError, match="the store is not running"):
        gone.pre_images("S", 3, "c3", [ws / "a.txt"])
    rows = cp._db().execute("SELECT turn FROM checkpoints WHERE session_id='S' AND kind!='marker'").fetchall()
    assert rows == [(1,)]
    cp.close()
    gone.close()
