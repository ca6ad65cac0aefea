"""What a crash may leave of a session's record, and what it must not: the checks the store chaos
tests run on a rollout and cox.db after the store (or all of cox) was killed mid-write.

The invariants, and why they hold:

- The rollout holds whole lines only, a torn last line at most (``RolloutWriter`` writes each line
  with ``os.write`` in one piece, and cuts a failed write back); after a resume every line is whole.
- cox.db passes ``PRAGMA integrity_check`` (WAL, every statement its own transaction).
- The session's row exists (``Open`` is asked, and answered, before the first event is sent).
- Every archive id the rollout names has its archive row, and its file when it is not inline:
  ``ArchivePut`` is an ask answered after the write, and the id reaches the rollout only after.
- Usage rows and usage events agree to within one: the session appends a request's usage event
  and then tells the store its usage row, both in order through the one store, so a crash between
  them leaves the rollout one event ahead — the index never leads the rollout; a store that died
  loses one contiguous run of its mailbox, which can cut one pair at each end (an event without
  its row, a row without its event).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from cox.actors.store.rollout import read_rollout


def whole_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of the rollout, each a whole event (raises on a torn or corrupt line)."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), f"{path.name} ends inside a line"
    out = []
    for n, raw in enumerate(data.split(b"\n")[:-1], 1):
        event = json.loads(raw)
        assert isinstance(event, dict) and "type" in event, f"line {n} of {path.name} is not an event"
        out.append(event)
    return out


def check_record(cox_home: Path, session_id: str, *, torn_tail_ok: bool, mail_lost: bool) -> list[dict[str, Any]]:
    """Check the session's rollout and cox.db against each other; returns the rollout's events.
    ``torn_tail_ok``: the process was killed (not resumed since); ``mail_lost``: a store died
    while cox lived on (its mailbox lost), as against the whole process killed."""
    path = cox_home / "sessions" / f"{session_id}.jsonl"
    read = read_rollout(path)
    torn = [n for n in read.notices if "cut short" in n]
    assert len(torn) == len(read.notices), f"a line in the middle of the rollout is broken: {read.notices}"
    assert torn_tail_ok or not torn, f"the rollout has a torn last line: {read.notices}"
    events = read.events
    conn = sqlite3.connect(f"file:{cox_home / 'cox.db'}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT COUNT(*) FROM sessions WHERE id=?", (session_id,)).fetchone()[0] == 1
        for event in events:
            archive_id = (event.get("result") or {}).get("archive_id") if event["type"] == "tool_call_done" else None
            if archive_id:
                row = conn.execute("SELECT size, inline IS NULL FROM archive WHERE id=?", (archive_id,)).fetchone()
                assert row is not None, f"the rollout names archive {archive_id}, cox.db has no row for it"
                if row[1]:
                    stored = cox_home / "archive" / archive_id
                    assert stored.is_file() and stored.stat().st_size == row[0], f"archive file {archive_id}"
        rows = conn.execute("SELECT COUNT(*) FROM usage WHERE session_id=?", (session_id,)).fetchone()[0]
    finally:
        conn.close()
    usage_events = sum(1 for e in events if e["type"] == "usage")
    high = 1 if mail_lost else 0
    assert -1 <= rows - usage_events <= high, f"{rows} usage rows in cox.db, {usage_events} usage events in the rollout"
    return events
