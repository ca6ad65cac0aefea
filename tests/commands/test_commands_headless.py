"""Custom slash commands through a real ``cox run -p "/name args"`` on the scripted model: the
four folders, namespaces, arguments, and ``!`…``` lines judged by the permission engine — a
repository's command whose line would create a marker file must not create it under
``--approve never`` unless a rule allows that line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.hooks.rig import Rig


def command(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def turn_text(run: object) -> str:
    """The user turn the model got (the first request's last user message)."""
    messages = run.requests[0]["messages"]  # type: ignore[attr-defined]
    return json.dumps([m for m in messages if m["role"] == "user"][-1]["content"])


def allow(rig: Rig, *rules: str) -> None:
    (rig.cox_home / "config.toml").write_text("[permissions]\nallow = " + json.dumps(list(rules)) + "\n")


def test_arguments_and_namespaces_from_every_folder(rig: Rig) -> None:
    command(rig.ws / ".cox" / "commands", "review", "---\ndescription: Review a file\nargument-hint: [file] [focus]\n"
                                                     "---\nReview $1, focusing on $2. All: $ARGUMENTS")
    command(rig.ws / ".claude" / "commands" / "frontend", "component", "Make a component named $ARGUMENTS")
    command(rig.cox_home / "commands", "mine", "My own prompt")
    command(rig.claude_dir / "commands", "theirs", "Claude-folder prompt")
    run = rig.run([{"text": "ok"}], '/review a.txt "error handling"', mode="default")
    assert run.proc.returncode == 0, run.proc.stderr
    assert "Review a.txt, focusing on error handling. All: a.txt \\\"error handling\\\"" in turn_text(run)
    run = rig.run([{"text": "ok"}], "/frontend:component Button", mode="default")
    assert "Make a component named Button" in turn_text(run)
    run = rig.run([{"text": "ok"}], "/mine extra words", mode="default")
    assert "My own prompt\\n\\nARGUMENTS: extra words" in turn_text(run)
    run = rig.run([{"text": "ok"}], "/theirs", mode="default")
    assert "Claude-folder prompt" in turn_text(run)
    run = rig.run([{"text": "ok"}], "/nosuch thing", mode="default")  # no command: sent as typed
    assert "/nosuch thing" in turn_text(run)


def test_a_users_command_wins_over_a_repositorys_of_the_same_name(rig: Rig) -> None:
    command(rig.cox_home / "commands", "deploy", "the user's deploy")
    command(rig.ws / ".claude" / "commands", "deploy", "the repository's deploy")
    command(rig.ws / ".cox" / "commands", "help", "a repository trying to replace /help")
    run = rig.run([{"text": "ok"}], "/deploy", mode="default")
    assert "the user's deploy" in turn_text(run) and "repository's" not in turn_text(run)
    assert "/help" in run.proc.stderr and "built-in" in run.proc.stderr


HOSTILE = "Here is the status: !`touch out/marker` — now summarise it."


def test_a_repository_commands_line_does_not_run_without_approval(rig: Rig) -> None:
    command(rig.ws / ".claude" / "commands", "status", HOSTILE)
    run = rig.run([{"text": "ok"}], "/status", mode="default")
    assert not (rig.out / "marker").exists()
    assert run.proc.returncode != 0 and run.result["is_error"]
    assert "needs approval" in run.result["result"] and "touch out/marker" in run.result["result"]
    assert run.requests == []  # nothing half-expanded reached the model


def test_a_repository_commands_allowed_tools_cannot_grant(rig: Rig) -> None:
    command(rig.ws / ".cox" / "commands", "status", "---\nallowed-tools: Bash(touch:*)\n---\n" + HOSTILE)
    rig.run([{"text": "ok"}], "/status", mode="default")
    assert not (rig.out / "marker").exists()


def test_a_rule_that_allows_the_line_lets_it_run_and_its_output_is_inlined(rig: Rig) -> None:
    allow(rig, "Bash(touch:*)")
    command(rig.ws / ".claude" / "commands", "status", HOSTILE + " !`cat a.txt`")
    run = rig.run([{"text": "ok"}], "/status", mode="default")
    assert run.proc.returncode == 0, run.proc.stderr
    assert (rig.out / "marker").exists()
    assert "alpha" in turn_text(run) and "!`" not in turn_text(run)


def test_allowed_tools_narrow_even_what_a_rule_allows(rig: Rig) -> None:
    allow(rig, "Bash(touch:*)")
    command(rig.ws / ".claude" / "commands", "status", "---\nallowed-tools: Bash(git status:*)\n---\n" + HOSTILE)
    run = rig.run([{"text": "ok"}], "/status", mode="default")
    assert not (rig.out / "marker").exists()
    assert "allowed-tools" in run.result["result"]


def test_a_users_own_command_may_grant_its_lines(rig: Rig) -> None:
    command(rig.cox_home / "commands", "status", "---\nallowed-tools: [\"Bash(touch:*)\"]\n---\n" + HOSTILE)
    run = rig.run([{"text": "ok"}], "/status", mode="default")
    assert run.proc.returncode == 0, run.proc.stderr
    assert (rig.out / "marker").exists()


def test_a_deny_rule_beats_a_users_grant(rig: Rig) -> None:
    (rig.cox_home / "config.toml").write_text('[permissions]\ndeny = ["Bash(touch:*)"]\n')
    command(rig.cox_home / "commands", "status", "---\nallowed-tools: Bash(touch:*)\n---\n" + HOSTILE)
    run = rig.run([{"text": "ok"}], "/status", mode="default")
    assert not (rig.out / "marker").exists()
    assert "denied" in run.result["result"]


def test_arguments_are_never_run_as_lines(rig: Rig) -> None:
    allow(rig, "Bash(touch:*)")
    command(rig.ws / ".cox" / "commands", "echo", "You said: $ARGUMENTS")
    run = rig.run([{"text": "ok"}], "/echo !`touch out/marker`", mode="default")
    assert run.proc.returncode == 0, run.proc.stderr
    assert not (rig.out / "marker").exists()
    assert "touch out/marker" in turn_text(run)


def test_plan_mode_refuses_a_writing_line(rig: Rig) -> None:
    command(rig.cox_home / "commands", "status", "---\nallowed-tools: Bash(touch:*)\n---\n" + HOSTILE)
    run = rig.run([{"text": "ok"}], "/status", mode="plan")
    assert not (rig.out / "marker").exists()
    assert "plan mode" in run.result["result"]


def test_ext_list_shows_each_command_its_source_and_what_was_skipped(rig: Rig) -> None:
    mine = command(rig.cox_home / "commands", "deploy", "---\ndescription: Ship it\nmodel: haiku\n---\nship")
    theirs = command(rig.ws / ".claude" / "commands", "deploy", "the repository's deploy")
    ns = command(rig.ws / ".cox" / "commands" / "git", "sync", "---\nargument-hint: [branch]\n"
                                                             "allowed-tools: Bash(git fetch:*), Read\n---\nSync $1")
    bad = command(rig.ws / ".cox" / "commands", "broken", "---\ndescription: 'never closed\n---\nx")
    (rig.ws / ".cox" / "commands" / "out.md").symlink_to(rig.tmp / "dump.json")
    out = rig.cox("ext", "list").stdout
    assert f"/deploy — Ship it; model: haiku  — {mine}" in out
    assert f"(skipped /deploy: /deploy is already {mine}'s  — {theirs})" in out
    assert f"/git:sync [branch] — Sync $1; allowed-tools: Bash(git fetch:*), Read  — {ns}" in out
    assert "(skipped /broken: its front matter is not valid" in out and str(bad) in out
    assert "(skipped /out: it resolves to" in out and "outside the workspace" in out


def test_the_commands_model_runs_its_turn_unless_model_is_given(rig: Rig) -> None:
    command(rig.ws / ".cox" / "commands", "quick", "---\nmodel: claude-haiku-4-5\n---\nBe quick")
    run = rig.run([{"text": "ok"}], "/quick", mode="default")
    assert run.requests[0]["model"] == "claude-haiku-4-5"
    run = rig.run([{"text": "ok"}], "/plain", mode="default")
    assert run.requests[0]["model"] != "claude-haiku-4-5"
    run = rig.run([{"text": "ok"}], "/quick", "--model", "claude-sonnet-4-5", mode="default")
    assert run.requests[0]["model"] != "claude-haiku-4-5"


def test_a_pretooluse_hook_sees_and_can_block_a_commands_line(rig: Rig) -> None:
    """The user's hook guards a command's line as it guards the model's bash calls, even where
    the engine would allow the line (bypassPermissions here)."""
    from tests.hooks.rig import one

    rig.hooks({"PreToolUse": one(rig.script("guard.sh", "echo 'no touching today' >&2\nexit 2"), "Bash")})
    command(rig.ws / ".claude" / "commands", "status", HOSTILE)
    run = rig.run([{"text": "ok"}], "/status")
    assert not (rig.out / "marker").exists()
    assert "PreToolUse hook: no touching today" in run.result["result"]


GRANTS = "---\nallowed-tools: Bash(mkdir:*), Bash(echo:*)\n---\nMake the folders."


def _calls(*commands: str) -> dict[str, object]:
    return {"tool_calls": [{"id": f"c{i}", "name": "bash", "input": {"command": c}} for i, c in enumerate(commands)]}


def _outcomes(run: object) -> list[str]:
    """Each call's result status, in order, from cox's events."""
    events = run.events  # type: ignore[attr-defined]
    return [e["result"]["status"] for e in events if e["type"] == "tool_call_done"]


def test_a_users_commands_allowed_tools_pre_approve_its_turn_only_and_only_what_they_cover(rig: Rig) -> None:
    """Under ``--approve never`` the user's own ``/mkd`` pre-approves ``mkdir`` for its turn, as
    Claude Code does; a compound line or a substitution that hides another command is not covered
    (no marker), and the next turn has no grant left."""
    command(rig.cox_home / "commands", "mkd", GRANTS)
    turns = [{"type": "user_turn", "text": "/mkd"}, {"type": "user_turn", "text": "again"}]
    replies = [_calls("mkdir out/made", "echo hi; touch out/m1", "echo $(touch out/m2)"), {"text": "done"},
               _calls("mkdir out/later"), {"text": "denied"}]
    run = rig.run(replies, stdin="".join(json.dumps(t) + "\n" for t in turns), mode="default")
    assert (rig.out / "made").is_dir(), run.proc.stderr
    assert not (rig.out / "m1").exists() and not (rig.out / "m2").exists()
    assert not (rig.out / "later").exists()  # the grant ended with the turn
    got = _outcomes(run)
    assert sorted(got) == ["denied", "denied", "denied", "ok"], got  # denials are delivered first


def test_a_repositorys_commands_allowed_tools_pre_approve_nothing(rig: Rig) -> None:
    command(rig.ws / ".claude" / "commands", "mkd", GRANTS)
    run = rig.run([_calls("mkdir out/made"), {"text": "done"}], "/mkd", mode="default")
    assert "Make the folders." in turn_text(run)
    assert not (rig.out / "made").exists()
    assert _outcomes(run) == ["denied"]


def _skill(root: Path, name: str, tools: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: makes folders\nallowed-tools: {tools}\n---\n"
                                     "Make the folders.")


def test_a_users_skill_pre_approves_its_tools_from_its_loading_on_a_repositorys_does_not(rig: Rig) -> None:
    _skill(rig.cox_home / "skills", "folders", "Bash(mkdir:*)")
    _skill(rig.ws / ".claude" / "skills", "theirs", "Bash(mkdir:*)")
    replies = [_calls("mkdir out/before"),
               {"tool_calls": [{"id": "s1", "name": "skill", "input": {"skill": "folders"}}]},
               _calls("mkdir out/after"), {"text": "done"}]
    run = rig.run(replies, "make folders", mode="default")
    assert not (rig.out / "before").exists() and (rig.out / "after").is_dir(), run.proc.stderr
    replies = [{"tool_calls": [{"id": "s1", "name": "skill", "input": {"skill": "theirs"}}]},
               _calls("mkdir out/theirs"), {"text": "done"}]
    run = rig.run(replies, "make folders", mode="default")
    assert not (rig.out / "theirs").exists()
    run = rig.run([_calls("mkdir out/typed"), {"text": "done"}], "/folders", mode="default")  # typed by the person
    assert (rig.out / "typed").is_dir(), run.proc.stderr


def test_a_skill_wins_a_name_it_shares_with_a_command(rig: Rig) -> None:
    command(rig.cox_home / "commands", "deploy", "the command's deploy")
    _skill(rig.ws / ".cox" / "skills", "deploy", "Read")
    run = rig.run([{"text": "ok"}], "/deploy", mode="default")
    assert "Make the folders." in turn_text(run) and "the command's deploy" not in turn_text(run)
    assert "a skill wins" in run.proc.stderr
