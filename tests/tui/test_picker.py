"""The resume picker without a terminal: its model (keys, filter, selection, busy sessions), the
list of a workspace's stored sessions it is given, the plain numbered prompt, the lock probe
that marks a session another live cox holds, and the top-level ``-r`` with an optional id."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cox.actors.store import db, lock
from cox.actors.store.layout import Layout
from cox.surfaces.resume_pick import Choice, age, details, plain_pick, read_line, stored_sessions
from cox.surfaces.tui.picker import Picker

REPO = Path(__file__).resolve().parents[2]


def choices(*titles: str, busy: int | None = None) -> list[Choice]:
    now = time.time()
    return [Choice(id=f"S{n}", title=t, updated_at=now - 60 * n, turns=n + 1, model="m", cwd="/w",
                   busy=f"session S{n} is in use by process 7; wait for it to end" if n == busy else "")
            for n, t in enumerate(titles)]


def press(p: Picker, *keys: str) -> Picker:
    for k in keys:
        p.key(k)
    return p


# --- the model ---------------------------------------------------------------------------------

def test_moves_with_arrows_and_j_k_within_the_list() -> None:
    p = Picker(choices("newest", "middle", "oldest"))
    assert p.selected() is not None and p.selected().id == "S0"  # type: ignore[union-attr]
    press(p, "down", "j")
    assert p.sel == 2
    press(p, "down", "j")  # clamped at the oldest
    assert p.sel == 2
    press(p, "up", "k", "k")
    assert p.sel == 0
    press(p, "end")
    assert p.sel == 2
    press(p, "home", "page down")
    assert p.sel == 2 and not p.done


def test_enter_resumes_the_selected_session() -> None:
    p = press(Picker(choices("newest", "older")), "down", "enter")
    assert p.done and p.chosen == "S1"


@pytest.mark.parametrize("key", ["esc", "q", "ctrl c"])
def test_esc_q_and_ctrl_c_cancel(key: str) -> None:
    p = press(Picker(choices("a", "b")), "down", key)
    assert p.done and p.chosen is None


def test_typing_filters_by_title_and_keeps_the_selection_while_it_matches() -> None:
    p = Picker(choices("fix the parser", "write the docs", "fix the lexer"))
    press(p, "down", "down")  # fix the lexer
    press(p, "f", "i", "x")
    assert p.filtering and p.query == "fix"
    assert [c.title for c in p.visible()] == ["fix the parser", "fix the lexer"]
    assert p.selected().title == "fix the lexer"  # type: ignore[union-attr]
    press(p, " ", "p")  # every word must match
    assert [c.title for c in p.visible()] == ["fix the parser"] and p.sel == 0
    press(p, "backspace", "backspace")
    assert p.query == "fix" and len(p.visible()) == 2
    press(p, "ctrl u")
    assert p.query == "" and p.filtering and len(p.visible()) == 3
    press(p, "backspace")  # past the start: the filter closes, j k move again
    assert not p.filtering
    press(p, "j")
    assert p.query == "" and p.sel == 1


def test_slash_starts_a_filter_in_which_j_k_and_q_are_letters() -> None:
    p = press(Picker(choices("Quit the job", "keep going")), "/", "q", "j", "k")
    assert p.query == "qjk" and not p.done and p.visible() == []
    assert "no session's title matches 'qjk'" in p.message
    press(p, "enter")
    assert not p.done and "no session matches the filter" in p.message
    press(p, "ctrl u", "j", "o", "b", "up", "down")  # arrows still move while filtering
    assert p.query == "job" and [c.title for c in p.visible()] == ["Quit the job"]
    press(p, "enter")
    assert p.done and p.chosen == "S0"


def test_filter_matching_ignores_case() -> None:
    p = press(Picker(choices("Refactor the CLI", "docs")), "c", "l", "i")
    assert [c.id for c in p.visible()] == ["S0"]


def test_a_busy_session_is_refused_and_the_picker_stays_open() -> None:
    p = press(Picker(choices("held elsewhere", "free", busy=0)), "enter")
    assert not p.done and p.message.startswith("session S0 is in use by process 7")
    press(p, "down")
    assert p.message == ""  # the next key clears it
    press(p, "enter")
    assert p.done and p.chosen == "S1"


def test_with_fork_session_a_busy_session_can_be_chosen() -> None:
    p = press(Picker(choices("held elsewhere", busy=0), fork=True), "enter")
    assert p.done and p.chosen == "S0"


def test_rows_say_age_turns_model_worktree_and_busy() -> None:
    assert [age(s) for s in (5, 60, 7200, 3 * 86400, 15 * 86400)] == ["just now", "1m ago", "2h ago", "3d ago",
                                                                      "2w ago"]
    c = Choice(id="S", title="t", updated_at=1000.0, turns=1, model="claude-x", cwd="/w", worktree="feat",
               branch="feat", busy="in use")
    assert details(c, 1000.0 + 125) == "2m ago · 1 turn · claude-x · ⧉ feat (feat) · ● in use"


def test_the_view_draws_the_model_and_passes_every_key_to_it() -> None:
    import urwid

    from cox.surfaces.tui.picker_view import View

    p = Picker(choices("newest \x1b[31m", "oldest", busy=1))
    view = View(p)
    text = "\n".join(line.decode() for line in view.render((70, 14), focus=True).text)
    assert "resume which session? (2, newest first)" in text and "▸ newest" in text and "● in use" in text
    view.keypress((70, 14), "j")
    text = "\n".join(line.decode() for line in view.render((70, 14), focus=True).text)
    assert "▸ oldest" in text
    # Enter probes the lock again: nobody holds S1 (the mark was stale), so it is resumed
    with pytest.raises(urwid.ExitMainLoop):
        view.keypress((70, 14), "enter")
    assert p.chosen == "S1" and p.selected().busy == ""  # type: ignore[union-attr]
    p = Picker(choices("a"))
    with pytest.raises(urwid.ExitMainLoop):
        View(p).keypress((70, 14), "esc")
    assert p.done and p.chosen is None


# --- the list ----------------------------------------------------------------------------------

def _index(layout: Layout, rows: list[dict[str, object]]) -> None:
    """Play the store: write index rows (the picker itself only ever reads)."""
    conn = db.connect(layout.db)
    try:
        for n, row in enumerate(rows):
            db.upsert_session(conn, {"id": row["id"], "cwd": row["cwd"], "model": "m", "title": row.get("title", ""),
                                     "parent_id": row.get("parent")})
            conn.execute("UPDATE sessions SET turns=?, updated_at=? WHERE id=?",
                         (row.get("turns", 1), 1000.0 + n, row["id"]))
    finally:
        conn.close()


def test_stored_sessions_are_this_workspaces_newest_first(cox_home: Path, tmp_path: Path) -> None:
    ws, other, wt = tmp_path / "ws", tmp_path / "other", tmp_path / "ws-feat"
    for d in (ws, other, wt):
        d.mkdir()
    layout = Layout(cox_home).ensure()
    _index(layout, [
        {"id": "OLD", "cwd": str(ws), "title": "first \x1b]0;pwned\x07 task\nsecond line"},
        {"id": "ELSEWHERE", "cwd": str(other), "title": "not here"},
        {"id": "AGENT", "cwd": str(ws), "title": "a subagent's prompt", "parent": "OLD"},
        {"id": "EMPTY", "cwd": str(ws), "title": "", "turns": 0},
        {"id": "WT", "cwd": str(wt), "title": "in the worktree"},
        {"id": "SECRET", "cwd": str(ws), "title": "use sk-ant-api03-" + "A" * 90},
    ])
    (layout.sessions / "WT.worktree.json").write_text(json.dumps(
        {"path": str(wt), "repo": str(ws), "branch": "feat", "name": "feat"}))
    got = stored_sessions(layout, ws)
    assert [c.id for c in got] == ["SECRET", "WT", "OLD"]
    assert "\x1b" not in got[2].title and "\x07" not in got[2].title and "\n" not in got[2].title
    assert got[2].title.startswith("first ") and got[2].title.endswith("task second line")
    assert "A" * 40 not in got[0].title  # a secret typed into the first prompt is not shown
    assert (got[1].worktree, got[1].branch) == ("feat", "feat")
    assert [c.id for c in stored_sessions(layout, wt)] == ["WT"]  # from inside the worktree too
    assert stored_sessions(layout, tmp_path) == []


def test_stored_sessions_of_a_home_without_an_index(cox_home: Path, tmp_path: Path) -> None:
    import sqlite3

    layout = Layout(cox_home)
    assert stored_sessions(layout, tmp_path) == []
    layout.ensure()
    sqlite3.connect(str(layout.db)).close()  # a cox.db without tables: nothing, and nothing made
    assert stored_sessions(layout, tmp_path) == []
    assert sqlite3.connect(str(layout.db)).execute("SELECT name FROM sqlite_master").fetchall() == []


# --- busy --------------------------------------------------------------------------------------

def _hold_elsewhere(sessions: Path, session_id: str) -> subprocess.Popen[str]:
    """Another live process holding the session's lock (as a running cox does) until its stdin ends."""
    code = ("import sys; from pathlib import Path; from cox.actors.store import lock; "
            f"lock.hold(Path({str(sessions)!r}), {session_id!r}); print('held', flush=True); sys.stdin.read()")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_busy_names_a_live_holder_with_holds_own_sentence(cox_home: Path) -> None:
    sessions = cox_home / "sessions"
    sessions.mkdir(parents=True)
    assert lock.busy(sessions, "S1") is None  # never held
    p = _hold_elsewhere(sessions, "S1")
    try:
        found = lock.busy(sessions, "S1")
        with pytest.raises(lock.SessionBusy) as refused:
            lock.hold(sessions, "S1")
        assert found is not None and found.pid == p.pid and str(found) == str(refused.value)
        assert lock.busy(sessions, "S1") is not None  # the probe took nothing: still the other's
    finally:
        p.communicate("", timeout=60)
    assert lock.busy(sessions, "S1") is None  # it ended: the kernel dropped its lock
    lock.hold(sessions, "S1")
    try:
        assert lock.busy(sessions, "S1") is None  # this process's own hold is not "another cox"
    finally:
        lock.release(sessions, "S1")


