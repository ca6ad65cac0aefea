"""``[models.<name>]`` tables end to end: a custom model name, its window and its prices, read
from a user config in a temporary COX_HOME by a real ``cox run`` (issue 18, item 1: any such
table used to crash the run with ``'ModelConfig' object is not iterable``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.provider import chat_text
from cox.actors.provider.catalog import describe
from cox.config import load_config
from tests.provider.loopback import Loopback, Reply
from tests.provider.test_cli_e2e import chat_tool

pytestmark = pytest.mark.xdist_group("headless")

TABLE = """
[core]
model = "my-local"

[models.my-local]
context_window = 4000
max_output = 1000
input = 2.0
output = 10.0
"""


def _env(cox_home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["COX_HOME"] = str(cox_home)
    env.update(extra)
    return env


def _run(ws: Path, env: dict[str, str], *args: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "read notes.txt",
                        "--output-format", "stream-json", *args],
                       cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    events = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    return p, events


@pytest.fixture
def ws(tmp_path: Path, cox_home: Path) -> Path:
    cox_home.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the answer is 42\n")
    return ws


def test_a_custom_model_is_asked_by_name_and_costed_at_its_prices(ws: Path, cox_home: Path):
    (cox_home / "config.toml").write_text(TABLE)
    with Loopback() as api:
        api.add(Reply(chat_tool("call_1", "read", {"path": "notes.txt"})))  # 1200 in, 9 out
        api.add(Reply(chat_text(["It is ", "42."])))  # 10 in, 2 out
        p, events = _run(ws, _env(cox_home, OPENAI_API_KEY="k", OPENAI_BASE_URL=api.url + "/v1"))
        assert p.returncode == 0, p.stderr + p.stdout[-2000:]
        assert [r["json"]["model"] for r in api.requests] == ["my-local", "my-local"]
    started = next(e for e in events if e["type"] == "session_started")
    assert started["model"] == "my-local"
    costs = [e["usage"]["cost_usd"] for e in events if e["type"] == "usage"]
    assert costs == pytest.approx([(1200 * 2.0 + 9 * 10.0) / 1e6, (10 * 2.0 + 2 * 10.0) / 1e6])
    assert events[-1]["total_cost_usd"] == pytest.approx(sum(costs))


def test_the_session_budget_is_judged_at_the_tables_prices(ws: Path, cox_home: Path):
    # 0.00249 spent by the first request; the next is guessed at the same: over a cap of 0.004
    (cox_home / "config.toml").write_text(TABLE + "\n[budget]\nsession_usd = 0.004\n")
    with Loopback() as api:
        api.add(Reply(chat_tool("call_1", "read", {"path": "notes.txt"})))
        api.add(Reply(chat_text(["never sent"])))
        p, events = _run(ws, _env(cox_home, OPENAI_API_KEY="k", OPENAI_BASE_URL=api.url + "/v1"))
        assert len(api.requests) == 1, p.stderr
    done = [e for e in events if e["type"] == "turn_done"]
    assert done and done[-1]["stop"] == "budget", p.stdout[-2000:]
    assert "session budget of $0.00" in done[-1]["reason"] and "budget.session_usd" in done[-1]["reason"]


def test_a_scripted_model_named_in_a_table_gets_its_prices(ws: Path, cox_home: Path, tmp_path: Path):
    (cox_home / "config.toml").write_text(
        '[models.my-model]\nprovider = "scripted"\ncontext_window = 50000\ninput = 3.0\noutput = 15.0\n')
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"model": "my-model", "replies": [
        {"text": "hi", "usage": {"input_tokens": 1_000_000, "output_tokens": 100_000}}]}))
    p, events = _run(ws, _env(cox_home), "--script", str(script))
    assert p.returncode == 0, p.stderr
    assert next(e for e in events if e["type"] == "session_started")["model"] == "my-model"
    assert events[-1]["total_cost_usd"] == pytest.approx(3.0 + 1.5)


def test_a_table_naming_the_scripted_provider_without_a_script_is_one_clear_line(ws: Path, cox_home: Path):
    (cox_home / "config.toml").write_text('[core]\nmodel = "my-model"\n[models.my-model]\nprovider = "scripted"\n')
    p, _ = _run(ws, _env(cox_home), "--output-format", "text")
    assert p.returncode != 0
    assert "models.my-model.provider is 'scripted' but no script was given" in p.stderr
    assert "Traceback" not in p.stderr and "not iterable" not in p.stderr


def test_a_table_moves_a_custom_model_to_the_provider_it_names(ws: Path, cox_home: Path):
    # without the table "my-local" would go to an OpenAI-compatible server; the table says anthropic
    (cox_home / "config.toml").write_text(TABLE + 'provider = "anthropic"\n')
    p, _ = _run(ws, _env(cox_home), "--output-format", "text")
    assert p.returncode != 0 and "no Anthropic key" in p.stderr, p.stderr


def test_config_show_prints_the_table_and_the_catalog_reads_it(ws: Path, cox_home: Path):
    (cox_home / "config.toml").write_text(TABLE)
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "config", "show"], cwd=ws,
                       env=_env(cox_home), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "models.my-local.context_window = 4000" in p.stdout
    assert "models.my-local.input = 2.0" in p.stdout
    config = load_config(ws, cox_home=cox_home, env=_env(cox_home))
    info = describe("my-local", config.models)  # the records themselves, as choose_provider passes them
    assert (info.context_window, info.max_output, info.input, info.output) == (4000, 1000, 2.0, 10.0)
    assert info.provider == "openai-chat"


@pytest.mark.parametrize("window, judged_full", [(1000, True), (None, False)])
def test_the_tables_window_decides_when_the_context_is_full(ws: Path, cox_home: Path, tmp_path: Path,
                                                            window: int | None, judged_full: bool):
    # 900 tokens fill 3/4 of a 1000-token window (compaction is tried; one turn is too few to
    # summarise, which it says, before the next turn starts); with no table the unknown model
    # gets 128k and nothing is tried
    table = f"[models.my-model]\ncontext_window = {window}\n" if window else ""
    (cox_home / "config.toml").write_text("[context]\nkeep_turns = 1\n" + table)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"model": "my-model", "replies": [
        {"text": "one", "usage": {"input_tokens": 900, "output_tokens": 5}}, {"text": "two"}]}))
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script),
                        "--input-format", "stream-json", "--output-format", "stream-json"],
                       cwd=ws, env=_env(cox_home), input="".join(  # the second turn waits for the judgement
                           json.dumps({"type": "user_turn", "text": t}) + "\n" for t in ("a", "b")),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    notices = [json.loads(x)["message"] for x in p.stdout.splitlines() if '"notice"' in x]
    assert any("nothing to compact" in n for n in notices) is judged_full, notices
