"""A write that fails just before a turn ends gives that turn one end, an error (issue 12, item 1).

The failure of the last line before ``turn_done`` (here the ``assistant_message``) is found by the
turn-end sync, before the store's asynchronous report reaches the session. Before, the session
had already appended the original ``turn_done{end_turn}`` and then appended a second
``turn_done{error}``: the rollout held two ends for one turn and a resume saw a success.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from cox.actors.store import rollout as rollout_module
from cox.actors.store.rollout import read_rollout
from tests.harness import run_session


def test_a_failed_write_before_the_turn_ends_gives_one_turn_done_with_the_error(
        tmp_path: Path, cox_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    real_append = rollout_module.RolloutWriter.append

    def append(self: rollout_module.RolloutWriter, line: str) -> None:
        if '"type":"assistant_message"' in line:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(self, line)

    monkeypatch.setattr(rollout_module.RolloutWriter, "append", append)
    run = run_session(ws, cox_home, [{"text": "hi"}], "go")
    ends = run.of("turn_done")
    assert len(ends) == 1, run.types()
    assert ends[0].stop.value == "error" and "ENOSPC" in (ends[0].reason or "")
    assert [e.message for e in run.of("error")] == [ends[0].reason]
    assert run.types().index("error") < run.types().index("turn_done")
    stored = read_rollout(cox_home / "sessions" / f"{run.settings.session_id}.jsonl").events
    kinds = [e["type"] for e in stored]
    assert kinds.count("turn_done") == 1, kinds
    assert stored[-1]["type"] == "turn_done" and stored[-1]["stop"] == "error"
    assert "assistant_message" not in kinds
