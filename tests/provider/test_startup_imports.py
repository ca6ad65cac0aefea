"""Import discipline on the path to the first request: ``cox run -p`` against a model API must not
import a provider SDK, httpx, the MCP SDK, pydantic, urwid or tree-sitter when nothing asks for them
(each costs 50 ms to 1 s at launch). Read from ``python -X importtime`` of a real run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.provider.loopback import Loopback, Reply
from tests.provider.test_anthropic_session import message

HEAVY = ("anthropic", "openai", "httpx", "mcp", "mcp_types", "urwid", "tree_sitter", "tree_sitter_bash", "pygments",
         "keyring", "pydantic", "pydantic_core")


def test_a_headless_run_imports_nothing_heavy(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    with Loopback() as api:
        api.add(Reply(message([{"type": "text", "text": "hello there"}], "end_turn")))
        env.update(COX_HOME=str(tmp_path / "home"), ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=api.url)
        out = subprocess.run([sys.executable, "-X", "importtime", "-m", "cox.surfaces.cli", "run", "-p", "hi"],
                             cwd=ws, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "hello there" in out.stdout
    modules = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "cox.actors.session.actor" in modules  # the table is the real one
    heavy = sorted(name for name in modules if name.split(".")[0] in HEAVY)
    assert heavy == []
