"""The ``tui`` fixture: start the real TUI in a tmux server of its own (``tmux.Tmux``); every
server a test started is killed when it ends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .tmux import Tmux


@pytest.fixture
def tui(tmp_path: Path, cox_home: Path) -> Iterator[Any]:
    made: list[Tmux] = []

    def start(replies: list[dict[str, Any]], **kw: Any) -> Tmux:
        t = Tmux(tmp_path, cox_home, replies, **kw)
        made.append(t)
        return t

    yield start
    for t in made:
        t.close()
