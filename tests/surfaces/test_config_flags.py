"""Claude Code's configuration flags on ``cox run`` and ``cox exec`` (``cox.surfaces.config_flags``),
each through the real command with the scripted model: ``--mcp-config`` (file or JSON,
repeatable) with ``--strict-mcp-config``, ``--settings``, ``--setting-sources``, ``--add-dir``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from cox.surfaces.config_flags import FlagError, read_config_flags

pytestmark = pytest.mark.xdist_group("headless")
SERVER = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "testserver.py"


def cox(args: list[str], cwd: Path, home: Path, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    return subprocess.run([sys.executable, "-m", "cox.surfaces.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def run(tmp_path: Path, ws: Path, replies: list[dict], *flags: str, command: str = "run") -> tuple[int, list[dict], str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"model": "scripted", "replies": replies}))
    head = ["run", "--script", str(script), "-p", "go", "--output-format", "stream-json"] if command == "run" else \
        ["exec", "--script", str(script), "--json", "--skip-git-repo-check", "go"]
    p = cox([*head, *flags], ws, tmp_path / "home")
    out = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    return p.returncode, out, p.stderr


def done(out: list[dict]) -> dict[str, dict]:
    return {e["call_id"]: e["result"] for e in out if e["type"] == "tool_call_done"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    (d / "a.txt").write_text("alpha\n")
    (tmp_path / "home").mkdir()
    return d


def server(**env: str) -> dict:
    return {"command": sys.executable, "args": [str(SERVER)], "env": env}


PEEK = [{"tool_calls": [{"id": "m1", "name": "mcp__one__peek", "input": {}}]}, {"text": "done"}]


# ------------------------------------------------------------------------------ --mcp-config

@pytest.mark.parametrize("command", ["run", "exec"])
def test_mcp_config_json_and_file_add_servers_the_model_can_call(tmp_path, ws, command):
    conf = tmp_path / "mcp.json"
    conf.write_text(json.dumps({"mcpServers": {"two": server()}}))
    inline = json.dumps({"mcpServers": {"one": server()}})
    replies = [{"tool_calls": [{"id": "m1", "name": "mcp__one__peek", "input": {}},
                               {"id": "m2", "name": "mcp__two__peek", "input": {}}]}, {"text": "done"}]
    code, out, err = run(tmp_path, ws, replies, "--mcp-config", inline, "--mcp-config", str(conf), command=command)
    assert code == 0, err
    started = out[0]
    assert {s["name"]: s["status"] for s in started["mcp_servers"]} == {"one": "ready", "two": "ready"}
    assert {r["visible"] for r in done(out).values()} == {"peeked"}
    # without the flag there is no such server
    code, out, err = run(tmp_path, ws, PEEK)
    assert out[0]["mcp_servers"] == [] and done(out)["m1"]["status"] == "error"


def test_strict_mcp_config_uses_only_the_flags_servers(tmp_path, ws, cox_home):
    cox_home.mkdir(parents=True, exist_ok=True)
    marker = tmp_path / "USER-SERVER-STARTED"
    (cox_home / "config.toml").write_text(
        f'[mcp.servers.mine]\ncommand = "sh"\nargs = ["-c", "touch {marker}; exec {sys.executable} {SERVER}"]\n'
        "sandbox = false\n")  # (it writes its marker outside the workspace)
    flag = json.dumps({"mcpServers": {"one": server()}})
    code, out, err = run(tmp_path, ws, PEEK, "--mcp-config", flag)
    assert {s["name"] for s in out[0]["mcp_servers"]} == {"one", "mine"} and marker.exists(), err
    marker.unlink()
    code, out, err = run(tmp_path, ws, PEEK, "--mcp-config", flag, "--strict-mcp-config")
    assert [s["name"] for s in out[0]["mcp_servers"]] == ["one"], err
    assert not marker.exists(), "--strict-mcp-config started a server of the user config"
    assert done(out)["m1"]["visible"] == "peeked"


def test_an_sdk_server_is_parsed_and_marked_but_never_started(tmp_path, ws):
    conf = json.dumps({"mcpServers": {"app": {"type": "sdk", "name": "app"}, "one": server()}})
    flags = read_config_flags(SimpleNamespace(mcp_config=[conf]), ws, cox_home=tmp_path / "h")
    assert flags.sdk_servers == {"app": {"type": "sdk", "name": "app", "sdk": True, "source": "--mcp-config (JSON)"}}
    assert list(flags.mcp) == ["one"]
    code, out, err = run(tmp_path, ws, PEEK, "--mcp-config", conf)
    assert [s["name"] for s in out[0]["mcp_servers"]] == ["one"], err  # the SDK app serves "app", not cox


@pytest.mark.parametrize(("value", "said"), [
    ("{nope", "--mcp-config (JSON): not valid JSON"),
    ('{"servers": {}}', 'expected {"mcpServers"'),
    ('{"mcpServers": {"x": {"type": "stdio"}}}', "a stdio server needs a command string"),
    ('{"mcpServers": {"x": {"type": "http"}}}', "a http server needs a url string"),
    ('{"mcpServers": {"x": {"type": "ws", "url": "u"}}}', "unknown type 'ws'"),
    ('{"mcpServers": {"a__b": {"command": "x"}}}', "may not be empty or hold '/' or '__'"),
    ("/no/such/mcp.json", "does not exist"),
])
def test_a_bad_mcp_config_is_a_usage_error(tmp_path, ws, value, said):
    code, out, err = run(tmp_path, ws, PEEK, "--mcp-config", value)
    assert code == 64 and said in err and "Traceback" not in err, err
    assert out[-1]["subtype"] == "error_usage"


def test_an_sse_server_is_reached_over_the_sse_transport(tmp_path, ws):
    from tests.mcp.servers.httpproc import HttpMcp

    mcp = HttpMcp(env={"COX_TEST_SSE": "1"}).start()
    try:
        url = f"http://127.0.0.1:{mcp.port}/sse"
        conf = json.dumps({"mcpServers": {"old": {"type": "sse", "url": url}}})
        replies = [{"tool_calls": [{"id": "m1", "name": "mcp__old__echo", "input": {"text": "over sse"}}]},
                   {"text": "ok"}]
        code, out, err = run(tmp_path, ws, replies, "--mcp-config", conf, "--permission-mode", "bypassPermissions")
        assert out[0]["mcp_servers"] == [{"name": "old", "status": "ready"}], err
        assert "echo: over sse" in done(out)["m1"]["visible"]
    finally:
        mcp.kill()


# ------------------------------------------------------------------------------ --settings

def bash(command: str, cid: str = "b1") -> dict:
    return {"tool_calls": [{"id": cid, "name": "bash", "input": {"command": command}}]}


def test_settings_rules_apply_as_the_users_own(tmp_path, ws):
    replies = [bash("touch made.txt"), {"text": "ok"}]
    allow = json.dumps({"permissions": {"allow": ["Bash(touch *)"]}})
    code, out, err = run(tmp_path, ws, replies, "--settings", allow, "--sandbox", "danger-full-access",
                         command="exec")
    assert code == 0 and (ws / "made.txt").exists(), err  # a Claude allow rule, in Claude's spelling
    (ws / "made.txt").unlink()
    deny = tmp_path / "deny.json"
    deny.write_text(json.dumps({"permissions": {"deny": ["Read(a.txt)"]}, "env": {"X": "1"}, "model": "opus"}))
    code, out, err = run(tmp_path, ws, [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
                                        {"text": "ok"}], "--settings", str(deny))
    assert done(out)["r1"]["status"] == "denied", err
    assert f"Read(**/a.txt) (from --settings {deny}" in done(out)["r1"]["visible"]  # the flag is the origin
    assert "ignored 'env', 'model'" in err  # what cox does not read is said, not silently dropped


def test_settings_hooks_run_as_the_users_claude_hooks(tmp_path, ws):
    marker = tmp_path / "HOOK-RAN"
    hooks = {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
        {"type": "command", "command": f"touch {marker}; echo blocked by the settings hook >&2; exit 2"}]}]}}
    code, out, err = run(tmp_path, ws, [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
                                        {"text": "ok"}], "--settings", json.dumps(hooks))
    result = done(out)["r1"]
    assert result["status"] == "denied" and "blocked by the settings hook" in result["visible"], err


def test_settings_cannot_loosen_the_mode(tmp_path, ws):
    loose = json.dumps({"permissions": {"defaultMode": "bypassPermissions"}})
    code, out, err = run(tmp_path, ws, [bash("touch x.txt"), {"text": "ok"}], "--settings", loose)
    assert out[0]["permission_mode"] == "default" and not (ws / "x.txt").exists()
    assert "ignored permissions.defaultMode" in err


def test_bad_settings_is_a_usage_error(tmp_path, ws):
    for value, said in (("{nope", "not valid JSON"), ("[1]", "expected a JSON object"), ("/no/such", "does not exist")):
        code, out, err = run(tmp_path, ws, [{"text": "ok"}], "--settings", value)
        assert code == 64 and said in err, err


# ------------------------------------------------------------------------------ --setting-sources

READ_A = [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]}, {"text": "ok"}]


@pytest.mark.parametrize(("sources", "denied_by"), [
    (None, {"user", "project", "local"}), ("user", {"user"}), ("project,local", {"project", "local"}),
    ("local", {"local"}), ("", set()),
])
def test_setting_sources_choose_which_claude_files_are_read(tmp_path, ws, sources, denied_by):
    home = tmp_path / "home"
    files = {"user": home / ".claude" / "settings.json", "project": ws / ".claude" / "settings.json",
             "local": ws / ".claude" / "settings.local.json"}
    # each file denies a different file; which denials hold shows which files were read
    targets = {"user": "u.txt", "project": "p.txt", "local": "l.txt"}
    for name, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"permissions": {"deny": [f"Read({targets[name]})"]}}))
        (ws / targets[name]).write_text(name)
    replies = [{"tool_calls": [{"id": n, "name": "read", "input": {"path": t}} for n, t in targets.items()]},
               {"text": "ok"}]
    flags = () if sources is None else ("--setting-sources", sources)
    code, out, err = run(tmp_path, ws, replies, *flags)
    assert {n for n, r in done(out).items() if r["status"] == "denied"} == denied_by, err


def test_an_unknown_setting_source_is_a_usage_error(tmp_path, ws):
    code, out, err = run(tmp_path, ws, READ_A, "--setting-sources", "user,policy")
    assert code == 64 and "unknown source 'policy'" in err


# ------------------------------------------------------------------------------ --add-dir

def test_add_dir_makes_another_folder_a_writable_root(tmp_path, ws):
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.txt").write_text("beta\n")
    replies = [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": str(other / "b.txt")}},
                               {"id": "w1", "name": "write", "input": {"path": str(other / "c.txt"), "content": "c"}}]},
               {"text": "ok"}]
    code, out, err = run(tmp_path, ws, replies, "--permission-mode", "acceptEdits")
    assert {r["status"] for r in done(out).values()} == {"error"} and not (other / "c.txt").exists()  # outside
    code, out, err = run(tmp_path, ws, replies, "--permission-mode", "acceptEdits", "--add-dir", str(other))
    assert done(out)["r1"]["status"] == "ok" and "beta" in done(out)["r1"]["visible"], err
    assert done(out)["w1"]["status"] == "ok" and (other / "c.txt").read_text() == "c"


def test_an_added_dir_is_writable_in_the_sandbox(tmp_path, ws):
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap: without it commands do not run at all")
    other = tmp_path / "other"
    other.mkdir()
    replies = [bash(f"touch {other}/made.txt"), {"text": "ok"}]
    code, out, err = run(tmp_path, ws, replies, "--permission-mode", "bypassPermissions")
    assert not (other / "made.txt").exists()  # the sandbox keeps it read-only
    code, out, err = run(tmp_path, ws, replies, "--permission-mode", "bypassPermissions", "--add-dir", str(other))
    assert (other / "made.txt").exists(), err


def test_a_bad_add_dir_is_a_usage_error(tmp_path, ws):
    code, out, err = run(tmp_path, ws, READ_A, "--add-dir", str(tmp_path / "none"))
    assert code == 64 and "is not a folder" in err
    with pytest.raises(FlagError, match="cannot be a workspace root"):
        read_config_flags(SimpleNamespace(add_dir=["/"]), ws, cox_home=tmp_path / "h")
