"""``SetModel`` (the TUI's ``/model NAME``): main turns run on the new model from the next
request; a model the session's provider cannot serve is refused with a notice that says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from cox.actors.provider.scripted import ScriptedProvider
from cox.protocol import messages as m
from tests.harness import run_session


def _switch_after_first_turn(model: str):  # noqa: ANN202 - a harness react
    def react(event, handle, run):  # noqa: ANN001, ANN202
        if event.type == "turn_done" and len(run.of("turn_done")) == 1:
            handle.submit(m.SetModel(model=model))
    return react


def test_set_model_switches_the_next_request(tmp_path: Path, cox_home: Path) -> None:
    run = run_session(tmp_path, cox_home, [{"text": "one"}, {"text": "two"}], ["first", "second"],
                      react=_switch_after_first_turn("claude-opus-4-8"))
    assert [r.model for r in run.provider.requests] == ["scripted", "claude-opus-4-8"]
    notes = [e.message for e in run.of("notice")]
    assert "model claude-opus-4-8: main turns on claude-opus-4-8 from the next request" in notes


def test_set_model_refuses_a_model_of_another_provider(tmp_path: Path, cox_home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ScriptedProvider, "name", "anthropic", raising=False)  # as an Anthropic session
    run = run_session(tmp_path, cox_home, [{"text": "one"}, {"text": "two"}], ["first", "second"],
                      react=_switch_after_first_turn("gpt-5"))
    assert [r.model for r in run.provider.requests] == ["scripted", "scripted"]
    (warn,) = [e for e in run.of("notice") if e.level == "warning"]
    assert warn.message == ("cannot switch to gpt-5: this session talks to anthropic; "
                            "start cox with --model gpt-5 instead")


def test_set_model_needs_a_name() -> None:
    for bad in ("", "two words"):
        with pytest.raises(ValueError):
            m.SetModel(model=bad)
