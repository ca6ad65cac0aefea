"""Suite-wide fixtures: a temporary COX_HOME for every test (never the real home), and no actor
or thread may outlive its test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pykka
import pytest

from tests.waits import BOUND_S, join_new_threads


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """End what a failed teardown left: the tmux servers this run started (by this run's id only)."""
    import sys

    tmux = sys.modules.get("tests.tui.tmux")
    if tmux is not None:
        left = tmux.sweep()
        if left:
            print(f"\nkilled {len(left)} tmux servers the tests left running: {left}", file=sys.stderr)


@pytest.fixture(autouse=True)
def cox_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cox-home"
    monkeypatch.setenv("COX_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))  # never the real ~/.claude
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(autouse=True)
def no_leaked_actors() -> Iterator[None]:
    """Stop what the test left running, then wait for its threads to end: each wait is for an
    event, bounded only so that a hang fails (``tests/waits.py``) — a busy machine never trips it."""
    before = set(threading.enumerate())
    yield
    try:
        pykka.ActorRegistry.stop_all(block=True, timeout=BOUND_S)
    except pykka.Timeout:
        import faulthandler
        import sys

        print(f"an actor did not stop within {BOUND_S:g} s; every thread's stack:", file=sys.stderr)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        raise
    leaked = join_new_threads(before)
    assert not leaked, f"threads leaked by the test: {leaked}"
