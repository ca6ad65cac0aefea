"""The browser for an MCP URL elicitation opens in a child actor of the session (issue 13, item
5: no unsupervised threads), not on a bare daemon thread: the opener runs on the child's thread,
its failure reaches the person as a notice, and the child's exit is reported to the session
like any turn child's."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

from cox.protocol import messages as m
from cox.protocol.types import PermissionMode
from cox.surfaces.runtime import App
from tests.harness import run_session
from tests.session.test_questions import REPLIES, AskingTool, tools_with
from tests.waits import BOUND_S


def test_the_url_opener_is_a_child_actor_and_its_failure_a_notice(tmp_path: Path, cox_home: Path) -> None:
    got: list[dict[str, Any]] = []
    ran_on: list[str] = []
    opened = threading.Event()
    request = {"server": "demo", "mode": "url", "message": "Log in", "url": "https://example.com/login"}

    def opener(url: str) -> str | None:
        ran_on.append(threading.current_thread().name)
        opened.set()
        return "no browser in this test"

    def react(event: Any, handle: Any, run: Any) -> None:
        if event.type == "question":
            handle.submit(m.Answer(question_id=event.question_id, answer="open"))

    app = App(cox_home)
    try:
        run = run_session(tmp_path, cox_home, REPLIES, "log me in", tools=tools_with(AskingTool(request, got)),
                          mode=PermissionMode.BYPASS, react=react, open_url=opener, app=app)
        assert got == [{"action": "accept"}]
        assert opened.wait(BOUND_S)
        assert len(ran_on) == 1 and ran_on[0].startswith("UrlOpener-"), ran_on
        notices = [e.message for e in run.events if e.type == "notice"]
        deadline = time.monotonic() + BOUND_S
        while not any("could not open the browser" in n for n in notices) and time.monotonic() < deadline:
            try:
                event, _ = run.handle.events.get(timeout=0.2)
            except queue.Empty:
                continue
            if event.type == "notice":
                notices.append(event.message)
        said = [n for n in notices if "could not open the browser" in n]
        assert said and "no browser in this test" in said[0] and "https://example.com/login" in said[0]
    finally:
        app.close()
    assert not [t.name for t in threading.enumerate() if t.name in ("cox-open-url", "cox-marker")]
