"""Processes found by their command line (``/proc/*/cmdline``): how a test proves a process it
started through cox is running, or that nothing of it is left."""

from __future__ import annotations

import os


def pids_with(token: str, *, at_start: bool = False) -> list[int]:
    """Pids whose command line holds ``token`` (``at_start``: begins with it, as ``exec -a`` sets)."""
    want = token.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                line = f.read()
        except OSError:
            continue
        if line.startswith(want) if at_start else want in line:
            found.append(int(entry))
    return found
