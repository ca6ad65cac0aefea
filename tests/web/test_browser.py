"""The page in a real headless Chromium against the real ``cox serve``: a prompt streams, an
approval is answered with a click, dark mode survives a reload, and a refused chat turn is greyed,
left out of the history, and rephrased."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.waits import BOUND_S

from .browser import launch, missing
from .served import Served, script

why = missing()
pytestmark = pytest.mark.skipif(why is not None, reason=why or "")

AGENTS = {
    "stream": [{"events": [{"text": "The first words arrive "}, {"stall": True}]}, {"text": "and the rest follows."}],
    "decline": [{"text": "No.", "stop": "refusal"}],
    "touch": [{"tool_calls": [{"name": "bash", "input": {"command": "touch clicked.txt"}}]}, {"text": "The file is there."}],
}
CHAT = [{"text": "I can't help with that.", "stop": "refusal"}, {"text": "Here is a kinder answer."}]
MS = BOUND_S * 1000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path, Path]]:
    root = tmp_path_factory.mktemp("browser")
    ws = root / "ws"
    ws.mkdir()
    dump = root / "chat-requests.json"
    s = Served(ws, script(root / "s.json", CHAT, AGENTS), root, extra_env={"COX_SCRIPTED_DUMP": str(dump)})
    yield s, ws, dump
    assert s.stop() == 0, "".join(s.stderr)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        ctx = launch(p, tmp_path_factory.mktemp("profile"), color_scheme="light")
        ctx.set_default_timeout(MS)
        yield ctx
        ctx.close()


@pytest.fixture
def page(browser: Any, served: tuple[Served, Path, Path]) -> Iterator[Any]:
    page = browser.new_page()
    page.goto(served[0].url + "/", wait_until="domcontentloaded")
    page.wait_for_selector("#model option", state="attached")
    yield page
    page.close()


def _send(page: Any, prompt: str) -> None:
    page.fill("#prompt", prompt)
    page.press("#prompt", "Enter")


def test_a_prompt_streams_into_the_page_and_can_be_stopped(page: Any) -> None:
    _send(page, "stream something")
    text = page.locator(".turn >> nth=0 >> .text")
    text.wait_for()
    assert text.inner_text() == "The first words arrive "  # shown while the model is still on the turn
    assert page.inner_text("#send") == "Stop"
    page.click("#send")  # closes the stream: the server cancels the turn
    page.wait_for_selector("#send:text('Send')")
    page.wait_for_selector(".notice:text('Stopped.')")
    _send(page, "go on")  # the server lets the cancelled turn end first
    page.wait_for_selector(".text:text('and the rest follows.')")


def test_an_approval_is_answered_with_a_click(page: Any, served: tuple[Served, Path, Path]) -> None:
    _send(page, "touch the file")
    page.wait_for_selector(".tool-row .approval")
    assert page.inner_text(".tool-row .subject") == "touch clicked.txt"
    assert not (served[1] / "clicked.txt").exists()
    page.click(".approval button[data-answer='yes']")
    page.wait_for_selector(".tool-row[data-status='ok']")
    page.wait_for_selector(".text:text('The file is there.')")
    assert (served[1] / "clicked.txt").exists()
    assert page.locator(".approval").count() == 0


def test_a_refused_agent_turn_is_greyed_for_rephrasing(page: Any) -> None:
    _send(page, "decline this one")
    page.wait_for_selector(".turn.refused")
    assert "rephrase" in page.inner_text(".refusal-note")
    page.click(".rephrase")
    assert page.input_value("#prompt") == "decline this one"


def _canvas(page: Any) -> str:
    return str(page.evaluate("getComputedStyle(document.body).backgroundColor"))


def test_dark_mode_is_toggled_and_remembered(page: Any) -> None:
    assert page.evaluate("document.documentElement.dataset.theme") == "light"  # the system's (emulated light)
    assert _canvas(page) == "rgb(250, 249, 245)"  # --bg-canvas #faf9f5
    page.click("#theme")
    assert _canvas(page) == "rgb(24, 23, 21)"  # #181715
    page.reload(wait_until="domcontentloaded")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert _canvas(page) == "rgb(24, 23, 21)"
    page.click("#theme")  # back to light for the other tests, remembered too
    assert page.evaluate("localStorage.getItem('cox-theme')") == "light"


def test_a_refused_chat_turn_is_greyed_left_out_and_rephrased(page: Any, served: tuple[Served, Path, Path]) -> None:
    page.click("#surface button[data-surface='chat']")
    _send(page, "say something rude")
    page.wait_for_selector(".turn.refused")
    assert page.locator(".turn.refused .msg.user").inner_text() == "say something rude"
    opacity = float(page.evaluate("getComputedStyle(document.querySelector('.turn.refused')).opacity"))
    assert opacity < 1
    page.click(".rephrase")
    assert page.input_value("#prompt") == "say something rude"
    page.fill("#prompt", "say something kind")
    page.press("#prompt", "Enter")
    page.wait_for_selector(".text:text('Here is a kinder answer.')")
    assert page.locator(".turn.refused").count() == 1  # the new turn is not greyed
    sent = json.loads(served[2].read_text())[-1]["messages"]
    assert sent == [{"role": "user", "content": [{"type": "text", "text": "say something kind"}]}]  # refused turn left out
