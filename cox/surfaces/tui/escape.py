"""tmux's ``escape-time``: how long tmux holds an Esc to see whether a key sequence follows.

Inside tmux (``$TMUX`` set) with the default 500 ms, every Esc reaches cox that much later: Esc
(interrupt) feels slow, and Esc Esc (rewind) pressed fast arrives as one Alt+Esc. cox reads both
forms, but the delay is tmux's to remove, so ``/help`` names the value and the one-line fix.
Asked when ``/help`` is shown (one quick ``tmux show-options``), never at start-up.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping

SLOW_MS = 50  # above this, a person notices the wait after Esc


def tmux_escape_ms(env: Mapping[str, str] | None = None) -> int | None:
    """tmux's escape-time in ms when cox runs inside tmux; None outside it or when tmux does not say."""
    env = os.environ if env is None else env
    if not env.get("TMUX") or shutil.which("tmux") is None:
        return None
    try:
        p = subprocess.run(["tmux", "show-options", "-sv", "escape-time"], capture_output=True, text=True,
                           timeout=2, env=dict(env))
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = p.stdout.strip()
    return int(value) if p.returncode == 0 and value.isdigit() else None


def escape_note(env: Mapping[str, str] | None = None) -> str:
    """The /help line about tmux's escape-time, "" when there is nothing to say."""
    ms = tmux_escape_ms(env)
    if ms is None or ms <= SLOW_MS:
        return ""
    return (f"tmux holds each Esc for {ms} ms (its escape-time), so Esc and Esc Esc reach cox late; "
            "`tmux set -sg escape-time 10` (or `set -sg escape-time 10` in ~/.tmux.conf) makes them immediate")
