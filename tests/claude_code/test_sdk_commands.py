"""The session's slash commands through the real SDK: listed in ``initialize``
(``get_server_info()``) and ``system/init``, and a ``/name args`` message expanded as
``cox run -p "/name args"`` is (custom command, skill, ``/init``); one that cannot be expanded is
that turn's error result and the client's next turn runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.claude_code.conftest import Cox, run


def workspace(cox_sdk: Cox) -> Path:
    commands = cox_sdk.ws / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review one file\nargument-hint: [file]\n---\n"
                                        "Review the file $1 closely.")
    (commands / "boom.md").write_text("Status: !`touch boom-marker` now.")  # needs approval: refused headless
    skill = cox_sdk.ws / ".claude" / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy the imports\n---\nSort the imports of $ARGUMENTS.")
    return cox_sdk.home / "dump.json"


def user_texts(dump: Path) -> list[str]:
    """The last user message of each request the scripted model got."""
    out = []
    for request in json.loads(dump.read_text()):
        content = request["messages"][-1]["content"]
        out.append(content if isinstance(content, str) else
                   "".join(b.get("text", "") for b in content if b.get("type") == "text"))
    return out


def test_commands_are_listed_and_a_slash_message_is_expanded(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient, ResultMessage, SystemMessage

    dump = workspace(cox_sdk)
    cox_sdk.replies([{"text": "reviewed"}, {"text": "after the refusal"}, {"text": "tidied"}])
    options = cox_sdk.options()
    options.env["COX_SCRIPTED_DUMP"] = str(dump)

    async def main() -> tuple[Any, list[list[Any]]]:
        async with ClaudeSDKClient(options) as client:
            info = await client.get_server_info()
            turns = []
            for prompt in ("/review a.txt", "/boom", "plain words", "/tidy src/app.py"):
                await client.query(prompt)
                turns.append([message async for message in client.receive_response()])
            return info, turns

    info, turns = run(main)
    listed = {c["name"]: c for c in info["commands"]}
    assert listed["review"] == {"name": "review", "description": "Review one file", "argumentHint": "[file]"}
    assert {"init", "review", "boom", "tidy"} <= set(listed)
    assert listed["tidy"]["description"] == "Tidy the imports"
    init = next(m for m in turns[0] if isinstance(m, SystemMessage) and m.subtype == "init")
    assert {"init", "review", "boom", "tidy"} <= set(init.data["slash_commands"])
    assert init.data["skills"] == ["tidy"]
    results = [t[-1] for t in turns]
    assert all(isinstance(r, ResultMessage) for r in results)
    assert [r.is_error for r in results] == [False, True, False, False]
    (why,) = results[1].errors
    assert "/boom" in why and "not run" in why and results[1].subtype == "error_during_execution"
    assert not (cox_sdk.ws / "boom-marker").exists()
    sent = user_texts(dump)
    assert len(sent) == 3  # the refused command never reached the model
    assert "Review the file a.txt closely." in sent[0]
    assert sent[1] == "plain words"
    assert "Sort the imports of src/app.py." in sent[2] and "Skill 'tidy'" in sent[2]


def test_init_from_stdin_is_the_init_turn(cox_sdk):
    from claude_agent_sdk import ClaudeSDKClient

    dump = cox_sdk.home / "dump.json"
    cox_sdk.replies([{"text": "surveyed"}])
    options = cox_sdk.options()
    options.env["COX_SCRIPTED_DUMP"] = str(dump)

    async def main() -> list[Any]:
        async with ClaudeSDKClient(options) as client:
            await client.query("/init")
            return [message async for message in client.receive_response()]

    messages = run(main)
    assert not messages[-1].is_error
    (sent,) = user_texts(dump)
    assert sent.startswith("Survey this repository") and "AGENTS.md" in sent


def test_an_mcp_servers_prompts_are_commands_listed_and_expanded(cox_sdk):
    """A real MCP server's prompts (tests/commands/servers/promptserver.py, given in the SDK's
    ``mcp_servers``): listed as ``mcp__p__review`` with its arguments as the hint, and a
    ``/mcp__p__review FILE`` message is the prompt's text."""
    import sys

    from claude_agent_sdk import ClaudeSDKClient, SystemMessage

    server = Path(__file__).resolve().parents[1] / "commands" / "servers" / "promptserver.py"
    dump = cox_sdk.home / "dump.json"
    cox_sdk.replies([{"text": "reviewed"}])
    options = cox_sdk.options(mcp_servers={"p": {"command": sys.executable, "args": [str(server)]}})
    options.env["COX_SCRIPTED_DUMP"] = str(dump)

    async def main() -> tuple[Any, list[Any]]:
        async with ClaudeSDKClient(options) as client:
            info = await client.get_server_info()
            await client.query("/mcp__p__review src/app.py")
            return info, [message async for message in client.receive_response()]

    info, messages = run(main)
    listed = {c["name"]: c for c in info["commands"]}
    assert listed["mcp__p__review"] == {"name": "mcp__p__review", "description": "Review one file",
                                        "argumentHint": "<file> [focus]"}
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert "mcp__p__review" in init.data["slash_commands"] and "mcp__p__chat" in init.data["slash_commands"]
    assert not messages[-1].is_error
    (sent,) = user_texts(dump)
    assert sent == "Please review src/app.py, looking at everything."
