"""Instruction files: what the model is told about this user and this repository, unasked.

Why a module of its own: the files reach the model without anyone asking for them, so which
files, in which order, and what an ``@path`` import inside one may pull in are security
decisions, and ``cox ext list`` must show exactly what the request sends (both read
:func:`instruction_files`).

The order (later files are closer to the work, so they read as more specific):

1. the user's files: ``$CLAUDE_CONFIG_DIR/CLAUDE.md`` (else ``~/.claude/CLAUDE.md``), then
   cox's own ``$COX_HOME/AGENTS.md`` (``~/.cox/AGENTS.md``);
2. for each folder from the outermost parent of the workspace down to the workspace itself:
   ``AGENTS.md``, ``CLAUDE.md``, ``.claude/CLAUDE.md``, ``CLAUDE.local.md``.

A file's ``@path`` imports (Claude Code's syntax: ``@docs/style.md``, ``@~/notes.md``, on a line
of their own or inside text, never inside a code span or code block; relative to the importing
file's folder) follow it, each its own section, up to :data:`MAX_DEPTH` hops deep. What an
import may reach depends on who wrote the importing file: a user file may import from the home;
every other file (the repository's, or a parent folder's) only from inside the workspace roots,
checked on the resolved path so a symlink cannot lead out. A Read deny rule covers every file
and every import. A file reached twice (an import cycle, or two names for one file) is sent once,
and imports together add at most :data:`IMPORT_BUDGET` characters.
Whatever is skipped is listed with its reason (``cox ext list``); the block names a left-out
file but never carries its content.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from cox import lazyre
from cox.slim import dataclass

__all__ = ["FOLDER_FILES", "LIMIT_BYTES", "MAX_DEPTH", "Instruction", "instruction_block", "instruction_files"]

FOLDER_FILES = ("AGENTS.md", "CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
"""Looked for in the workspace and each of its parents, in this order."""

MAX_DEPTH = 5
"""Import hops followed from a top file, as Claude Code follows."""

LIMIT_BYTES = 64 * 1024
"""Characters of one file sent; the rest is cut."""

IMPORT_BUDGET = 256 * 1024
"""Characters all imports together may add: a repository cannot make every request huge by
importing its whole tree (an import past it is skipped, named)."""

Scope = Literal["user", "project"]

_FENCE = lazyre.compile(r"^[ \t]{0,3}(```+|~~~+)")
_SPAN = lazyre.compile(r"(`+)(?:(?!\1).)+?\1")
_IMPORT = lazyre.compile(r"(?:^|(?<=\s))@((?:[^\s\\]|\\ )+)")
_TRAILING = ".,;:!?)]}'\""


@dataclass(frozen=True, slots=True)
class Instruction:
    """One file sent to the model, or skipped. ``label`` is how the block names it; ``via`` the
    file whose ``@`` import reached it (None: a top file); ``left_out`` why it is not sent."""

    label: str
    path: Path
    scope: Scope
    depth: int = 0
    via: Path | None = None
    left_out: str | None = None
    text: str = ""


def instruction_files(cwd: Path, reads: Any = None, *, home: Path | None = None, cox_home: Path | None = None,
                      roots: Sequence[Path] | None = None,
                      env: Mapping[str, str] | None = None) -> list[Instruction]:
    """Every instruction file and import, in the order they are sent, each with its text or
    the reason it is left out. ``reads``: the session's Read deny rules (``Engine.read_guard``;
    None: cox's built-in ones). ``roots``: the workspace roots imports are confined to."""
    env = os.environ if env is None else env
    home = home or Path.home()
    if cox_home is None:
        from cox.actors.store.layout import cox_home as default_home

        cox_home = default_home(dict(env))
    roots = list(roots or [cwd])
    if reads is None:
        from cox.actors.tools.base import _builtin_guard

        reads = _builtin_guard(str(home), tuple(str(r) for r in roots))
    from cox.config.readfile import user_claude_dir

    claude_dir = user_claude_dir(home, env)
    walk = _Walk(reads, home, roots)
    walk.top(claude_dir / "CLAUDE.md", None, "user", _shown(claude_dir / "CLAUDE.md", home))
    walk.top(cox_home / "AGENTS.md", None, "user", _shown(cox_home / "AGENTS.md", home))
    for folder in reversed([cwd, *cwd.parents]):
        for name in FOLDER_FILES:
            walk.top(folder / name, folder, "project", name)
    return walk.out


