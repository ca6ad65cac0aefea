"""Custom commands and ``/init`` in the line-mode surface (``cox`` with stdin not a terminal):
``/help`` lists them, a repository's ``!`…``` line the engine asks about is asked like a
model's call (no runs it not, yes runs it), and ``/init`` writes AGENTS.md through the write
tool and its approval — or, when one exists, tells the model to improve it."""

from __future__ import annotations

import json

from tests.hooks.rig import Rig

from .test_commands_headless import HOSTILE, command


def plain(rig: Rig, replies: list[dict[str, object]], typed: str) -> tuple[str, list[dict[str, object]]]:
    script = rig.tmp / "script.json"
    script.write_text(json.dumps({"model": "scripted", "replies": replies}))
    rig.dump.unlink(missing_ok=True)
    p = rig.cox("--script", str(script), input=typed)
    assert p.returncode == 0, p.stderr
    return p.stdout, json.loads(rig.dump.read_text()) if rig.dump.exists() else []


def test_help_lists_custom_commands(rig: Rig) -> None:
    command(rig.ws / ".claude" / "commands", "review", "---\ndescription: Review a file\nargument-hint: [file]\n---\nx")
    out, _ = plain(rig, [], "/help\n/quit\n")
    assert "/review [file] — Review a file (project)" in out and "/init" in out


def test_a_commands_line_is_asked_and_a_no_runs_nothing(rig: Rig) -> None:
    command(rig.ws / ".claude" / "commands", "status", HOSTILE)
    out, requests = plain(rig, [], "/status\nn\n/quit\n")
    assert "a command wants to run: touch out/marker" in out
    assert not (rig.out / "marker").exists()
    assert "you declined it" in out and requests == []


def test_a_yes_runs_the_line_and_sends_the_turn(rig: Rig) -> None:
    command(rig.ws / ".claude" / "commands", "status", HOSTILE + " !`cat a.txt`")
    out, requests = plain(rig, [{"text": "summarised"}], "/status\ny\n/quit\n")
    assert (rig.out / "marker").exists()
    assert "summarised" in out
    sent = json.dumps(requests[0]["messages"])
    assert "Here is the status:" in sent and "alpha" in sent


def test_init_writes_agents_md_through_the_write_tool_and_its_approval(rig: Rig) -> None:
    write = {"tool_calls": [{"id": "w1", "name": "write", "input": {"path": "AGENTS.md",
                                                                    "content": "# Build\nmake\n"}}]}
    out, requests = plain(rig, [write, {"text": "Wrote AGENTS.md."}], "/init\ny\n/quit\n")
    assert "allow? [y]es once" in out
    assert (rig.ws / "AGENTS.md").read_text() == "# Build\nmake\n"
    prompt = json.dumps(requests[0]["messages"])
    assert "write an AGENTS.md" in prompt and "test" in prompt


def test_init_on_an_existing_agents_md_asks_for_an_improvement(rig: Rig) -> None:
    (rig.ws / "AGENTS.md").write_text("keep this rule\n")
    out, requests = plain(rig, [{"text": "Looked."}], "/init\n/quit\n")
    prompt = json.dumps(requests[0]["messages"])
    assert "already exists" in prompt and "do not overwrite it" in prompt
    assert (rig.ws / "AGENTS.md").read_text() == "keep this rule\n"


def test_init_in_a_headless_run(rig: Rig) -> None:
    run = rig.run([{"text": "ok"}], "/init", mode="default")
    assert "write an AGENTS.md at its root" in json.dumps(run.requests[0]["messages"])
