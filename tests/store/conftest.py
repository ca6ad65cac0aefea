"""A small tmpfs to fill: a real full disk under COX_HOME (root only; unmounted even on failure);
``writes``: every cox.db write statement of the process and the thread that prepared it;
``store``: a store actor driven by hand (its messages handled on the test's thread), and
``Reporter``, a session's stand-in that keeps what the store tells it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cox.actors.store import rollout
from cox.actors.store.actor import StoreActor
from cox.actors.store.layout import Layout


class Reporter:
    def __init__(self) -> None:
        self.told: list[Any] = []

    def tell(self, message: Any) -> None:
        self.told.append(message)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreActor]:
    actor = StoreActor(Layout(tmp_path / "home"))
    actor.on_start()
    yield actor
    actor.on_stop()


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a 2 MiB tmpfs needs root (mount -t tmpfs)")
    mnt = tmp_path / "small"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", str(mnt)],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=60)


def fill(folder: Path, leave: int) -> Path:
    """Fill the file system holding ``folder`` until ``leave`` bytes are free; return the filler."""
    filler = folder / "filler"
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


WRITES = {sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE, sqlite3.SQLITE_CREATE_TABLE,
          sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_ALTER_TABLE, sqlite3.SQLITE_DROP_TABLE,
          sqlite3.SQLITE_DROP_INDEX, sqlite3.SQLITE_CREATE_TRIGGER, sqlite3.SQLITE_CREATE_VIEW}


class Writes:
    """(thread name, what, table) of every cox.db write statement, from any connection."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str, str]] = []
        self.rollout_threads: set[str] = set()

    def authorizer(self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
        if db == "temp":
            return sqlite3.SQLITE_OK
        wrote = action in WRITES or (action == sqlite3.SQLITE_PRAGMA and arg2 is not None)
        if wrote:
            with self.lock:
                self.seen.append((threading.current_thread().name, str(action), str(arg1)))
        return sqlite3.SQLITE_OK

    def foreign(self) -> list[tuple[str, str, str]]:
        with self.lock:
            return [w for w in self.seen if not w[0].startswith("StoreActor-")]


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Writes:
    found = Writes()
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = real_connect(*args, **kwargs)
        conn.set_authorizer(found.authorizer)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    real_append = rollout.RolloutWriter.append

    def append(self: rollout.RolloutWriter, line: str) -> None:
        found.rollout_threads.add(threading.current_thread().name)
        real_append(self, line)

    monkeypatch.setattr(rollout.RolloutWriter, "append", append)
    return found
