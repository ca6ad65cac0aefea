"""Skills in a real session (scripted model, real actors): the list rides in system[0] byte for
byte on every request, a body reaches the model only after the model calls ``skill`` or the
person names it, and ``cox ext list`` shows them with their sources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cox.actors.tools.registry import builtin_tools
from cox.actors.tools.skill import skill_tools
from cox.agents.skills import load_skills
from tests.harness import run_session

REPO = Path(__file__).resolve().parents[2]
BODY = "SKILL-BODY-7f3a: run scripts/check.sh before you answer."


def make_skill(folder: Path, name: str = "check", description: str = "Checks the build. Use before answering.",
               text: str = BODY) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{text}\n")
    return path


def sent(request: Any) -> str:
    return json.dumps({"system": request.system, "messages": request.messages})


def test_the_list_is_stable_and_the_body_arrives_only_after_the_call(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    make_skill(ws / ".claude" / "skills")
    make_skill(ws / ".cox" / "skills", "other", "Another skill.", "OTHER-BODY")
    skills = load_skills(ws, home)
    tools = {**builtin_tools(), **skill_tools(skills)}
    replies = [{"tool_calls": [{"id": "s1", "name": "skill", "input": {"skill": "check"}}]},
               {"text": "checked"}, {"text": "second turn"}]
    run = run_session(ws, home, replies, ["check it", "again"], tools=tools)
    assert run.provider is not None
    first, second, third = run.provider.requests
    assert BODY not in sent(first) and "OTHER-BODY" not in sent(first), "the first request carries no skill body"
    assert "- check: Checks the build. Use before answering." in first.system[0]
    assert "- other: Another skill." in first.system[0]
    assert first.system[:3] == second.system[:3] == third.system[:3], "system[0..2] byte-stable across requests"
    assert BODY in sent(second) and "OTHER-BODY" not in sent(second)
    results = [b for msg in second.messages for b in msg["content"] if isinstance(b, dict)
               and b.get("type") == "tool_result"]
    assert BODY in str(results[-1]["content"])
    assert [e.result.status.value for e in run.of("tool_call_done")] == ["ok"], "read-only: allowed unasked"


def test_a_session_without_skills_has_no_skill_tool(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    assert skill_tools(load_skills(ws, home)) == {}


def _cox(ws: Path, home: Path, tmp_path: Path, replies: list[dict[str, Any]], prompt: str,
         *extra: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    script, dump = tmp_path / "script.json", tmp_path / "dump.json"
    script.write_text(json.dumps({"model": "scripted", "replies": replies}))
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO), "COX_SCRIPTED_DUMP": str(dump)}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "run", "--script", str(script), "-p", prompt,
                        "--output-format", "stream-json", "--cwd", str(ws), *extra],
                       env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return p, (json.loads(dump.read_text()) if dump.exists() else [])


def test_cox_run_the_model_loads_a_skill_on_demand(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    make_skill(tmp_path / "claude-home" / "skills")  # the user's (CLAUDE_CONFIG_DIR, tests/conftest.py)
    replies = [{"tool_calls": [{"id": "s1", "name": "skill", "input": {"skill": "check"}}]},
               {"text": "done"}]
    p, requests = _cox(ws, home, tmp_path, replies, "go")
    assert p.returncode == 0, p.stderr
    assert len(requests) == 2
    assert BODY not in json.dumps(requests[0]) and "- check: Checks the build." in requests[0]["system"][0]
    assert BODY in json.dumps(requests[1]["messages"])
    assert requests[0]["system"][:3] == requests[1]["system"][:3]


def test_cox_run_a_prompt_naming_a_skill_loads_it_into_that_turn(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    make_skill(ws / ".claude" / "skills", "review", "Reviews a file.", "Review $ARGUMENTS line by line.")
    p, requests = _cox(ws, home, tmp_path, [{"text": "reviewed"}], "/review src/app.py")
    assert p.returncode == 0, p.stderr
    said = requests[0]["messages"][0]["content"][0]["text"]
    assert said.startswith("/review src/app.py\n\n") and "Review src/app.py line by line." in said
    assert str(ws / ".claude" / "skills" / "review") in said  # its folder, for the files it names
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "reviewed"


def test_cox_run_a_prompt_naming_a_model_only_skill_is_refused(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    path = ws / ".claude" / "skills" / "auto" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\ndescription: d\nuser-invocable: false\n---\nAUTO\n")
    p, requests = _cox(ws, home, tmp_path, [{"text": "x"}], "/auto")
    assert p.returncode == 64 and requests == []  # cox's usage exit code; nothing was sent
    result = json.loads(p.stdout.splitlines()[-1])
    assert result["type"] == "result" and result["is_error"] and "for the model only" in json.dumps(result)


def test_a_prompt_that_names_no_skill_goes_as_it_is(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    make_skill(ws / ".claude" / "skills")
    p, requests = _cox(ws, home, tmp_path, [{"text": "ok"}], "/nothing here")
    assert p.returncode == 0, p.stderr
    assert requests[0]["messages"][0]["content"][0]["text"] == "/nothing here"


def test_ext_list_shows_each_skill_and_its_source(tmp_path: Path, cox_home: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    mine = make_skill(cox_home / "skills", "deploy", "my deploy")
    theirs = make_skill(ws / ".claude" / "skills", "deploy", "their deploy")
    make_skill(ws / ".claude" / "skills", "lint", "Lints \x1b[2J code")
    manual = ws / ".cox" / "skills" / "manual" / "SKILL.md"
    manual.parent.mkdir(parents=True)
    manual.write_text("---\ndescription: by hand\ndisable-model-invocation: true\nallowed-tools: Bash\n---\nx\n")
    (ws / ".claude" / "skills" / "key").mkdir()
    (ws / ".claude" / "skills" / "key" / "SKILL.md").symlink_to(tmp_path / "secret")
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "ext", "list", "--cwd", str(ws)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    part = out[out.index("skills ("): out.index("commands (built in)")]
    assert f"  deploy: my deploy  — user: {mine}" in part
    assert f"({theirs}: the project's skill 'deploy' is not used" in part
    assert "  lint: Lints code  — project: " in part and "\x1b" not in out
    assert f"  manual (you only, as /manual): by hand; names tools Bash (granted nothing)  — project: {manual}" in part
    assert "outside the workspace" in part


def test_a_skill_deny_rule_stops_the_call(tmp_path: Path) -> None:
    """``Skill(name)`` rules (Claude Code's spelling) match the skill's name."""
    from cox.config.claude import translate

    assert translate("Skill(check)", "deny") == ("Skill(check)", "")  # a Claude settings rule is kept
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    make_skill(ws / ".claude" / "skills")
    make_skill(ws / ".claude" / "skills", "other", "Another.", "OTHER-BODY")
    tools = {**builtin_tools(), **skill_tools(load_skills(ws, home))}
    replies = [{"tool_calls": [{"id": "s1", "name": "skill", "input": {"skill": "check"}}]},
               {"tool_calls": [{"id": "s2", "name": "skill", "input": {"skill": "other"}}]}, {"text": "ok"}]
    run = run_session(ws, home, replies, "go", tools=tools, deny=["Skill(check)"])
    done = {e.call_id: e.result for e in run.of("tool_call_done")}
    assert done["s1"].status.value == "denied" and done["s2"].status.value == "ok"
    assert run.provider is not None and BODY not in json.dumps([sent(r) for r in run.provider.requests])


def test_the_line_mode_surface_sends_a_named_skill_into_the_turn(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    make_skill(ws / ".cox" / "skills", "review", "Reviews a file.", "Review $ARGUMENTS line by line.")
    script, dump = tmp_path / "script.json", tmp_path / "dump.json"
    script.write_text(json.dumps({"model": "scripted", "replies": [{"text": "reviewed it"}]}))
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO), "COX_SCRIPTED_DUMP": str(dump)}
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "--script", str(script)], cwd=ws, env=env,
                       input="/review lib.py\n/quit\n", capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "reviewed it" in p.stdout
    said = json.loads(dump.read_text())[0]["messages"][0]["content"][0]["text"]
    assert said.startswith("/review lib.py\n\n") and "Review lib.py line by line." in said


def test_cox_run_a_users_skill_gives_the_files_its_body_names(tmp_path: Path) -> None:
    """``read`` cannot reach ``~/.claude/skills`` (outside the workspace); the tool's ``file`` can."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    path = make_skill(tmp_path / "claude-home" / "skills", "ref", "Has a reference.", "Read reference.md first.")
    (path.parent / "reference.md").write_text("REFERENCE-42")
    replies = [{"tool_calls": [{"id": "s1", "name": "skill", "input": {"skill": "ref"}}]},
               {"tool_calls": [{"id": "s2", "name": "skill", "input": {"skill": "ref", "file": "reference.md"}}]},
               {"text": "done"}]
    p, requests = _cox(ws, home, tmp_path, replies, "go")
    assert p.returncode == 0, p.stderr
    assert "REFERENCE-42" not in json.dumps(requests[1]) and "REFERENCE-42" in json.dumps(requests[2]["messages"])
