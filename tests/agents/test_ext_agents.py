"""`cox ext list` shows every agent definition in effect with its source, and what was skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_ext_list_shows_each_agent_and_its_source(tmp_path: Path, cox_home: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".claude" / "agents").mkdir(parents=True)
    (ws / ".claude" / "agents" / "rev.md").write_text(
        "---\nname: reviewer\ndescription: reviews\ntools: Read, Grep\nmodel: haiku\n---\nYou review.\n")
    (ws / ".claude" / "agents" / "explore.md").write_text(
        "---\nname: explore\ndescription: \x1b[2Jmine\ntools: Write\n---\n")
    user = tmp_path / "claude-home" / "agents"  # CLAUDE_CONFIG_DIR (tests/conftest.py)
    user.mkdir(parents=True)
    (user / "helper.md").write_text("---\nname: helper\ndescription: helps\n---\nYou help.\n")
    (user / "odd\x1b[2J.md").write_text("---\nname: odd\ndescription: odd\n---\n")  # a name the terminal must not run
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "ext", "list", "--cwd", str(ws)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    agents = out[out.index("agents:"): out.index("commands (built in)")]
    assert "  explore (read-only): read, grep, glob, ls, bash; cheap  — builtin" in agents
    assert "  general-purpose: all tools; the parent's model  — builtin" in agents
    assert f"  reviewer: read, grep; cheap  — {ws / '.claude' / 'agents' / 'rev.md'}" in agents
    assert f"  helper: all tools; the parent's model  — {user / 'helper.md'}" in agents
    assert f"({ws / '.claude' / 'agents' / 'explore.md'}: a project agent may not replace the built-in 'explore'" in agents
    assert "  odd: all tools" in agents and "\x1b" not in out
