"""Suite-wide fixtures: a temporary COX_HOME for every test (never the real home), and no actor
or thread may outlive its test."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pykka
import pytest


@pytest.fixture(autouse=True)
def cox_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cox-home"
    monkeypatch.setenv("COX_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))  # never the real ~/.claude
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(autouse=True)
def no_leaked_actors():
    before = threading.active_count()
    yield
    try:
        pykka.ActorRegistry.stop_all(block=True, timeout=5)
    except pykka.Timeout:
        import faulthandler
        import sys

        print("an actor did not stop within 5 s; every thread's stack:", file=sys.stderr)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        raise
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    leaked = [t.name for t in threading.enumerate()][before:]
    assert threading.active_count() <= before, f"threads leaked by the test: {leaked}"
