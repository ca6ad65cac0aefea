"""``cox apply-patch [--cwd DIR] < patch``: apply a Codex-format patch with the tool's own code.

Why a command: scripts, editors and a person at a shell can use the same checked, all-or-nothing
applier the model uses (Codex ships ``apply_patch`` as a program for the same reason). Paths are
confined to DIR (default: the current folder). Prints Codex's summary and exits 0; a patch that
does not parse or does not fit prints ``cox: apply-patch: <reason>`` on stderr and exits 1 with
nothing written; a DIR that is not a folder exits 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``apply-patch`` on the ``cox`` command's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "apply-patch", help="apply a Codex-format patch read from stdin, all or nothing",
        description="Apply a patch ('*** Begin Patch' … '*** End Patch') read from stdin. Every hunk is "
                    "checked first; if any does not fit, no file is changed.")
    parser.add_argument("--cwd", metavar="DIR", help="the folder the patch's paths are relative to and "
                        "confined to (default: the current folder)")
    return parser


def _read(stdin: TextIO) -> str:
    buffer = getattr(stdin, "buffer", None)
    if buffer is not None:
        return bytes(buffer.read()).decode("utf-8", errors="replace")
    return stdin.read()


def run(args: Any, *, stdin: TextIO | None = None, stdout: TextIO | None = None,
        stderr: TextIO | None = None) -> int:
    """Apply the patch on ``stdin``; 0 applied, 1 refused (nothing written), 2 bad ``--cwd``."""
    from cox.actors.tools.patch import PatchError, apply_patch
    from cox.policy.paths import confine

    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    root = Path(getattr(args, "cwd", None) or os.getcwd()).expanduser().resolve()
    if not root.is_dir():
        print(f"cox: apply-patch: --cwd {root} is not a folder", file=stderr)
        return 2
    text = _read(stdin)

    def resolve(raw: str) -> Path:
        return confine(raw, [root], cwd=root)

    try:
        outcome = apply_patch(text, resolve)
    except (PatchError, OSError) as exc:
        print(f"cox: apply-patch: {exc}", file=stderr)
        return 1
    stdout.write(outcome.summary)
    return 0
