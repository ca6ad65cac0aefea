"""Claude Code's request flags over the real wire (issue 15): a loopback model API shows what each
one puts in the request — ``--system-prompt-file`` / ``--append-system-prompt-file`` the system
text, ``--effort`` / ``--task-budget`` Anthropic's ``output_config`` (with the task-budget beta),
``--max-thinking-tokens`` / ``--thinking`` / ``--thinking-display`` the ``thinking`` field,
``--betas`` the ``anthropic-beta`` header, and on OpenAI the reasoning effort. What a wire has no
field for, and what cox cannot do (``--plugin-dir`` …), is a usage error before any request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.provider import anthropic_text, chat_text
from tests.provider.loopback import Loopback, Reply

pytestmark = pytest.mark.xdist_group("headless")


def cox(ws: Path, env_extra: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "-p", "hi", "--output-format", "json", *args],
                          cwd=ws, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    return d


def anthropic(ws: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    with Loopback() as api:
        api.add(Reply(anthropic_text(["ok"])))
        p = cox(ws, {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.url}, "--model", "sonnet", *args)
        return p, list(api.requests)


def system_text(request: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in request["json"]["system"])


def test_the_request_flags_reach_anthropic(ws, tmp_path):
    (tmp_path / "sys.md").write_text("You are the release bot.")
    (tmp_path / "more.md").write_text("Always answer in French.")
    p, reqs = anthropic(ws, "--system-prompt-file", str(tmp_path / "sys.md"), "--append-system-prompt-file",
                        str(tmp_path / "more.md"), "--effort", "low", "--task-budget", "50000",
                        "--max-thinking-tokens", "4096", "--thinking-display", "summarized",
                        "--betas", "context-1m-2025-08-07,interleaved-thinking-2025-05-14")
    assert p.returncode == 0, p.stderr
    (req,) = reqs
    body, headers = req["json"], {k.lower(): v for k, v in req["headers"].items()}
    assert "You are the release bot." in system_text(req) and "Always answer in French." in system_text(req)
    assert body["output_config"] == {"effort": "low", "task_budget": {"type": "tokens", "total": 50000}}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096, "display": "summarized"}
    assert headers["anthropic-beta"].split(",") == ["context-1m-2025-08-07", "interleaved-thinking-2025-05-14",
                                                    "task-budgets-2026-03-13"]


def test_without_the_flags_the_anthropic_request_has_none_of_it(ws):
    p, (req,) = anthropic(ws)
    assert p.returncode == 0, p.stderr
    assert "output_config" not in req["json"] and "thinking" not in req["json"]
    assert "anthropic-beta" not in {k.lower() for k in req["headers"]}


def test_thinking_adaptive_and_disabled(ws):
    _, (req,) = anthropic(ws, "--thinking", "adaptive")
    assert req["json"]["thinking"] == {"type": "adaptive"}
    _, (req,) = anthropic(ws, "--thinking", "disabled", "--mode", "architect")  # off even where cox would think
    assert "thinking" not in req["json"]


def test_effort_reaches_an_openai_compatible_server_as_reasoning_effort(ws):
    with Loopback() as api:
        api.add(Reply(chat_text(["ok"])))
        p = cox(ws, {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": api.url + "/v1"}, "--model", "sonnet", "--effort", "max")
        assert p.returncode == 0, p.stderr
        assert api.requests[0]["json"]["reasoning_effort"] == "xhigh"


@pytest.mark.parametrize(("args", "said"), [
    (("--betas", "x-1"), "only Anthropic's API takes this"),
    (("--plugin-dir", "/tmp/p"), "cox does not load Claude Code plugins"),
    (("--resume-session-at=abc",), "--resume-session-at: cox resumes a whole session"),
    (("--resume-drops-turn=abc",), "--resume-drops-turn"),
    (("--session-mirror",), "cannot mirror it"),
    (("--max-thinking-tokens", "lots"), "wants a whole number"),
    (("--system-prompt", "a", "--system-prompt-file", "/nonexistent"), "both give it"),
    (("--append-system-prompt-file", "/nonexistent/x"), "cannot be read"),
])
def test_what_cannot_be_honoured_is_refused_before_any_request(ws, args, said):
    with Loopback() as api:
        p = cox(ws, {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": api.url + "/v1"}, "--model", "sonnet", *args)
        assert api.requests == []
    assert p.returncode != 0
    assert said in p.stderr + p.stdout, p.stderr


def test_openai_responses_takes_effort_and_a_thinking_budget_on_the_main_loop_only():
    """OpenAI's own Responses API (its host is api.openai.com, so no loopback here): the bodies."""
    from cox.actors.provider.openai_responses import OpenAIResponsesProvider
    from cox.protocol.model import ModelRequest
    from cox.surfaces.compat_flags import FlagError, RequestFlags, apply_request_flags

    def body(flags: RequestFlags, tier: str = "code") -> dict[str, Any]:
        p = OpenAIResponsesProvider("gpt-5", api_key="sk-test")
        apply_request_flags(p, "openai", flags)
        return p.build_body(ModelRequest(model="gpt-5", system=["", "s"], tools=[], messages=[], tier=tier))

    assert body(RequestFlags(effort="low"))["reasoning"]["effort"] == "low"
    assert body(RequestFlags(thinking_budget=8000))["reasoning"]["effort"] == "high"
    assert "effort" not in body(RequestFlags(thinking_budget=8000), tier="cheap")["reasoning"]
    assert body(RequestFlags(thinking="disabled"))["reasoning"]["effort"] == "low"
    with pytest.raises(FlagError, match="only Anthropic"):
        body(RequestFlags(task_budget=1000))
