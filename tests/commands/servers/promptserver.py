"""An MCP server with prompts (and one tool, so it is a usual server): ``review`` takes a
required ``file`` and an optional ``focus``; ``chat`` returns a user and an assistant message.
``COX_TEST_GOT`` (a file) gets each prompts/get's arguments as one JSON line."""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("cox-prompts")


def _note(args: dict[str, str]) -> None:
    path = os.environ.get("COX_TEST_GOT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(args) + "\n")


@server.tool()
def ping() -> str:
    """Answers pong."""
    return "pong"


@server.prompt(description="Review one file")
def review(file: str, focus: str = "everything") -> str:
    _note({"file": file, "focus": focus})
    return f"Please review {file}, looking at {focus}."


@server.prompt(description="A two-message prompt")
def chat(topic: str) -> list[dict[str, str]]:
    _note({"topic": topic})
    return [{"role": "user", "content": f"Tell me about {topic}."},
            {"role": "assistant", "content": "Gladly."}]


if __name__ == "__main__":
    server.run()
