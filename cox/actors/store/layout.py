"""Where cox keeps things: ``$COX_HOME`` (default ``~/.cox``) and the files under it.

    config.toml        user config
    cox.db             sessions index, usage ledger, small archived outputs (SQLite, WAL)
    sessions/<id>.jsonl  the rollout: one Event per line
    archive/<id>       tool outputs over 16 KiB
    checkpoints/       private bare git repositories (checkpoints issue)
    logs/cox.log       JSON-lines log
"""

from __future__ import annotations

import os
from pathlib import Path

from cox.slim import dataclass


def cox_home(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    value = env.get("COX_HOME")
    return Path(value).expanduser() if value else Path.home() / ".cox"


@dataclass(frozen=True, slots=True)
class Layout:
    home: Path

    @property
    def db(self) -> Path:
        return self.home / "cox.db"

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"

    @property
    def archive(self) -> Path:
        return self.home / "archive"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def checkpoints(self) -> Path:
        return self.home / "checkpoints"

    def rollout(self, session_id: str) -> Path:
        return self.sessions / f"{session_id}.jsonl"

    def ensure(self) -> Layout:
        for d in (self.home, self.sessions, self.archive, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        return self
