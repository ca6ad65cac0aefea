"""The question modal in the real TUI (tmux): an MCP server's form asked field by field through
the real ``cox`` command (user config with ``tests/mcp/servers/elicitserver.py``), a bad answer
re-asked, the review step, Esc cancelling only the request; and cox's own yes/no question (the
think tier's price consent) in the same modal."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.xdist_group("tui")

SERVER = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "elicitserver.py"


def answers(tmp_path: Path) -> list[Any]:
    path = tmp_path / "answers.txt"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_an_mcp_form_in_the_question_modal(tui: Any, tmp_path: Path, cox_home: Path) -> None:
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text(
        f'[mcp.servers.e]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\nsandbox = false\n'
        f'env = {{ COX_TEST_ANSWERS = "{tmp_path / "answers.txt"}" }}\n'
        '[permissions]\nallow = ["mcp__e"]\n')
    signup = {"tool_calls": [{"id": "s1", "name": "mcp__e__signup", "input": {}}]}
    t = tui([signup, {"text": "Signed up."}, {**signup, "tool_calls": [{**signup["tool_calls"][0], "id": "s2"}]},
             {"text": "Not this time."}], cli=True, env={"HOME": str(tmp_path)})
    t.wait("$0.0000", timeout=30)
    t.send("sign me up")
    modal = t.wait("mcp:e asks:", timeout=30)
    assert "(1/4) Name — your full name" in modal and "Sign-up for the demo service" in modal
    assert "Esc cancels the whole request" in modal
    t.send("Zebedee")
    t.wait("(2/4) Age")
    t.send("abc")
    again = t.wait("✗ not a whole number; try again")
    assert "(2/4) Age" in again
    t.send("30")
    choice = t.wait("(3/4) Colour")
    assert "1 Red" in choice and "2 Green" in choice and "3 Blue" in choice
    t.keys("Down")
    t.wait("▸ 2 Green")
    t.keys("Enter")
    t.wait("(4/4) Newsletter")
    t.keys("y")
    review = t.wait("send Name, Age, Colour, Newsletter to mcp:e?")
    assert "Zebedee" not in review  # the review names the fields, it does not repeat the answers
    t.save("question", review)
    t.keys("s")
    done = t.wait("Signed up.")
    assert "action=accept fields=age,colour,name,news" in done or "mcp__e__signup" in done
    assert answers(tmp_path) == [{"action": "accept",
                                  "content": {"name": "Zebedee", "age": 30, "colour": "g", "news": True}}]
    t.wait(lambda s: "working" not in s)

    t.send("again")
    t.wait("mcp:e asks:")
    t.keys("Escape")  # cancels the server's request only; the turn goes on
    t.wait("Not this time.")
    assert answers(tmp_path)[-1] == {"action": "cancel"}
    screen = t.wait(lambda s: "working" not in s)
    assert "interrupted" not in screen
    t.quit()


def test_the_modal_goes_when_the_server_withdraws_its_question(tui: Any, tmp_path: Path, cox_home: Path) -> None:
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text(
        f'[mcp.servers.e]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\nsandbox = false\n'
        f'env = {{ COX_TEST_ANSWERS = "{tmp_path / "answers.txt"}", COX_TEST_WITHDRAW_S = "2" }}\n'
        '[permissions]\nallow = ["mcp__e"]\n')
    t = tui([{"tool_calls": [{"id": "w1", "name": "mcp__e__withdraw", "input": {}}]}, {"text": "It gave up."}],
            cli=True, env={"HOME": str(tmp_path)})
    t.wait("$0.0000", timeout=30)
    t.send("ask me")
    modal = t.wait("Esc cancels the whole request", timeout=30)
    assert "A question that expires" in modal
    t.type("half an ans")  # typed into the modal, never sent
    screen = t.wait(lambda s: "Esc cancels the whole request" not in s, timeout=15)
    t.wait("mcp:e withdrew its question")
    screen = t.wait("It gave up.")
    assert "half an ans" not in screen
    assert "interrupted" not in screen
    t.wait(lambda s: "working" not in s)
    t.send("/quit")
    t.wait("EXITED 0")


def test_the_think_tier_consent_uses_the_question_modal(tui: Any) -> None:
    t = tui([{"text": "unused"}])
    t.wait("Shift+Tab mode")
    t.send("/mode architect")
    modal = t.wait("cox asks:")
    assert "architect mode runs main turns on" in modal and "1 yes" in modal and "2 no" in modal
    t.keys("n")
    t.wait(lambda s: "cox asks:" not in s)
    t.send("/mode architect")
    t.wait("cox asks:")
    t.keys("Enter")  # the first choice, yes
    t.wait("mode architect")
    t.quit()


# ---------------------------------------------------------------- the modal alone (no tmux)


def question(schema: dict[str, Any] | None, *, url: str | None = None, prompt: str = "p") -> Any:
    from cox.protocol import messages as m

    return m.Question(question_id="q1", prompt=prompt, schema=schema, url=url, source="mcp:x")


def field(prop: dict[str, Any], keep: bool = False) -> dict[str, Any]:
    return {"type": "object", "properties": {"f": prop}, "x-cox": {"step": "field", "keep": keep}}


def test_modal_keys_for_choices_multi_text_and_esc() -> None:
    from cox.surfaces.tui.question import Questions

    sent: list[Any] = []
    qs = Questions(sent.append)
    qs.ask_event(question(field({"type": "string", "oneOf": [{"const": "r", "title": "Red"},
                                                             {"const": "g", "title": "Green"}]})))
    widget, title = qs.body()
    assert title == " mcp:x asks: "
    qs.key((80,), "down")
    qs.key((80,), "enter")
    assert not qs and (sent[-1].question_id, sent[-1].answer, sent[-1].declined) == ("q1", "g", False)

    qs.ask_event(question(field({"type": "array", "items": {"enum": ["a", "b", "c"]}})))
    for key in ("1", "down", "down", " ", "enter"):
        qs.key((80,), key)
    assert sent[-1].answer == ["a", "c"]

    qs.ask_event(question(field({"type": "string"}, keep=True)))
    assert "keeps the last answer" in qs.head.hint()  # type: ignore[union-attr]
    for key in ("h", "i", "enter"):
        qs.key((80,), key)
    assert sent[-1].answer == "hi"

    qs.ask_event(question(field({"type": "boolean"})))
    qs.key((80,), "n")
    assert sent[-1].answer == "no"

    qs.ask_event(question(None, url="https://example.com/"))
    qs.key((80,), "esc")
    assert sent[-1].declined is True and not qs


def test_a_closed_question_leaves_the_queue_wherever_it_is() -> None:
    from cox.protocol import messages as m
    from cox.surfaces.tui.question import Questions

    sent: list[Any] = []
    qs = Questions(sent.append)
    qs.ask_event(m.Question(question_id="q1", prompt="first", source="mcp:x"))
    qs.ask_event(m.Question(question_id="q2", prompt="second", source="mcp:y"))
    assert qs.close("q2") is not None and qs.head is not None and qs.head.question_id == "q1"
    assert qs.close("nope") is None
    gone = qs.close("q1")
    assert gone is not None and gone.q.source == "mcp:x" and not qs and not sent


def test_yes_no_of_the_tui_runs_callbacks_and_never_submits() -> None:
    from cox.surfaces.tui.question import Questions

    sent: list[Any] = []
    said: list[str] = []
    qs = Questions(sent.append)
    qs.ask_yes_no("go on?", lambda: said.append("yes"), lambda: said.append("no"))
    assert qs.body()[1] == " cox asks: "
    qs.key((80,), "y")
    qs.ask_yes_no("go on?", lambda: said.append("yes"), lambda: said.append("no"))
    qs.key((80,), "esc")
    assert said == ["yes", "no"] and not sent and not qs
