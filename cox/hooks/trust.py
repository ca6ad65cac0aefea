"""Which repository hook files the person accepted: ``$COX_HOME/hooks-trust.json``.

A project's ``.cox/config.toml`` or ``.claude/settings*.json`` is written by whoever wrote the
repository, and a hook is a program: none of them runs until ``cox hooks trust`` showed the
file's hooks and the person agreed. What is stored is a hash of exactly what was shown (the
file's ``hooks`` object, canonical JSON, with the file's path), the way an MCP launch is trusted
(``cox.actors.mcp.launch``): a hook added or changed since is not trusted, and the file's hooks
wait again. A repository's hooks are usually scripts of the repository
(``"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh``), which a ``git pull`` can change under the
same command line: so the hash also covers the bytes of every file inside the project that a
command names (a word that is a path there, with ``$CLAUDE_PROJECT_DIR`` as the project). A
program outside the project (``jq``, ``python3``) is the machine's, as for an MCP server.

The file is ``{"version": 1, "files": {path: "sha256:…"}}``, written atomically.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cox.atomic import write_atomic
from cox.config.readfile import read_settings_bytes

TRUST_FILE = "hooks-trust.json"


PROJECT_VARS = ("${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR", "${COX_PROJECT_DIR}", "$COX_PROJECT_DIR")


def _commands(hooks: Any) -> list[str]:
    out: list[str] = []
    for groups in hooks.values() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for hook in group.get("hooks", ()) if isinstance(group, dict) else ():
                if isinstance(hook, dict) and isinstance(hook.get("command"), str):
                    out.append(hook["command"])
    return out


def named_files(hooks: Any, root: Path) -> dict[str, str]:
    """``{path: sha256 of its bytes}`` of each file inside ``root`` a command names."""
    import hashlib
    import shlex  # a repository's hooks are rare: neither loads at start-up without them

    real_root = os.path.realpath(root)
    out: dict[str, str] = {}
    for command in _commands(hooks):
        for var in PROJECT_VARS:
            command = command.replace(var, str(root))
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        for word in words:
            for part in word.split("="):  # FOO=./x.sh, --config=./y
                candidate = os.path.realpath(os.path.join(root, part))
                if not candidate.startswith(real_root + os.sep) or not os.path.isfile(candidate):
                    continue
                try:  # a regular file of the repository, read with a size cap
                    out[candidate] = hashlib.sha256(read_settings_bytes(Path(candidate))).hexdigest()
                except OSError:
                    out[candidate] = "unreadable"
    return out


def hooks_hash(path: str, hooks: Any, root: Path | None = None) -> str:
    scripts = named_files(hooks, root) if root is not None else {}
    payload = json.dumps({"v": 1, "path": path, "hooks": hooks, "scripts": scripts}, sort_keys=True,
                         separators=(",", ":"), ensure_ascii=False)
    import hashlib

    return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


class HookTrust:
    """The accepted hashes, read once; ``accept`` writes the file again."""

    def __init__(self, cox_home: Path) -> None:
        self.path = cox_home / TRUST_FILE
        self.files: dict[str, str] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # missing or unreadable: nothing is trusted
        files = data.get("files") if isinstance(data, dict) else None
        if isinstance(files, dict):
            self.files = {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}

    def trusted(self, path: str, hooks: Any, root: Path) -> bool:
        return self.files.get(path) == hooks_hash(path, hooks, root)

    def accept(self, path: str, hooks: Any, root: Path) -> None:
        self.files[path] = hooks_hash(path, hooks, root)
        text = json.dumps({"version": 1, "files": self.files}, indent=1, sort_keys=True) + "\n"
        write_atomic(self.path, text.encode(), make_parents=True)
