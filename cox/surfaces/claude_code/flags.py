"""The entry points of Claude Code's dialect and the flags that select it.

``claude -p PROMPT …`` and the Claude Agent SDK's ``claude --output-format stream-json --verbose
… --input-format stream-json`` (no sub-command) become ``cox run --dialect claude …``
(:func:`route`), so whatever flags the ``run`` sub-parser has, the bare entry point has too.

:func:`add_dialect_flags` adds this dialect's own flags to the ``run`` parser. Every other flag
the SDK may pass is ``compat_flags``'s: it does what Claude Code's does, or is refused with what
to do instead — none is accepted and silently dropped.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

PRINT = "\x00print"
"""``-p``/``--print`` given without a value: Claude Code's print mode, the prompt positional."""

TRIGGERS = ("-p", "--print", "--output-format", "--input-format")
SUBCOMMANDS = frozenset({"run", "demo", "sessions", "doctor", "stats", "expand", "config", "policy", "apply-patch",
                         "mcp", "hooks", "ext"})

def route(argv: Sequence[str]) -> list[str]:
    """``cox -p …`` / ``cox --output-format … …`` (no sub-command before the first of those
    flags) as ``cox run --dialect claude …``; any other command line unchanged."""
    words = list(argv)
    if not words or not words[0].startswith("-") or "--dialect" in words:
        return words
    for word in words:
        if word in SUBCOMMANDS:
            return words
        if word in TRIGGERS or word.split("=", 1)[0] in TRIGGERS[2:]:
            return ["run", "--dialect", "claude", *words]
    return words


def add_dialect_flags(run: argparse.ArgumentParser) -> None:
    """This dialect's own flags on the ``run`` parser (Claude Code's others: ``compat_flags``)."""
    run.add_argument("--dialect", choices=["cox", "claude"], default="cox", help=argparse.SUPPRESS)
    run.add_argument("text", nargs="?", metavar="PROMPT", help="the prompt (the same as -p PROMPT)")
    run.add_argument("--include-partial-messages", action="store_true",
                     help="stream-json in Claude Code's dialect: also the model's partial output (stream_event lines)")
    run.add_argument("--replay-user-messages", action="store_true",
                     help="stream-json in Claude Code's dialect: echo each user message (with the uuid rewind_files takes)")
    run.add_argument("--permission-prompt-tool", metavar="stdio",
                     help="stdio: ask the client on stdin/stdout (Claude Code's can_use_tool) about every call "
                          "that would need a person's approval")


class UsageProblem(Exception):
    """The command line is wrong in a way argparse cannot see; the message says how."""


def settle(args: Any) -> None:
    """After parsing ``run``: one prompt from ``-p``/``--print`` and the positional, and what
    ``--permission-prompt-tool`` means for approvals."""
    prompt, text = getattr(args, "prompt", None), getattr(args, "text", None)
    if prompt == PRINT:
        prompt = None
    if prompt is not None and text is not None:
        raise UsageProblem(f"two prompts: -p {prompt!r} and {text!r}; pass one")
    args.prompt = prompt if prompt is not None else text
    if getattr(args, "dialect", "cox") == "claude":
        args.verbose = False  # Claude Code's --verbose (which stream-json wants) is not cox's stderr log
    tool = getattr(args, "permission_prompt_tool", None)
    if tool is not None:
        if tool != "stdio":
            raise UsageProblem(f"--permission-prompt-tool {tool!r}: cox asks the client over stdio only "
                               "(--permission-prompt-tool stdio, with --input-format stream-json)")
        if getattr(args, "input_format", "text") != "stream-json":
            raise UsageProblem("--permission-prompt-tool stdio asks the client on stdin: pass --input-format stream-json")
        args.approve = "on-request"
