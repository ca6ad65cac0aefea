"""What the model is told, in figures: cox's system prompt, its tool descriptions and the first
request of a session with every core tool, beside the peers' system prompts (issue 15).

    .venv/bin/python bench/prompt.py

The first request is built as a session builds it: the core tools a ``cox`` session with agents
starts with (``builtin_tools`` and ``agent_tools`` with the built-in agent types, as
``surfaces/commands.session_tools`` gives them), ``request.Assembler`` for the system blocks and
the history, and the Anthropic adapter's ``build_body`` for the JSON, encoded the way the
transport sends it. The workspace is an empty folder (no instruction files), the prompt one short
line, so the figure is cox's own share. ``tests/session/test_prompt.py`` holds it to
:data:`FIRST_REQUEST_CEILING`.

Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cox.actors.provider.anthropic import AnthropicProvider  # noqa: E402
from cox.actors.session.prompt import PROMPT_VERSION, SYSTEM_PROMPT  # noqa: E402
from cox.actors.session.request import Assembler, tool_block  # noqa: E402
from cox.actors.tools.agent import agent_tools  # noqa: E402
from cox.actors.tools.base import BaseTool  # noqa: E402
from cox.actors.tools.registry import builtin_tools, specs  # noqa: E402
from cox.agents.defs import builtin_agents  # noqa: E402
from cox.protocol.model import ModelRequest  # noqa: E402

MODEL = "claude-sonnet-4-5"
FIRST_REQUEST_CEILING = 40_000
"""Bytes the first request may take with every core tool (issue 15: ≤ 40 KB)."""

PEERS = {"Claude Code": 5_900, "Codex": 26_600}
"""Characters of system prompt the peers send (the figures of issue 15)."""


def core_tools() -> dict[str, BaseTool]:
    """The tools a session that may start agents opens with, none deferred and no MCP server."""
    types = {name: d.description for name, d in builtin_agents().items()}
    return {**builtin_tools(), **agent_tools(types)}


def first_request(cwd: Path, text: str = "Fix the failing test.") -> tuple[ModelRequest, bytes]:
    """The first request of a session in ``cwd`` with every core tool, and its body as sent."""
    assembler = Assembler(MODEL, specs(core_tools()), cwd)
    request = assembler.build([{"role": "user", "content": [{"type": "text", "text": text}], "_turn": 1}], turn=1)
    body = AnthropicProvider(MODEL, api_key="bench").build_body(request)
    return request, json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def description_chars(tools: dict[str, BaseTool]) -> int:
    """Characters of every description string the tools carry: each tool's and each parameter's."""
    def walk(node: Any) -> int:
        if isinstance(node, dict):
            own = len(node["description"]) if isinstance(node.get("description"), str) else 0
            return own + sum(walk(v) for k, v in node.items() if k != "description" or not isinstance(v, str))
        if isinstance(node, list):
            return sum(walk(v) for v in node)
        return 0

    return sum(len(t.description) + walk(t.input_schema) for t in tools.values())


def main() -> None:
    tools = core_tools()
    with tempfile.TemporaryDirectory(prefix="cox-bench-prompt-") as tmp:
        _, body = first_request(Path(tmp))
    prompt = len(SYSTEM_PROMPT)
    print(f"system prompt ({PROMPT_VERSION}): {prompt:,} characters, {len(SYSTEM_PROMPT.encode()):,} bytes")
    for peer, chars in PEERS.items():
        print(f"  {prompt / chars:.2f}× {peer}'s {chars:,} characters")
    print(f"tool descriptions ({len(tools)} core tools): {description_chars(tools):,} characters; "
          f"the tool block with its schemas {len(tool_block(specs(tools)).encode()):,} bytes")
    print(f"first request with every core tool: {len(body):,} bytes "
          f"({len(body) / FIRST_REQUEST_CEILING:.0%} of the {FIRST_REQUEST_CEILING:,}-byte ceiling)")


if __name__ == "__main__":
    main()
