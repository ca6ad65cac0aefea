"""``cox stats``: what the usage ledger says — spend by model today or this month, and how
well each session's prompt cache hit."""

from __future__ import annotations

import json
from typing import Any

from cox.actors.session.ledger import period_start
from cox.actors.store import db
from cox.actors.store.layout import Layout, cox_home


def run(args: Any) -> int:
    import sqlite3

    try:
        return _run(args)
    except sqlite3.Error as exc:
        if not db.missing_table(exc):
            raise
        print("no usage recorded yet")  # a cox.db the store has not filled in yet
        return 0


def _run(args: Any) -> int:
    layout = Layout(cox_home())
    if not layout.db.exists():
        print("no usage recorded yet")
        return 0
    conn = db.connect_ro(layout.db)  # read-only: the store actor is cox.db's writer
    try:
        if getattr(args, "cache", False):
            rows = db.cache_by_session(conn)
            if args.json:
                print(json.dumps(rows))
                return 0
            print(f"{'session':<26}  {'model':<24} {'calls':>5}  {'hit':>6}  title")
            for r in rows:
                print(f"{r['session_id']:<26}  {r['model'][:24]:<24} {r['requests']:>5}  {r['hit_ratio']:>6.1%}  "
                      f"{r['title'][:40]}")
            return 0
        period = "month" if getattr(args, "month", False) else "day"
        rows = db.usage_by_model(conn, period_start(period))
    finally:
        conn.close()
    if args.json:
        print(json.dumps({"period": period, "models": rows, "total_usd": sum(r["cost_usd"] for r in rows)}))
        return 0
    label = "this month" if period == "month" else "today"
    if not rows:
        print(f"no usage {label}")
        return 0
    print(f"{'model':<28} {'calls':>6} {'input':>10} {'output':>9} {'cache rd':>10} {'cache wr':>9} {'cost':>9}")
    for r in rows:
        print(f"{r['model'][:28]:<28} {r['requests']:>6} {r['input_tokens']:>10,} {r['output_tokens']:>9,} "
              f"{r['cache_read_tokens']:>10,} {r['cache_write_tokens']:>9,} ${r['cost_usd']:>8.4f}")
    print(f"total {label}: ${sum(r['cost_usd'] for r in rows):.4f}")
    return 0
