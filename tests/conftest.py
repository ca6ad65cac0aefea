"""Suite-wide fixtures: a temporary COX_HOME for every test (never the real home), and no actor
or thread may outlive its test; and compiled bytecode for the cox processes the tests start."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pykka
import pytest

from tests.waits import BOUND_S, join_new_threads


def _bytecode_cache() -> None:
    """Let the ``cox`` processes the tests start read compiled bytecode, as a user's install does.

    This workplace exports ``PYTHONDONTWRITEBYTECODE=1``, so without a cache every ``cox run`` the
    suite starts (hundreds: the attack bench alone runs four per attack) compiles cox from source
    again: about 0.3 s of the 0.45 s of CPU a short run costs here, and the suite's time halves
    in the files that start cox. The cache is a folder of this user's outside the
    checkout (``PYTHONPYCACHEPREFIX``), so the tree stays clean; Python checks each file against its
    source (mtime and size), so an edited module is recompiled. The unprivileged test user only
    reads it (it cannot write there, which Python ignores). A folder someone else owns, or that
    others may write, is never used: then the processes compile from source as before.
    """
    if os.environ.get("COX_TEST_PYCACHE") == "0":
        return
    base = Path(tempfile.gettempdir()) / f"cox-test-pycache-{os.geteuid()}"
    try:
        base.mkdir(mode=0o755, exist_ok=True)
        st = base.lstat()
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return
    os.environ["PYTHONPYCACHEPREFIX"] = str(base)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix, sys.dont_write_bytecode = str(base), False  # this process's later imports too


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
