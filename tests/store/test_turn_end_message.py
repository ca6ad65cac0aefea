"""The store's ``TurnEnd``: one message, answered to its ``reply`` (nobody waits for it).

It writes the turn_done — or, after a failed write since the last sync, the error and an error
turn_done instead — fsyncs, and answers the failure; a store that stops before handling it
answers that it stopped, so the session's turn ends at once with the error instead of waiting.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pykka
import pytest

from cox.actors.store import rollout
from cox.actors.store.actor import StorageError, StoreActor
from cox.actors.store.messages import Append, Open, TurnEnd
from cox.actors.store.rollout import read_rollout
from cox.supervisors.actor import _answer_dead
from tests.harness import run_session

from .conftest import Reporter

DONE = json.dumps({"type": "turn_done", "turn": 1, "stop": "end_turn"})


def failed_lines(sentence: str) -> str:
    return json.dumps({"type": "error", "message": sentence}) + "\n" + json.dumps(
        {"type": "turn_done", "turn": 1, "stop": "error", "reason": sentence})


def test_a_turn_end_writes_its_line_fsyncs_and_answers_none(store: StoreActor) -> None:
    answers: list[Any] = []
    store.on_receive(Open({"id": "s", "cwd": "/w", "model": "m"}))
    store.actor_inbox.put(object())  # busy: the line before is held, and written first by the turn end
    store.on_receive(Append("s", json.dumps({"type": "user_message", "text": "hi"})))
    assert store.on_receive(TurnEnd("s", DONE, failed_lines, {"turns": 1}, answers.append)) is None
    assert answers == [None]
    assert [e["type"] for e in read_rollout(store.layout.rollout("s")).events] == ["user_message", "turn_done"]


def test_after_a_failed_write_the_turn_end_writes_the_error_instead_and_answers_it(
        store: StoreActor, monkeypatch: pytest.MonkeyPatch) -> None:
    answers: list[Any] = []
    reporter = Reporter()
    store.on_receive(Open({"id": "s", "cwd": "/w", "model": "m"}, reporter))
    real = rollout.RolloutWriter.append

    def append(self: rollout.RolloutWriter, line: str) -> None:
        if "assistant_message" in line:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, line)

    monkeypatch.setattr(rollout.RolloutWriter, "append", append)
    store.actor_inbox.put(object())  # busy: the failing line is held and met by the turn end itself
    store.on_receive(Append("s", json.dumps({"type": "assistant_message", "content": []})))
    store.on_receive(TurnEnd("s", DONE, failed_lines, {"turns": 1}, answers.append))
    assert len(answers) == 1 and isinstance(answers[0], StorageError) and "ENOSPC" in str(answers[0])
    assert answers[0].episode > 0
    assert reporter.told == []  # the answer reports it: the session is not told a second time
    written = read_rollout(store.layout.rollout("s")).events
    assert [e["type"] for e in written] == ["error", "turn_done"] and written[-1]["stop"] == "error"


def test_a_store_that_stops_before_a_turn_end_answers_that_it_stopped() -> None:
    answers: list[Any] = []

    class Envelope:
        reply_to = None
        message = TurnEnd("s", DONE, None, None, answers.append)

    class Dead:
        actor_ref = "StoreActor (stopped)"

    _answer_dead(Dead(), Envelope())  # type: ignore[arg-type]
    assert len(answers) == 1 and isinstance(answers[0], pykka.ActorDeadError)


def test_when_the_turn_done_line_itself_fails_the_surfaces_hear_the_error_and_the_rollout_ends_before_it(
        tmp_path: Path, cox_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    real = rollout.RolloutWriter.append

    def append(self: rollout.RolloutWriter, line: str) -> None:
        if '"type":"turn_done"' in line:
            raise OSError(errno.EIO, "Input/output error")
        real(self, line)

    monkeypatch.setattr(rollout.RolloutWriter, "append", append)
    run = run_session(ws, cox_home, [{"text": "hi"}], "go")
    ends = run.of("turn_done")
    assert len(ends) == 1 and ends[0].stop.value == "error" and "EIO" in (ends[0].reason or "")
    assert [e.message for e in run.of("error")] == [ends[0].reason]
    assert run.types().index("error") < run.types().index("turn_done")
    stored = read_rollout(cox_home / "sessions" / f"{run.settings.session_id}.jsonl").events
    assert "turn_done" not in [e["type"] for e in stored]
    assert stored[-1]["type"] == "assistant_message"
