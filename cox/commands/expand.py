"""``/name args`` → the user turn: arguments substituted, ``!`command``` parts run and inlined.

Claude Code's placeholders: ``$ARGUMENTS`` is everything after the name; ``$1`` … ``$9`` its
words (quotes group words, as in a shell); a body with no placeholder gets the arguments
appended as ``ARGUMENTS: …`` so they are never lost. ``!`git status``` is replaced by what the
command printed; each one is run by the caller's ``run`` (:mod:`cox.commands.bang`: the
permission engine decides, as for a model's bash call), and a refusal stops the whole
expansion: a half-expanded prompt is never sent.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from .files import Command

__all__ = ["BANG", "CommandError", "expand", "parse_line", "words"]

BANG = re.compile(r"!`([^`\n]+)`")
_POSITIONAL = re.compile(r"\$([1-9])(?![0-9])")

Run = Callable[[str, Command], str]
"""Runs one ``!`…``` command for a command; returns what to inline, raises CommandError."""


class CommandError(Exception):
    """The command cannot be expanded; ``str()`` says why and what to do."""


def parse_line(line: str) -> tuple[str, str] | None:
    """(name, arguments) of a one-line ``/name args``; None when the line is no command."""
    text = line.strip()
    if not text.startswith("/") or "\n" in text:
        return None
    name, _, rest = text[1:].partition(" ")
    return (name, rest.strip()) if name else None


def words(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unclosed quote: plain words
        return arguments.split()


def expand(command: Command, arguments: str, run: Run | None) -> str:
    """The text the model gets for ``/command arguments``. Only the file's own ``!`…``` parts
    run: arguments are substituted after the file is split, so text in them is never a command."""
    body = command.body
    given = words(arguments)

    def fill(text: str) -> str:
        text = text.replace("$ARGUMENTS", arguments)
        return _POSITIONAL.sub(lambda m: given[int(m.group(1)) - 1] if int(m.group(1)) <= len(given) else "", text)

    out: list[str] = []
    at = 0
    for found in BANG.finditer(body):
        out.append(fill(body[at:found.start()]))
        line = fill(found.group(1))
        if run is None:
            raise CommandError(f"/{command.name} runs `{line}`, and this surface cannot run a command's shell lines")
        out.append(run(line, command))
        at = found.end()
    out.append(fill(body[at:]))
    text = "".join(out)
    if arguments and "$ARGUMENTS" not in body and _POSITIONAL.search(body) is None:
        text = f"{text}\n\nARGUMENTS: {arguments}"
    return text
