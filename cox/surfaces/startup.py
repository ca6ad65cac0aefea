"""Start-up without the cyclic garbage collector.

Why: on the way to its first model request a ``cox`` process imports ~300 modules and builds its
config, rules, tools and actors: objects that live as long as the process. The collector, run
every few hundred allocations, scans them again and again and finds almost nothing to free (~13 ms
of CPU of ~150 before the first request). So the process entry pauses it (:func:`pause`) and the
surface resumes it as soon as the session is open (:func:`over`), having frozen what start-up
built (``gc.freeze``): later collections, while the model streams, skip those objects too.
Only the process's own entry pauses it; ``main(argv)`` called in-process leaves the caller's
collector alone.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """No collections until :func:`over` (a no-op when the collector is off already)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def over() -> None:
    """Start-up is done: freeze what it built and let the collector run again (idempotent)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
