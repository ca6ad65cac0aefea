"""Checkpoints and /rewind through the real session: writes, edits by bash, an rm; rewind to
turn 1 restores the files byte for byte; rewinding the rewind brings the later state back."""

from __future__ import annotations

import queue
import time
from pathlib import Path

from cox.actors.provider.scripted import ScriptedProvider
from cox.actors.session.actor import SessionSettings
from cox.actors.tools.registry import builtin_tools
from cox.policy.permission import Engine
from cox.protocol import messages as m
from cox.protocol.types import PermissionMode, new_ulid
from cox.surfaces.runtime import App
from tests.waits import BOUND_S


def _events_until(handle, kind: str, timeout: float = BOUND_S) -> list:
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            event, _ = handle.events.get(timeout=0.2)
        except queue.Empty:
            continue
        out.append(event)
        if event.type == kind:
            return out
    raise AssertionError(f"no {kind}; got {[e.type for e in out]}")


def test_three_turns_then_rewind_and_undo(tmp_path: Path, cox_home: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_bytes(b"original\r\nbytes \x00\x01\n")
    (ws / "doomed.txt").write_text("to be removed\n")
    replies = [
        {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "keep.txt", "content": "turn one\n"}}]},
        {"text": "t1"},
        {"tool_calls": [{"id": "w2", "name": "write", "input": {"path": "new/made.txt", "content": "made\n"}},
                        {"id": "b1", "name": "bash", "input": {"command": "echo appended >> keep.txt"}}]},
        {"text": "t2"},
        {"tool_calls": [{"id": "b2", "name": "bash", "input": {"command": "rm doomed.txt"}}]},
        {"text": "t3"},
    ]
    engine = Engine.compile(["Bash(echo:*)", "Bash(rm:*)"], [], [], home=tmp_path, roots=[ws])
    settings = SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="scripted", home=tmp_path,
                               permission_mode=PermissionMode.BYPASS)
    app = App(cox_home)
    try:
        handle = app.open_session(settings, ScriptedProvider({"replies": replies}), builtin_tools(), engine)
        checkpoints = []
        for text in ("one", "two", "three"):
            handle.submit(m.UserTurn(text=text))
            events = _events_until(handle, "turn_done")
            assert events[-1].stop.value == "end_turn", [(e.type, getattr(e, "result", None)) for e in events]
            checkpoints += [e for e in events if e.type == "checkpoint"]
        assert {f for c in checkpoints for f in c.files} >= {"keep.txt", "new/made.txt", "doomed.txt"}
        later = {p: (ws / p).read_bytes() for p in ("keep.txt", "new/made.txt")}
        assert not (ws / "doomed.txt").exists()

        handle.submit(m.Rewind(to_turn=1, what="code"))
        events = _events_until(handle, "rewound")
        assert (ws / "keep.txt").read_bytes() == b"original\r\nbytes \x00\x01\n"
        assert (ws / "doomed.txt").read_text() == "to be removed\n"
        assert not (ws / "new/made.txt").exists()
        assert any(e.type == "notice" and "restored" in e.message for e in events)

        handle.submit(m.Rewind(to_turn=4, what="code"))  # the rewind was checkpointed as turn 4
        _events_until(handle, "rewound")
        assert {p: (ws / p).read_bytes() for p in ("keep.txt", "new/made.txt")} == later
        assert not (ws / "doomed.txt").exists()
    finally:
        app.close()


def test_each_turns_marker_is_written_before_its_turn_done_without_a_thread_or_a_git_probe(
        tmp_path: Path, cox_home: Path, monkeypatch) -> None:
    """The marker is one message to the store, sent after the request left: the store's order
    writes it before the turn's closing sync, so it is in cox.db when turn_done arrives. A turn
    that writes nothing never makes the checkpointer (no git probe), and no marker thread runs."""
    import sqlite3
    import threading

    from cox.actors.store.checkpoints import Checkpointer

    probes: list[str] = []
    real = Checkpointer._probe

    def probe(path: str | None) -> tuple[bool, str]:
        probes.append(threading.current_thread().name)
        return real(path)

    monkeypatch.setattr(Checkpointer, "_probe", staticmethod(probe))
    monkeypatch.setattr("cox.actors.store.checkpoints._AVAILABLE", {})
    started = threading.Thread.start
    names: list[str] = []

    def start(self: threading.Thread) -> None:
        names.append(self.name)
        started(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    ws = tmp_path / "ws"
    ws.mkdir()
    settings = SessionSettings(session_id=new_ulid(), cwd=ws, roots=[ws], model="scripted", home=tmp_path,
                               permission_mode=PermissionMode.BYPASS)
    engine = Engine.compile([], [], [], home=tmp_path, roots=[ws])
    app = App(cox_home)
    try:
        handle = app.open_session(settings, ScriptedProvider({"replies": [{"text": "a"}, {"text": "b"}]}),
                                  builtin_tools(), engine)
        for turn, text in ((1, "first turn\nsecond line"), (2, "   another one")):
            handle.submit(m.UserTurn(text=text))
            _events_until(handle, "turn_done")
            conn = sqlite3.connect(f"file:{cox_home / 'cox.db'}?mode=ro", uri=True)
            try:
                titles = conn.execute("SELECT turn, title FROM checkpoints WHERE session_id=? AND kind='marker' "
                                      "ORDER BY turn", (settings.session_id,)).fetchall()
            finally:
                conn.close()
            assert titles[-1] == (turn, text.split("\n")[0].strip()), titles
    finally:
        app.close()
    assert probes == []
    assert not [n for n in names if n.startswith("cox-marker")], names
