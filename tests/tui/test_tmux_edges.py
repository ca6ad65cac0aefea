"""Issue 18's TUI items in a real tmux: what the screen shows after an edited approval, on
exit, on Ctrl+C, after /rewind and a resume, on /model, Shift+Tab, tables, wrapped code and
tmux's escape-time."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.xdist_group("tui")


def test_an_edited_command_is_what_the_row_shows(tui: Any) -> None:
    t = tui([{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "touch original.txt"}}]},
             {"text": "Touched it."}])
    t.wait("Shift+Tab mode")
    t.send("touch a file")
    modal = t.wait("[e] edit input")
    assert "touch original.txt" in modal
    t.keys("e")
    t.wait("edit the input (JSON)")
    t.keys("-N", "200", "BSpace")
    t.type(json.dumps({"command": "touch edited.txt"}))
    t.keys("Enter")
    screen = t.wait("Touched it.")
    t.wait(lambda s: "working" not in s)
    assert (t.ws / "edited.txt").exists() and not (t.ws / "original.txt").exists()
    screen = t.screen()
    assert "✓ bash  touch edited.txt  edited ·" in screen and "original.txt" not in screen
    after = t.quit()
    assert "touch edited.txt" in after and "original.txt" not in after  # and in the printed transcript
