"""Architect mode names the model it asks (issue 18, item 7): ``session_started.model``, the
usage records and the window all follow the think tier that main turns are sent to, not the code
tier, in a real ``cox run`` on the scripted provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import run_session

pytestmark = pytest.mark.xdist_group("headless")


def _run(ws: Path, cox_home: Path, *args: str) -> list[dict]:
    script = ws.parent / "s.json"
    script.write_text(json.dumps({"model": "code-model", "replies": [
        {"text": "planned", "usage": {"input_tokens": 1000, "output_tokens": 10}}]}))
    env = {**os.environ, "COX_HOME": str(cox_home), "COX_CORE_THINK_MODEL": "deep-model"}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script), "-p", "plan it",
                        "--output-format", "stream-json", *args],
                       cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [json.loads(x) for x in p.stdout.splitlines()]


@pytest.fixture
def ws(tmp_path: Path, cox_home: Path) -> Path:
    (tmp_path / "ws").mkdir()
    cox_home.mkdir()
    (cox_home / "config.toml").write_text("[models.deep-model]\ninput = 10.0\noutput = 50.0\n")
    return tmp_path / "ws"


def test_architect_run_names_the_think_tier_everywhere(ws: Path, cox_home: Path):
    events = _run(ws, cox_home, "--mode", "architect")
    started = events[0]
    assert started["type"] == "session_started" and started["permission_mode"] == "plan"
    assert started["model"] == "deep-model"
    usage = next(e for e in events if e["type"] == "usage")["usage"]
    assert usage["model"] == "deep-model"
    assert usage["cost_usd"] == pytest.approx((1000 * 10.0 + 10 * 50.0) / 1e6)  # the think tier's prices


def test_editor_run_names_the_code_tier(ws: Path, cox_home: Path):
    events = _run(ws, cox_home)
    assert events[0]["model"] == "code-model"
    assert next(e for e in events if e["type"] == "usage")["usage"]["model"] == "code-model"


def test_the_window_that_triggers_compaction_is_the_think_tiers(tmp_path: Path, cox_home: Path):
    # the code tier's window (the catalog's 200k) would never fill; the think tier's 1000 does
    ws = tmp_path / "ws"
    ws.mkdir()
    run = run_session(ws, cox_home, [
        {"text": "one", "usage": {"input_tokens": 900, "output_tokens": 5}},
        {"text": "two", "usage": {"input_tokens": 900, "output_tokens": 5}},
        {"text": "three", "usage": {"input_tokens": 900, "output_tokens": 5}},
        {"text": "summary of the session"},
    ], ["a", "b", "c"], turns=3, keep_turns=1, think_model="deep-model", preset="architect",
        model_overrides={"deep-model": {"context_window": 1000}})
    assert run.of("session_started")[0].model == "deep-model"
    assert run.of("compacted"), [e.type for e in run.events]
