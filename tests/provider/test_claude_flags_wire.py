"""``--model`` aliases and ``--fallback-model`` over the real wire (issue 15, item 3): a model API on
127.0.0.1 shows which model each request named, for the provider that has a key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.provider import anthropic_text, chat_text
from tests.provider.loopback import Loopback, Reply

pytestmark = pytest.mark.xdist_group("headless")


def run(ws: Path, env_extra: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "-p", "hi", "--output-format", "json",
                           *args], cwd=ws, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    return d


@pytest.mark.parametrize(("alias", "model"), [("opus", "claude-opus-4-5"), ("haiku", "claude-haiku-4-5"),
                                              ("sonnet-4", "claude-sonnet-4")])
def test_an_alias_names_anthropic_s_model_with_an_anthropic_key(ws, alias, model):
    with Loopback() as api:
        api.add(Reply(anthropic_text(["hello"])))
        p = run(ws, {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.url}, "--model", alias)
        assert p.returncode == 0, p.stderr
        assert api.requests[0]["json"]["model"] == model


def test_an_alias_names_the_openai_tier_with_only_an_openai_key(ws):
    with Loopback() as api:
        api.add(Reply(chat_text(["hello"])))
        p = run(ws, {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": api.url + "/v1"}, "--model", "sonnet")
        assert p.returncode == 0, p.stderr
        assert api.requests[0]["json"]["model"] == "gpt-5"


OVERLOADED = Reply([json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                    .encode()], status=529, headers={"content-type": "application/json", "retry-after": "0"})


def test_the_fallback_model_answers_when_the_main_one_stays_overloaded(ws):
    with Loopback() as api:
        for _ in range(5):  # the first attempt and the stream's four retries
            api.add(OVERLOADED)
        api.add(Reply(anthropic_text(["from the fallback"])))
        p = run(ws, {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.url}, "--model", "sonnet",
                "--fallback-model", "haiku")
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["result"] == "from the fallback"
        assert [r["json"]["model"] for r in api.requests] == ["claude-sonnet-4-5"] * 5 + ["claude-haiku-4-5"]
