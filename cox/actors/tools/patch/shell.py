"""Recognise a model running apply_patch through the shell, so bash can hand it to the tool.

Models trained on Codex often write ``apply_patch <<'EOF' … EOF`` as a shell command. There is
no such program on the machine, and if there were it would write outside cox's checks and
checkpoints; Codex reroutes the call to its apply_patch handler, and cox does the same. Only
the whole-line forms are recognised (a conservative match, like Codex's tree-sitter query):

- ``apply_patch <<'EOF'`` / ``<<"EOF"`` / ``<<EOF`` / ``<<-EOF``, any delimiter word, newline,
  body, the delimiter alone on its last line;
- the same after ``cd DIR &&`` (DIR a plain word or a quoted string without expansions);
- ``applypatch`` as the command name.

Anything before or after (``echo x; apply_patch …``, ``… && make``) is not recognised and runs as
shell. The body is taken literally even after an unquoted ``<<EOF`` (bash would expand ``$x``
in it; the model meant the patch it wrote).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ShellPatch", "detect_shell_apply_patch"]

_WORD = r"[A-Za-z0-9_./~+@%:,=-]+"
_LINE = re.compile(
    r"""\A\s*
    (?:cd\s+(?P<dir>'[^']*'|"[^"$`\\]*"|""" + _WORD + r""")\s*&&\s*)?
    (?:apply_patch|applypatch)\s*
    <<(?P<dash>-?)\s*(?P<q>['"]?)(?P<delim>[A-Za-z_][A-Za-z0-9_]*)(?P=q)[ \t]*\r?\n
    (?P<body>.*)\Z""",
    re.DOTALL | re.VERBOSE,
)


@dataclass(frozen=True)
class ShellPatch:
    """A patch found in a shell line, and the folder a leading ``cd`` names (unconfined:
    the tool confines it like any other path)."""

    patch: str
    workdir: str | None = None


def _unquote(word: str) -> str:
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    return word


def detect_shell_apply_patch(command: str) -> ShellPatch | None:
    """The patch (and ``cd`` folder) when ``command`` is one of the recognised forms, else ``None``."""
    m = _LINE.match(command)
    if m is None:
        return None
    delim, dash = m.group("delim"), bool(m.group("dash"))
    lines = m.group("body").split("\n")
    while lines and not lines[-1].strip():  # trailing blank lines after the delimiter
        lines.pop()
    if not lines:
        return None
    last = lines[-1].rstrip("\r").rstrip()
    if (last.lstrip("\t") if dash else last) != delim:
        return None
    body = lines[:-1]
    if dash:
        body = [x.lstrip("\t") for x in body]
    if any(x.rstrip("\r") == delim for x in body):
        return None  # the heredoc ends early: more shell follows it
    workdir = _unquote(m.group("dir")) if m.group("dir") else None
    return ShellPatch("\n".join(body) + "\n", workdir)