# --- plain -------------------------------------------------------------------------------------

def test_plain_pick_reads_a_number() -> None:
    out = io.StringIO()
    got = plain_pick(choices("newest", "older"), io.StringIO("x\n9\n2\n1\n"), out)
    assert got == "S1"
    text = out.getvalue()
    assert "1. newest" in text and "2. older" in text
    assert "'x' is not one of the numbers 1-2" in text and "'9' is not one of the numbers 1-2" in text
    assert plain_pick(choices("a"), io.StringIO("q\n"), io.StringIO()) is None
    assert plain_pick(choices("a"), io.StringIO(""), io.StringIO()) is None
    assert plain_pick(choices("a", "held", busy=1), io.StringIO("2\n"), io.StringIO(), fork=True) == "S1"


def test_plain_pick_refuses_a_session_still_held_and_resumes_one_whose_holder_ended(cox_home: Path) -> None:
    sessions = Layout(cox_home).ensure().sessions
    holder = _hold_elsewhere(sessions, "S1")
    try:
        out = io.StringIO()
        assert plain_pick(choices("newest", "held", busy=1), io.StringIO("2\n1\n"), out) == "S0"
        assert f"cox: session S1 is in use by process {holder.pid}; wait for it to end" in out.getvalue()
    finally:
        holder.communicate("", timeout=60)
    stale = choices("newest", "held", busy=1)  # marked when listed; the holder has ended since
    out = io.StringIO()
    assert plain_pick(stale, io.StringIO("2\n"), out) == "S1" and "in use" not in out.getvalue().split("›")[-1]


def test_read_line_leaves_the_next_lines_on_the_descriptor() -> None:
    r, w = os.pipe()
    os.write(w, b"2\nthe prompt\n")
    os.close(w)
    with os.fdopen(r, encoding="utf-8") as stream:
        assert read_line(stream) == "2"
        assert os.read(r, 100) == b"the prompt\n"  # not swallowed by a buffer
        assert read_line(stream) is None


# --- the command line --------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "resume"), [(["-r"], ""), (["--resume"], ""), (["-r", "ID1"], "ID1"),
                                              (["--resume", "ID1", "--plain"], "ID1"), ([], None)])
def test_the_top_level_resume_takes_an_optional_id(argv: list[str], resume: str | None) -> None:
    from cox.surfaces.cli import _parser

    args = _parser(argv).parse_args(argv)
    assert args.resume == resume and args.command is None
