"""Rollout lines told while the store has other messages waiting are held and written together,
one write per session, before that session's sync answers (or a barrier's); a held write that
fails is that session's failed append: told once, raised by its next sync."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from cox.actors.session.messages import StorageFailed
from cox.actors.store import rollout
from cox.actors.store.actor import StorageError, StoreActor
from cox.actors.store.messages import Append, Open, Sync

from .conftest import Reporter


def lines_of(path: Path) -> list[int]:
    return [json.loads(line)["n"] for line in path.read_text().splitlines()]


def busy(store: StoreActor) -> None:
    store.actor_inbox.put(object())  # another message waits: the store holds what it is told


def idle(store: StoreActor) -> None:
    while not store.actor_inbox.empty():
        store.actor_inbox.get_nowait()
        store.actor_inbox.queue.clear()


def test_lines_told_while_others_wait_are_written_in_one_write_per_session(store: StoreActor,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[Path] = []
    real = rollout.RolloutWriter.append

    def append(self: rollout.RolloutWriter, line: str) -> None:
        writes.append(self.path)
        real(self, line)

    monkeypatch.setattr(rollout.RolloutWriter, "append", append)
    for sid in ("parent", "child"):
        store.on_receive(Open({"id": sid, "cwd": "/w", "model": "m"}))
    busy(store)
    for n in range(50):
        store.on_receive(Append("child", json.dumps({"type": "x", "n": n})))
        store.on_receive(Append("parent", json.dumps({"type": "x", "n": n})))
    assert writes == []  # held, not written, while messages wait
    assert store.on_receive(Sync("parent", durable=True)) is True  # the parent's sync does not wait for the child's
    assert writes == [store.layout.rollout("parent")]
    assert lines_of(store.layout.rollout("parent")) == list(range(50))
    assert lines_of(store.layout.rollout("child")) == []
    idle(store)
    store.on_receive(Append("child", json.dumps({"type": "x", "n": 50})))  # the store is idle: all written now
    assert writes == [store.layout.rollout("parent"), store.layout.rollout("child")]
    assert lines_of(store.layout.rollout("child")) == list(range(51))


def test_a_barrier_writes_every_session_s_held_lines(store: StoreActor) -> None:
    store.on_receive(Open({"id": "a", "cwd": "/w", "model": "m"}))
    busy(store)
    store.on_receive(Append("a", json.dumps({"type": "x", "n": 1})))
    assert store.on_receive(Sync("")) is True
    assert lines_of(store.layout.rollout("a")) == [1]


def test_a_held_write_that_fails_is_told_once_and_raised_by_the_next_sync(store: StoreActor,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    reporter = Reporter()
    store.on_receive(Open({"id": "s", "cwd": "/w", "model": "m"}, reporter))
    store.on_receive(Append("s", json.dumps({"type": "x", "n": 0})))
    busy(store)
    store.on_receive(Append("s", json.dumps({"type": "x", "n": 1})))

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rollout.os, "write", full)
    idle(store)
    store.on_receive(Append("s", json.dumps({"type": "x", "n": 2})))  # idle: the held lines are written, and fail
    assert [type(t) for t in reporter.told] == [StorageFailed]
    assert "could not write the rollout" in reporter.told[0].sentence
    with pytest.raises(StorageError, match="no space left"):
        store.on_receive(Sync("s"))
    monkeypatch.undo()
    assert lines_of(store.layout.rollout("s")) == [0]  # whole lines only: the failed batch left nothing behind
    store.on_receive(Append("s", json.dumps({"type": "x", "n": 3})))
    assert store.on_receive(Sync("s")) is True
    assert lines_of(store.layout.rollout("s")) == [0, 3]
