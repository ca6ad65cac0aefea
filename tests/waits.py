"""The one outer bound every wait in the suite uses, and the teardown that waits for threads.

A wait in a test is for an event (an exit, an answer, a thread ending); its bound is only there so
that a hang fails instead of blocking forever, so it is generous: a busy two-core machine running
two copies of the suite must never reach it. Set ``COX_TEST_BOUND_S`` to shorten it when hunting a
hang.
"""

from __future__ import annotations

import os
import threading
import time

BOUND_S = float(os.environ.get("COX_TEST_BOUND_S", "60"))


def join_new_threads(before: set[threading.Thread], bound_s: float = BOUND_S) -> list[str]:
    """Join every thread started since ``before`` was taken (daemon helpers included) within one
    shared bound; returns the names of those still running when it passed."""
    deadline = time.monotonic() + bound_s
    for thread in set(threading.enumerate()) - before:
        if thread is threading.current_thread():
            continue
        while True:
            try:
                thread.join(max(0.0, deadline - time.monotonic()))
                break
            except RuntimeError:  # listed while it is still starting ("cannot join … before it is started")
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.005)
    return [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
