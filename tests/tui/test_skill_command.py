"""The person names a skill in the TUI (``/name args``): the turn carries its instructions."""

from __future__ import annotations

from pathlib import Path

from cox.agents.skills import load_skills
from cox.protocol import messages as m
from tests.tui.test_model import FakeHandle


def test_slash_name_sends_the_skill_into_the_turn(tmp_path: Path) -> None:
    from cox.surfaces.tui.app import TUI

    path = tmp_path / "ws" / ".claude" / "skills" / "rev\x1b[2J" / "SKILL.md"  # a folder name the terminal must not run
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: review\ndescription: Reviews a file\n---\nReview $ARGUMENTS closely.\n")
    skills = load_skills(tmp_path / "ws", tmp_path / "home")
    handle = FakeHandle()
    ui = TUI(handle, status={"skills": skills})
    ui.composer.set_edit_text("/review app.py")
    ui.send()
    turns = [s for s in handle.sent if isinstance(s, m.UserTurn)]
    assert len(turns) == 1 and turns[0].text.startswith("/review app.py\n\n")
    assert "Review app.py closely." in turns[0].text
    shown = next(b for b in ui.model.blocks if b.kind == "user")
    assert "Review app.py closely." in shown.text and "\x1b" not in shown.text
    ui.composer.set_edit_text("/reviewx app.py")  # not a skill: still an unknown command, nothing sent
    ui.send()
    assert len([s for s in handle.sent if isinstance(s, m.UserTurn)]) == 1
    assert "unknown command /reviewx" in ui.model.blocks[-1].text


def test_without_skills_a_slash_word_stays_an_unknown_command(tmp_path: Path) -> None:
    from cox.surfaces.tui.app import TUI

    handle = FakeHandle()
    ui = TUI(handle)
    ui.composer.set_edit_text("/review app.py")
    ui.send()
    assert not [s for s in handle.sent if isinstance(s, m.UserTurn)]
