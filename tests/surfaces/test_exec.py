"""``cox exec PROMPT`` as a real process with the scripted model: Codex's ``exec`` flags, each
shown changing what it says, on ``cox run``'s headless path (one result, cox's exit codes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("headless")


def cox(args: list[str], cwd: Path, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args], cwd=cwd, env=dict(os.environ),
                          input=input, capture_output=True, text=True, timeout=timeout,
                          **({} if input is not None else {"stdin": subprocess.DEVNULL}))


def script(tmp_path: Path, replies: list[dict]) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"model": "scripted", "replies": replies}))
    return path


def lines(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines() if x.strip()]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    d = tmp_path / "repo"
    d.mkdir()
    (d / ".git").mkdir()  # what git_dirs reads: a checkout's .git folder (cox never runs git for it)
    (d / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (d / "a.txt").write_text("alpha\n")
    return d


def write(path: str, text: str, cid: str = "w1") -> dict:
    return {"tool_calls": [{"id": cid, "name": "write", "input": {"path": path, "content": text}}]}


def bash(command: str, cid: str = "b1") -> dict:
    return {"tool_calls": [{"id": cid, "name": "bash", "input": {"command": command}}]}


def test_exec_runs_the_prompt_on_the_headless_path(tmp_path, repo):
    s = script(tmp_path, [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
                          {"text": "It says alpha."}])
    p = cox(["exec", "--script", str(s), "read a"], repo)
    assert (p.returncode, p.stdout) == (0, "It says alpha.\n"), p.stderr
    # --json: cox's stream-json events, the one result last
    s = script(tmp_path, [{"text": "hi"}])
    p = cox(["exec", "--script", str(s), "--json", "hello"], repo)
    out = lines(p.stdout)
    assert out[0]["type"] == "session_started" and out[0]["cwd"] == str(repo)
    assert [o["type"] for o in out].count("result") == 1 and out[-1]["result"] == "hi"
    assert [o["text"] for o in out if o["type"] == "user_message"] == ["hello"]
    # '-' (or no prompt, stdin not a terminal) reads the prompt from stdin
    for args in (["-"], []):
        s = script(tmp_path, [{"text": "got it"}])
        p = cox(["exec", "--script", str(s), "--json", *args], repo, input="from stdin\n")
        assert [o["text"] for o in lines(p.stdout) if o["type"] == "user_message"] == ["from stdin\n"], p.stderr


def test_exec_refuses_outside_a_git_repository_unless_told(tmp_path):
    bare = Path(tempfile.mkdtemp(prefix="cox-nogit-", dir="/var/tmp"))  # no repository above it
    try:
        s = script(tmp_path, [{"text": "ran"}])
        p = cox(["exec", "--script", str(s), "--json", "go"], bare)
        assert p.returncode == 64
        assert "not inside a git repository" in p.stderr and "--skip-git-repo-check" in p.stderr
        (res,) = lines(p.stdout)  # the refusal is a result like any other
        assert res["subtype"] == "error_usage" and "--skip-git-repo-check" in res["result"]
        p = cox(["exec", "--script", str(s), "--skip-git-repo-check", "go"], bare)
        assert (p.returncode, p.stdout) == (0, "ran\n"), p.stderr
    finally:
        shutil.rmtree(bare)


def test_cd_chooses_the_workspace(tmp_path, repo):
    s = script(tmp_path, [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]}, {"text": "ok"}])
    p = cox(["exec", "--script", str(s), "--json", "-C", str(repo), "read"], tmp_path)
    out = lines(p.stdout)
    assert out[0]["cwd"] == str(repo), p.stderr
    assert "alpha" in [o for o in out if o["type"] == "tool_call_done"][0]["result"]["visible"]
    p = cox(["exec", "--script", str(s), "-C", str(tmp_path / "nope"), "read"], tmp_path)
    assert p.returncode == 64 and "is not a folder" in p.stderr


def test_c_sets_any_config_key_for_the_run(tmp_path, repo):
    two = [bash("touch made.txt"), {"text": "done"}]
    # Without it the command is denied (headless, no allow rule) ...
    p = cox(["exec", "--script", str(script(tmp_path, two)), "--json", "go"], repo)
    assert p.returncode == 2 and not (repo / "made.txt").exists()
    # ... a rule list given with -c (TOML) allows it; danger-full-access is not TOML, so it is the
    # text itself (Codex's reading of a bare word)
    p = cox(["exec", "--script", str(script(tmp_path, two)), "--json", "-c", "sandbox.mode=danger-full-access",
             "-c", 'permissions.allow=["Bash(touch:*)"]', "go"], repo)
    assert p.returncode == 0 and (repo / "made.txt").exists(), p.stderr
    # a number, read as TOML
    p = cox(["exec", "--script", str(script(tmp_path, two)), "--json", "-c", "core.max_turns=1", "go"], repo)
    assert lines(p.stdout)[-1]["subtype"] == "error_max_turns"


@pytest.mark.parametrize(("pair", "said"), [
    ("core.modle=x", "flag:-c: unknown key 'core.modle'; did you mean 'core.model'?"),
    ("core.max_turns=ten", "flag:-c: core.max_turns: expected an integer written in TOML, got 'ten'"),
    ("sandbox.mode=readonly", "did you mean 'read-only'?"),
    ("permissions.allow=Bash(ls)", "permissions.allow: expected a list of strings written in TOML"),
    ("core.max_turns", "wants KEY=VALUE"),
])
def test_a_bad_c_is_a_usage_error_and_nothing_runs(tmp_path, repo, pair, said):
    s = script(tmp_path, [write("x.txt", "x"), {"text": "ran"}])
    p = cox(["exec", "--script", str(s), "--json", "-c", pair, "go"], repo)
    assert p.returncode == 64, p.stderr
    assert said in p.stderr and "Traceback" not in p.stderr
    assert not (repo / "x.txt").exists()
    assert not [o for o in lines(p.stdout) if o["type"] == "session_started"]


def test_sandbox_read_only_is_plan_mode(tmp_path, repo):
    p = cox(["exec", "--script", str(script(tmp_path, [write("new.txt", "x"), {"text": "no"}])), "--json",
             "-s", "read-only", "go"], repo)
    out = lines(p.stdout)
    assert out[0]["permission_mode"] == "plan", out[0]
    assert p.returncode == 2 and not (repo / "new.txt").exists()


def test_sandbox_workspace_write_lets_edits_run_and_still_denies_commands(tmp_path, repo):
    p = cox(["exec", "--script", str(script(tmp_path, [write("new.txt", "x"), bash("touch cmd.txt"),
                                                          {"text": "ok"}])), "--json", "-s", "workspace-write", "go"],
            repo)
    out = lines(p.stdout)
    assert out[0]["permission_mode"] == "acceptEdits"
    assert (repo / "new.txt").read_text() == "x"
    assert not (repo / "cmd.txt").exists() and p.returncode == 2  # a command still needs an allow rule


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="--full-auto runs commands only inside the sandbox")
def test_full_auto_runs_commands_inside_the_sandbox_only(tmp_path, repo):
    outside = Path(tempfile.mkdtemp(prefix="cox-fullauto-", dir="/var/tmp"))
    try:
        replies = [bash("touch in.txt", "b1"), bash(f"touch {outside}/out.txt", "b2"), {"text": "ok"}]
        p = cox(["exec", "--script", str(script(tmp_path, replies)), "--json", "--full-auto", "go"], repo)
        out = lines(p.stdout)
        assert out[0]["permission_mode"] == "bypassPermissions"
        assert (repo / "in.txt").exists(), p.stderr
        assert not (outside / "out.txt").exists(), "--full-auto let a command write outside the workspace"
        # --dangerously-bypass-approvals-and-sandbox: the same command reaches outside
        p = cox(["exec", "--script", str(script(tmp_path, replies)), "--json",
                 "--dangerously-bypass-approvals-and-sandbox", "go"], repo)
        assert (outside / "out.txt").exists(), p.stderr
    finally:
        shutil.rmtree(outside)


def test_contradicting_sandbox_flags_are_a_usage_error(tmp_path, repo):
    s = script(tmp_path, [{"text": "x"}])
    for args in (["--full-auto", "--yolo"], ["--full-auto", "-s", "read-only"]):
        p = cox(["exec", "--script", str(s), *args, "go"], repo)
        assert p.returncode == 64 and ("pick one" in p.stderr or "pass one of them" in p.stderr), p.stderr


def test_model_names_the_sessions_model(tmp_path, repo):
    p = cox(["exec", "--script", str(script(tmp_path, [{"text": "x"}])), "--json", "-m", "claude-opus-4-1", "go"],
            repo)
    assert lines(p.stdout)[0]["model"] == "claude-opus-4-1", p.stderr


def test_output_last_message_writes_the_final_answer_whole(tmp_path, repo):
    target = tmp_path / "last.txt"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    target.symlink_to(victim)  # a link at the name is replaced, never written through
    s = script(tmp_path, [write("x.txt", "1"), {"text": "The answer."}])
    p = cox(["exec", "--script", str(s), "-s", "workspace-write", "-o", str(target), "go"], repo)
    assert p.returncode == 0, p.stderr
    assert not target.is_symlink() and target.read_text() == "The answer."
    assert victim.read_text() == "keep\n"
    # a failed run replaces it too (with what the model had said), so no stale answer passes for this one
    p = cox(["exec", "--script", str(script(tmp_path, [{"text": "half", "stop": "max_tokens"}])),
             "--output-last-message", str(target), "-c", "core.max_turns=1", "go"], repo)
    assert p.returncode != 0 and target.read_text() in ("", "half")
    p = cox(["exec", "--script", str(s), "-o", str(tmp_path / "no" / "such.txt"), "go"], repo)
    assert p.returncode == 64 and "is not a folder" in p.stderr


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}


def test_output_schema_validates_the_final_answer_and_asks_again_once(tmp_path, repo):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    s = script(tmp_path, [{"text": "n is three"}, {"text": '{"n": 3}'}])
    p = cox(["exec", "--script", str(s), "--json", "--output-schema", str(schema), "go"], repo)
    out = lines(p.stdout)
    assert p.returncode == 0, p.stderr
    assert [o["type"] for o in out].count("result") == 1
    assert out[-1]["structured_output"] == {"n": 3} and out[-1]["result"] == '{"n": 3}'
    users = [o["text"] for o in out if o["type"] == "user_message"]
    assert users[0] == "go" and "not valid for the required JSON Schema" in users[1]
    # twice wrong: the run fails and says why
    s = script(tmp_path, [{"text": "three"}, {"text": '{"n": "3"}'}])
    p = cox(["exec", "--script", str(s), "--json", "--output-schema", str(schema), "go"], repo)
    res = lines(p.stdout)[-1]
    assert p.returncode == 1 and res["is_error"] and "does not match" in res["result"]
    # a schema that is no schema never starts a session
    schema.write_text('{"type": 5}')
    p = cox(["exec", "--script", str(s), "--output-schema", str(schema), "go"], repo)
    assert p.returncode == 64 and "--output-schema is not a valid JSON Schema" in p.stderr
    p = cox(["exec", "--script", str(s), "--output-schema", str(tmp_path / "none.json"), "go"], repo)
    assert p.returncode == 64 and "cannot read" in p.stderr