def instruction_block(cwd: Path, limit_bytes: int = LIMIT_BYTES, reads: Any = None, *,
                      files: list[Instruction] | None = None, **where: Any) -> str:
    """system[2]: each file sent, as ``# NAME instructions (PATH)`` and its text; a top file left
    out is named with its reason and nothing of it. Computed once per session, so every request
    of a session repeats it byte for byte."""
    found: list[str] = []
    for f in files if files is not None else instruction_files(cwd, reads, **where):
        if f.left_out is not None:
            if f.via is None:
                found.append(f"# {f.label} ({f.path}) left out: {f.left_out}\n")
            continue
        how = f", imported by {f.via}" if f.via is not None else ""
        found.append(f"# {f.label} instructions ({f.path}{how})\n\n{f.text[:limit_bytes].rstrip()}\n")
    return "\n".join(found) if found else "(no instruction files)"


def _shown(path: Path, home: Path) -> str:
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


class _Walk:
    """Collects top files and their imports in order; remembers real paths to send each once."""

    def __init__(self, reads: Any, home: Path, roots: Sequence[Path]) -> None:
        self.reads = reads
        self.home = home
        self.roots = [os.path.realpath(r) for r in roots]
        self.seen: set[str] = set()
        self.out: list[Instruction] = []
        self.imported = 0

    def top(self, path: Path, holder: Path | None, scope: Scope, label: str) -> None:
        """A file found by its name. ``holder``: the folder a repository's file must resolve
        inside (None for the user's own files, which may be links into a dotfiles folder)."""
        try:
            if not path.is_file():
                return
        except OSError:
            return
        real = os.path.realpath(path)
        if real in self.seen:  # CLAUDE.md -> AGENTS.md, or ~/.claude/CLAUDE.md seen again from ~
            self.out.append(Instruction(label, path, scope, left_out="the same file as one above, sent once"))
            return
        if holder is not None and not real.startswith(os.path.realpath(holder).rstrip("/") + "/"):
            self.out.append(Instruction(label, path, scope, left_out=f"it is a symlink to {real}, outside its folder"))
            return
        self._add(path, real, scope, label, 0, None)

    def _add(self, path: Path, real: str, scope: Scope, label: str, depth: int, via: Path | None) -> None:
        if self.reads is not None and (self.reads.refuses(str(path)) or self.reads.refuses(real)):
            self.out.append(Instruction(label, path, scope, depth, via, "a Read deny rule covers it"))
            return
        try:
            with open(real, encoding="utf-8", errors="replace") as fh:
                text = fh.read(LIMIT_BYTES + 1)
        except OSError as exc:
            self.out.append(Instruction(label, path, scope, depth, via, f"it could not be read ({exc.strerror})"))
            return
        if via is not None and self.imported + min(len(text), LIMIT_BYTES) > IMPORT_BUDGET:
            self.out.append(Instruction(label, path, scope, depth, via,
                                        f"the imports together would pass {IMPORT_BUDGET // 1024} KiB"))
            return
        if via is not None:
            self.imported += min(len(text), LIMIT_BYTES)
        self.seen.add(real)
        self.out.append(Instruction(label, path, scope, depth, via, None, text))
        for target in imports(text[:LIMIT_BYTES]):
            self._import(target, path, scope, depth + 1)

    def _import(self, target: str, importer: Path, scope: Scope, depth: int) -> None:
        label = "@" + target
        if target.startswith("~/") or target == "~":
            path = self.home / target[2:]
        elif target.startswith("/"):
            path = Path(target)
        else:
            path = importer.parent / target
        path = Path(os.path.normpath(path))
        real = os.path.realpath(path)

        def skip(reason: str) -> None:
            self.out.append(Instruction(label, path, scope, depth, importer, reason))

        if depth > MAX_DEPTH:
            skip(f"imports go at most {MAX_DEPTH} deep")
        elif not self._reachable(real, scope):
            where = "the home" if scope == "user" else "the workspace"
            skip(f"it is outside {where} ({real}); "
                 + ("a user file imports only from the home" if scope == "user"
                    else "a repository's file imports only files inside the workspace"))
        elif real in self.seen:
            skip("already sent above (an import cycle, or a second name for one file)")
        elif not os.path.isfile(real):
            skip("no such file")
        else:
            self._add(path, real, scope, label, depth, importer)

    def _reachable(self, real: str, scope: Scope) -> bool:
        allowed = [*self.roots, os.path.realpath(self.home)] if scope == "user" else self.roots
        return any(real == r or real.startswith(r.rstrip("/") + "/") for r in allowed)


def imports(text: str) -> list[str]:
    """The ``@path`` imports of a markdown text, in order, outside code blocks and code spans
    (``user@example.com`` is no import: an ``@`` must start a word)."""
    out: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        for found in _IMPORT.finditer(_SPAN.sub(" ", line)):
            target = found.group(1).replace("\\ ", " ").rstrip(_TRAILING)
            if target and target not in out:
                out.append(target)
    return out
