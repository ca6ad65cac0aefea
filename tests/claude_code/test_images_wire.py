"""Images in a user turn reach the model (issue 15): a stream-json ``user`` message's image blocks
(Claude Code's stdin) and cox's own ``user_turn`` ``images`` become image blocks of the request,
in Anthropic's shape and OpenAI's, over the real wire to a loopback model API. An image that is
not one (bytes that are no PNG, JPEG, GIF or WebP), or is too big, is left out with a sentence
saying why — to the person and to the model — and the turn's text still goes."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.provider import anthropic_text, chat_text
from tests.provider.loopback import Loopback, Reply

pytestmark = pytest.mark.xdist_group("headless")

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 24).decode()
TIFF = base64.b64encode(b"II*\x00" + b"\x00" * 24).decode()
HUGE = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 3_800_000).decode()


def cox(ws: Path, env_extra: dict[str, str], stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args, "--input-format", "stream-json",
                           "--output-format", "stream-json", "--verbose"], cwd=ws, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


def claude_line() -> str:
    content = [{"type": "text", "text": "what is in these?"},
               {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
               {"type": "image", "source": {"type": "base64", "media_type": "image/tiff", "data": TIFF}},
               {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]
    return json.dumps({"type": "user", "message": {"role": "user", "content": content}}) + "\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    return d


def test_claude_stdin_images_reach_anthropic_as_image_blocks(ws):
    with Loopback() as api:
        api.add(Reply(anthropic_text(["a square"])))
        p = cox(ws, {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.url}, claude_line(), "-p",
                "--model", "sonnet")
        assert p.returncode == 0, p.stderr
        user = api.requests[0]["json"]["messages"][-1]["content"]
    texts = [b["text"] for b in user if b["type"] == "text"]
    images = [b["source"] for b in user if b["type"] == "image"]
    assert texts[0] == "what is in these?"
    assert images == [{"type": "base64", "media_type": "image/png", "data": PNG},
                      {"type": "url", "url": "https://example.com/a.png"}]
    assert any("image 2 of the message was left out" in t and "image/tiff" in t for t in texts)  # the model is told
    assert "image 2 of the message was left out" in p.stdout + p.stderr  # and the person
    results = [json.loads(x) for x in p.stdout.splitlines() if x.strip() and json.loads(x)["type"] == "result"]
    assert results[-1]["result"] == "a square"


def _openai_parts(request: dict[str, Any]) -> list[dict[str, Any]]:
    last = request["json"]["messages"][-1]
    assert last["role"] == "user"
    return list(last["content"])


def test_cox_user_turn_images_reach_openai_as_image_url_parts_and_a_too_big_one_is_said(ws):
    line = json.dumps({"type": "user_turn", "text": "look", "images": [
        {"media_type": "image/png", "data": PNG}, {"media_type": "image/png", "data": HUGE}]}) + "\n"
    with Loopback() as api:
        api.add(Reply(chat_text(["seen"])))
        p = cox(ws, {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": api.url + "/v1"}, line, "run",
                "--model", "sonnet")
        assert p.returncode == 0, p.stderr
        parts = _openai_parts(api.requests[0])
    assert parts[0] == {"type": "text", "text": parts[0]["text"]} and parts[0]["text"].startswith("look")
    assert "image 2 of the message was left out" in parts[0]["text"] and "at most 3,750,000 bytes" in parts[0]["text"]
    assert parts[1:] == [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]
    notices = [json.loads(x) for x in p.stdout.splitlines() if x.strip() and json.loads(x)["type"] == "notice"]
    assert any("image 2 of the message was left out" in n["message"] for n in notices)
