"""Which repository hook files the person accepted: ``$COX_HOME/hooks-trust.json``.

A project's ``.cox/config.toml`` or ``.claude/settings*.json`` is written by whoever wrote the
repository, and a hook is a program: none of them runs until ``cox hooks trust`` showed the
file's hooks and the person agreed. What is stored is a hash of exactly what was shown (the
file's ``hooks`` object, canonical JSON, with the file's path), the way an MCP launch is trusted
(``cox.actors.mcp.launch``): a hook added or changed since is not trusted, and the file's hooks
wait again. The hash covers the commands, not the scripts they name (as for an MCP server: the
person trusted a command line, not everything that program might do).

The file is ``{"version": 1, "files": {path: "sha256:…"}}``, written atomically.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cox.atomic import write_atomic

TRUST_FILE = "hooks-trust.json"


def hooks_hash(path: str, hooks: Any) -> str:
    payload = json.dumps({"v": 1, "path": path, "hooks": hooks}, sort_keys=True, separators=(",", ":"),
                         ensure_ascii=False)
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

    def trusted(self, path: str, hooks: Any) -> bool:
        return self.files.get(path) == hooks_hash(path, hooks)

    def accept(self, path: str, hooks: Any) -> None:
        self.files[path] = hooks_hash(path, hooks)
        text = json.dumps({"version": 1, "files": self.files}, indent=1, sort_keys=True) + "\n"
        write_atomic(self.path, text.encode(), make_parents=True)
