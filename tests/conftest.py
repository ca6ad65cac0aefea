"""Suite-wide fixtures: a temporary COX_HOME for every test (never the real home), and no actor
or thread may outlive its test; and compiled bytecode for the cox processes the tests start."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pykka
import pytest

from tests.waits import BOUND_S, join_new_threads


def _bytecode_cache() -> None:
    """Let the ``cox`` processes the tests start read compiled bytecode, as a user's install does.

    This workplace exports ``PYTHONDONTWRITEBYTECODE=1``, so every ``cox run`` the suite starts
    (hundreds: the attack bench alone runs four per attack) compiled cox from source again: about
    0.3 s of the 0.45 s of CPU a short run costs here, and half the time of the files that start
    cox. Without it Python writes each module's bytecode once, beside its source in
    ``__pycache__`` (which git ignores), and checks it against the source (mtime and size) on every
    import, so an edited module is recompiled; the installed packages keep using the bytecode their
    install wrote. The unprivileged test user only reads it (it cannot write into the checkout,
    which Python ignores). ``COX_TEST_BYTECODE=0`` keeps the old behaviour.
    """
    if os.environ.get("COX_TEST_BYTECODE") == "0":
        return
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False  # this process's later imports too


def pytest_configure(config: pytest.Config) -> None:
    _bytecode_cache()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """End what a failed teardown left: the tmux servers this run started (by this run's id only)."""
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
