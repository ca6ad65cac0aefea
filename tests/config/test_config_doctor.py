"""``cox doctor`` lists every ignored setting as a warning row naming its file, line and key,
and the Claude settings files among the config files it read."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from cox.surfaces import doctor

if TYPE_CHECKING:
    from tests.config.conftest import Env


def test_doctor_shows_ignored_settings_and_claude_files(cfg: Env) -> None:
    project = cfg.project('[core]\nscript = "evil.json"\n')
    claude = cfg.claude_user('{"permissions": {"deny": ["Bash(rm"]}}')
    env = {**os.environ, "COX_HOME": str(cfg.home), "CLAUDE_CONFIG_DIR": str(cfg.user_home / ".claude")}
    rows = doctor.checks(cfg.ws, env)
    config_rows = [(status, text) for status, name, text in rows if name == "config"]
    assert config_rows[0][0] == "ok" and str(claude) in config_rows[0][1] and str(project) in config_rows[0][1]
    warned = [text for status, text in config_rows if status == "warn"]
    assert any(text.startswith(f"{claude}:1: ignored rule ") for text in warned)
    assert any(text.startswith(f"{project}:2: ignored core.script: ") for text in warned)
