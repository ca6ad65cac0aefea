"""A turn whose commands all ended leaves no thread behind (issue 13, item 5: no unsupervised
threads). Before, every turn that ran a command started a ``cox-reaper`` thread that slept 1 s
before looking — the second a bash-running test waited in its teardown."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.harness import run_session


def test_a_turn_whose_commands_ended_starts_no_reaper_thread(tmp_path: Path, cox_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    seen: list[list[str]] = []

    def at_end(event, handle, run) -> None:
        if event.type == "turn_done":
            seen.append([t.name for t in threading.enumerate()])

    run = run_session(ws, cox_home, [
        {"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "echo hi"}}]},
        {"text": "done"},
    ], "go", allow=["Bash(echo:*)"], react=at_end)
    done = run.of("tool_call_done")
    assert done and "hi" in done[0].result.visible, done
    assert seen and not [n for n in seen[0] if n == "cox-reaper"], seen
