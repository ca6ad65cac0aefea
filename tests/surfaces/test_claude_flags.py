"""Claude Code's flags on ``cox run`` (issue 15, item 3), each shown to change what it says, end to
end through a real ``cox run`` process and the scripted model (``COX_SCRIPTED_DUMP`` shows what
the model was sent). A value that cannot mean anything is one sentence and the usage exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cox.actors.session.request import SYSTEM_PROMPT
from cox.surfaces.cli import EXIT_USAGE

from .test_headless import cox, lines

pytestmark = pytest.mark.xdist_group("headless")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    (d / "a.txt").write_text("alpha\n")
    return d


class Run:
    """One ``cox run --output-format stream-json`` with a script; what it printed and what the model got."""

    def __init__(self, tmp_path: Path, ws: Path, replies: list[dict], *args: str, prompt: str = "go",
                 fmt: str = "stream-json", env: dict[str, str] | None = None,
                 agents: dict[str, list[dict]] | None = None) -> None:
        self.dump = tmp_path / f"dump-{len(list(tmp_path.glob('dump-*')))}.json"
        path = tmp_path / f"script-{self.dump.stem}.json"
        path.write_text(json.dumps({"model": "scripted", "replies": replies, "agents": agents or {}}))
        self.proc = cox(["run", "--script", str(path), "-p", prompt, "--output-format", fmt, *args], ws,
                        env_extra={"COX_SCRIPTED_DUMP": str(self.dump), **(env or {})})
        self.out = lines(self.proc.stdout) if fmt != "text" else []

    @property
    def code(self) -> int:
        return self.proc.returncode

    @property
    def result(self) -> dict:
        assert self.out and self.out[-1]["type"] == "result", (self.proc.stdout[-2000:], self.proc.stderr)
        return self.out[-1]

    def events(self, kind: str) -> list[dict]:
        return [o for o in self.out if o["type"] == kind]

    def requests(self) -> list[dict]:
        return json.loads(self.dump.read_text()) if self.dump.exists() else []

    def tools_offered(self) -> list[str]:
        return [t["name"] for t in json.loads(self.requests()[0]["system"][0])]


def usage_error(run: Run, *words: str) -> None:
    assert run.code == EXIT_USAGE, (run.code, run.proc.stderr)
    assert run.result["subtype"] == "error_usage"
    for word in words:
        assert word in run.proc.stderr, run.proc.stderr
    assert "Traceback" not in run.proc.stderr


def bash(command: str, id_: str = "b1") -> dict:
    return {"tool_calls": [{"id": id_, "name": "bash", "input": {"command": command}}]}


SCHEMA = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
EDIT = {"id": "e1", "name": "edit", "input": {"path": "a.txt", "old_string": "alpha", "new_string": "beta"}}


# --- --allowedTools / --disallowedTools ------------------------------------------------------------


def test_allowed_tools_let_those_calls_run_without_asking(tmp_path, ws):
    replies = [{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "touch made.txt"}}, EDIT]},
               {"text": "done"}]
    before = Run(tmp_path, ws, replies)
    assert before.code == 2 and len(before.result["permission_denials"]) == 2
    assert not (ws / "made.txt").exists() and (ws / "a.txt").read_text() == "alpha\n"
    after = Run(tmp_path, ws, replies, "--allowedTools", "Bash(touch made.txt) Edit")
    assert after.code == 0, after.proc.stderr
    assert after.result["permission_denials"] == []
    assert (ws / "made.txt").exists() and (ws / "a.txt").read_text() == "beta\n"


def test_allowed_tools_comma_separated_repeated_and_in_the_other_spelling(tmp_path, ws):
    replies = [bash("touch one.txt", "b1"), bash("touch two.txt", "b2"), {"text": "done"}]
    run = Run(tmp_path, ws, replies, "--allowed-tools", "Bash(touch one.txt),Read", "--allowedTools",
              "Bash(touch two.txt:*)")
    assert run.code == 0, run.proc.stderr
    assert (ws / "one.txt").exists() and (ws / "two.txt").exists()


def test_an_allow_rule_from_the_flag_never_covers_a_compound_line(tmp_path, ws):
    run = Run(tmp_path, ws, [bash("git status; touch marker.txt"), {"text": "done"}],
              "--allowedTools", "Bash(git status:*)")
    assert run.code == 2 and not (ws / "marker.txt").exists()


def test_disallowed_tools_deny_even_in_bypass_mode(tmp_path, ws):
    replies = [bash("touch made.txt"), {"text": "done"}]
    bypass = Run(tmp_path, ws, replies, "--dangerously-skip-permissions")
    assert bypass.code == 0 and (ws / "made.txt").exists(), bypass.proc.stderr
    (ws / "made.txt").unlink()
    denied = Run(tmp_path, ws, replies, "--dangerously-skip-permissions", "--disallowedTools", "Bash")
    assert denied.code == 2 and not (ws / "made.txt").exists()
    done = denied.events("tool_call_done")[0]["result"]
    assert done["status"] == "denied" and "rule Bash (from --disallowedTools)" in done["visible"]


def test_disallowed_tools_take_a_path_rule(tmp_path, ws):
    run = Run(tmp_path, ws, [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "a.txt"}}]},
                             {"text": "done"}], "--disallowed-tools", "Read(./a.txt)")
    assert run.code == 2 and "alpha" not in json.dumps(run.events("tool_call_done"))


@pytest.mark.parametrize("flag", ["--allowedTools", "--disallowedTools"])
@pytest.mark.parametrize(("value", "words"), [("Bsh", ["unknown tool 'Bsh'"]), ("bash", ["did you mean Bash"]),
                                              ("Bash(git status", ["missing ')'"]), ("", ["names no rule"])])
def test_a_bad_rule_is_a_usage_error_naming_it(tmp_path, ws, flag, value, words):
    usage_error(Run(tmp_path, ws, [{"text": "never"}], flag, value), *words)


# --- --tools --------------------------------------------------------------------------------------


def test_tools_limits_what_the_model_is_offered(tmp_path, ws):
    run = Run(tmp_path, ws, [bash("touch made.txt"), {"text": "done"}], "--tools", "Read,Grep",
              "--dangerously-skip-permissions")
    assert run.tools_offered() == ["grep", "read"]
    assert run.events("session_started")[0]["tools"] == ["grep", "read"]
    done = run.events("tool_call_done")[0]["result"]
    assert done["status"] == "error" and "unknown tool 'bash'" in done["visible"]
    assert not (ws / "made.txt").exists()


def test_tools_take_both_spellings_and_default_and_nothing(tmp_path, ws):
    mixed = Run(tmp_path, ws, [{"text": "ok"}], "--tools", "Bash", "apply_patch", "LS")
    assert mixed.tools_offered() == ["apply_patch", "bash", "ls"]
    everything = Run(tmp_path, ws, [{"text": "ok"}], "--tools", "default")
    assert {"bash", "edit", "read", "write", "todo_write", "web_fetch"} <= set(everything.tools_offered())
    none = Run(tmp_path, ws, [{"text": "ok"}], "--tools", "")
    assert none.code == 0 and none.tools_offered() == []


def test_an_unknown_tool_is_a_usage_error(tmp_path, ws):
    usage_error(Run(tmp_path, ws, [{"text": "never"}], "--tools", "Read,Frobnicate"),
                "no built-in tool is called 'Frobnicate'", "Bash")


# --- what the model is told -------------------------------------------------------------------------


def test_system_prompt_replaces_cox_s_and_empty_keeps_it(tmp_path, ws):
    run = Run(tmp_path, ws, [{"text": "ok"}], "--system-prompt", "You are a pirate.")
    assert run.requests()[0]["system"][1] == "You are a pirate."
    default = Run(tmp_path, ws, [{"text": "ok"}], "--system-prompt", "")
    assert default.requests()[0]["system"][1] == SYSTEM_PROMPT


def test_append_system_prompt_follows_the_prompt(tmp_path, ws):
    run = Run(tmp_path, ws, [{"text": "ok"}], "--append-system-prompt", "Answer in French.")
    system = run.requests()[0]["system"][1]
    assert system.startswith(SYSTEM_PROMPT) and system.endswith("\n\nAnswer in French.")
    both = Run(tmp_path, ws, [{"text": "ok"}], "--system-prompt", "Pirate.", "--append-system-prompt", "Be brief.")
    assert both.requests()[0]["system"][1] == "Pirate.\n\nBe brief."


def test_what_the_person_told_the_main_agent_is_not_a_subagent_s_prompt(tmp_path, ws):
    call = {"id": "ag1", "name": "agent", "input": {"description": "look", "prompt": "look around"}}
    run = Run(tmp_path, ws, [{"tool_calls": [call]}, {"text": '{"n": 1}'}], "--append-system-prompt", "MAIN-ONLY",
              "--json-schema", SCHEMA, agents={"look around": [{"text": "report"}]})
    assert run.code == 0, run.proc.stderr
    systems = [r["system"][1] for r in run.requests()]
    child = [x for x in systems if "# Your role in this session" in x]
    assert child and all("MAIN-ONLY" not in x and "JSON Schema" not in x for x in child)
    assert all("MAIN-ONLY" in x for x in systems if x not in child)


# --- --json-schema ----------------------------------------------------------------------------------

def test_json_schema_valid_answer_is_the_structured_output(tmp_path, ws):
    run = Run(tmp_path, ws, [{"text": '```json\n{"n": 3}\n```'}], "--json-schema", SCHEMA, fmt="json")
    assert run.code == 0, run.proc.stderr
    assert run.result["structured_output"] == {"n": 3}
    assert '"required":["n"]' in run.requests()[0]["system"][1]  # the model is told the schema


def test_json_schema_a_failing_answer_is_sent_back_once(tmp_path, ws):
    run = Run(tmp_path, ws, [{"text": "n is three"}, {"text": '{"n": 3}'}], "--json-schema", SCHEMA)
    assert run.code == 0, run.proc.stderr
    assert [o["type"] for o in run.out].count("result") == 1
    res = run.result
    assert res["subtype"] == "success" and res["structured_output"] == {"n": 3} and res["num_turns"] == 2
    retry = run.requests()[1]["messages"][-1]["content"][0]["text"]
    assert "not valid for the required JSON Schema" in retry and "not JSON" in retry


def test_json_schema_a_second_failure_is_an_error_result(tmp_path, ws):
    run = Run(tmp_path, ws, [{"text": '{"n": "three"}'}, {"text": '{"m": 3}'}], "--json-schema", SCHEMA)
    assert run.code == 1
    res = run.result
    assert res["is_error"] and "structured_output" not in res
    assert "does not match --json-schema after 2 tries" in res["result"] and "'n' is a required property" in res["result"]
    assert "is not of type 'integer'" in run.requests()[1]["messages"][-1]["content"][0]["text"]


def test_json_schema_from_a_file_and_a_bad_schema(tmp_path, ws):
    path = tmp_path / "schema.json"
    path.write_text(SCHEMA)
    assert Run(tmp_path, ws, [{"text": '{"n": 1}'}], "--json-schema", str(path)).result["structured_output"] == {"n": 1}
    usage_error(Run(tmp_path, ws, [{"text": "x"}], "--json-schema", "{not json"), "is not JSON")
    usage_error(Run(tmp_path, ws, [{"text": "x"}], "--json-schema", '{"type": 5}'), "not a valid JSON Schema")
    usage_error(Run(tmp_path, ws, [{"text": "x"}], "--json-schema", str(tmp_path / "missing.json")), "cannot read")


# --- --max-budget-usd -------------------------------------------------------------------------------

COSTLY = {"input_tokens": 1_000_000, "output_tokens": 0}  # $3 on claude-sonnet-4-5


def test_max_budget_usd_stops_before_the_request_that_would_pass_it(tmp_path, ws):
    replies = [{**bash("true"), "usage": COSTLY}, {"text": "done", "usage": COSTLY}]
    free = Run(tmp_path, ws, replies, "--model", "claude-sonnet-4-5", "--allowedTools", "Bash(true)")
    assert free.code == 0 and free.result["total_cost_usd"] == 6.0, free.proc.stderr
    capped = Run(tmp_path, ws, replies, "--model", "claude-sonnet-4-5", "--allowedTools", "Bash(true)",
                 "--max-budget-usd", "4")
    assert capped.code == 3
    res = capped.result
    assert res["subtype"] == "error_max_budget_usd" and res["terminal_reason"] == "budget"
    assert len(capped.requests()) == 1 and "session budget of $4.00" in res["result"]


@pytest.mark.parametrize("value", ["lots", "0", "-1"])
def test_a_bad_budget_is_a_usage_error(tmp_path, ws, value):
    usage_error(Run(tmp_path, ws, [{"text": "x"}], "--max-budget-usd", value), "--max-budget-usd")


# --- --fallback-model -------------------------------------------------------------------------------

OVERLOADED = {"error": {"message": "overloaded", "status": 529, "retryable": False}}


def test_fallback_model_takes_over_when_the_main_model_is_overloaded(tmp_path, ws):
    replies = [OVERLOADED, {"text": "answered by the fallback"}, {"text": "still the fallback"}]
    failed = Run(tmp_path, ws, replies, "--model", "claude-sonnet-4-5")
    assert failed.code == 1 and "overloaded" in failed.result["result"]
    run = Run(tmp_path, ws, replies, "--model", "claude-sonnet-4-5", "--fallback-model", "haiku")
    assert run.code == 0, run.proc.stderr
    assert run.result["result"] == "answered by the fallback"
    assert [r["model"] for r in run.requests()] == ["claude-sonnet-4-5", "claude-haiku-4-5"]
    assert any("fallback model claude-haiku-4-5" in n["message"] for n in run.events("notice"))


def test_fallback_model_is_taken_once_and_never_after_text_was_shown(tmp_path, ws):
    twice = Run(tmp_path, ws, [OVERLOADED, OVERLOADED, {"text": "never"}], "--model", "claude-sonnet-4-5",
                "--fallback-model", "claude-haiku-4-5")
    assert twice.code == 1 and len(twice.requests()) == 2 and "overloaded" in twice.result["result"]
    cut = {"events": [{"text": "Half an ans"}, {"error": {"message": "overloaded", "status": 529, "retryable": False}}]}
    shown = Run(tmp_path, ws, [cut, {"text": "never"}], "--model", "claude-sonnet-4-5",
                "--fallback-model", "claude-haiku-4-5")
    assert shown.code == 1 and len(shown.requests()) == 1


def test_fallback_model_does_not_hide_other_errors(tmp_path, ws):
    bad = {"error": {"message": "invalid request", "status": 400, "retryable": False}}
    run = Run(tmp_path, ws, [bad, {"text": "never"}], "--model", "claude-sonnet-4-5", "--fallback-model", "haiku")
    assert run.code == 1 and len(run.requests()) == 1


def test_a_fallback_that_could_never_serve_is_a_usage_error(tmp_path, ws):
    usage_error(Run(tmp_path, ws, [{"text": "x"}], "--model", "sonnet", "--fallback-model", "claude-sonnet-4-5"),
                "is the main model too")
    usage_error(Run(tmp_path, ws, [{"text": "x"}], "--fallback-model", ""), "--fallback-model is empty")


def test_check_fallback_refuses_another_provider_s_model():
    from cox.surfaces.compat_flags import FlagError, check_fallback

    with pytest.raises(FlagError, match="not served by this session's provider"):
        check_fallback("gpt-5", "claude-sonnet-4-5", "anthropic", {})
    with pytest.raises(FlagError, match="not served"):
        check_fallback("claude-haiku-4-5", "gpt-5", "openai", {})
    check_fallback("claude-haiku-4-5", "claude-sonnet-4-5", "anthropic", {})


# --- --model aliases --------------------------------------------------------------------------------


@pytest.mark.parametrize(("alias", "model"), [("sonnet", "claude-sonnet-4-5"), ("opus", "claude-opus-4-5"),
                                              ("haiku", "claude-haiku-4-5"), ("opus-4-1", "claude-opus-4-1"),
                                              ("some-gateway-model", "some-gateway-model")])
def test_model_aliases_become_a_concrete_model(tmp_path, ws, alias, model):
    run = Run(tmp_path, ws, [{"text": "ok"}], "--model", alias)
    assert run.requests()[0]["model"] == model
    assert run.events("session_started")[0]["model"] == model


def test_aliases_resolve_on_the_provider_that_has_a_key():
    from cox.actors.provider.catalog import resolve_alias
    from cox.config import load_config
    from cox.surfaces.compat_flags import provider_for

    config = load_config(Path("/"), env={})
    assert provider_for(config, {"OPENAI_API_KEY": "k"}, None) == "openai"
    assert provider_for(config, {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, None) == "anthropic"
    assert provider_for(config, {}, None) == "anthropic"
    assert [resolve_alias(a, "openai") for a in ("haiku", "sonnet", "opus")] == ["gpt-5-mini", "gpt-5", "gpt-5"]
    assert resolve_alias("sonnet", "openai", {"sonnet": {"context_window": 1000}}) == "sonnet"  # the user's own


# --- sessions: --session-id, -c, -r [ID], --fork-session ---------------------------------------------

UUID = "6f9619ff-8b86-d011-b42d-00cf4fc964ff"


def test_session_id_names_the_new_session_and_is_never_reused(tmp_path, ws, cox_home):
    run = Run(tmp_path, ws, [{"text": "ok"}], "--session-id", UUID.upper())
    assert run.code == 0 and run.result["session_id"] == UUID
    assert (cox_home / "sessions" / f"{UUID}.jsonl").is_file()
    again = Run(tmp_path, ws, [{"text": "never"}], "--session-id", UUID)
    usage_error(again, "a stored session has that id already", f"--resume {UUID}")
    assert again.requests() == []


def test_session_id_of_a_running_session_is_refused(tmp_path, ws, cox_home):
    from cox.actors.store import lock

    lock.hold(cox_home / "sessions", UUID)  # this process plays the live session that holds it
    try:
        run = Run(tmp_path, ws, [{"text": "never"}], "--session-id", UUID)
    finally:
        lock.release(cox_home / "sessions", UUID)
    usage_error(run, "a running session has that id")
    assert run.requests() == []


@pytest.mark.parametrize("value", ["not-a-uuid", "6f9619ff8b86d011b42d00cf4fc964ff0", ""])
def test_a_bad_session_id_is_a_usage_error(tmp_path, ws, value):
    usage_error(Run(tmp_path, ws, [{"text": "x"}], "--session-id", value), "--session-id wants a UUID")


def test_resume_without_an_id_and_continue_take_the_latest_session_here(tmp_path, ws):
    first = Run(tmp_path, ws, [{"text": "first answer"}], prompt="remember 42")
    sid = first.result["session_id"]
    for flag in ("-r", "--resume", "-c", "--continue"):
        run = Run(tmp_path, ws, [{"text": "it was 42"}], flag, prompt="what was it?")
        assert run.code == 0, run.proc.stderr
        assert run.result["session_id"] == sid, flag
        sent = json.dumps(run.requests()[0]["messages"])
        assert "remember 42" in sent and "first answer" in sent, flag


def test_resume_with_an_id_and_fork_session(tmp_path, ws):
    sid = Run(tmp_path, ws, [{"text": "first answer"}], prompt="remember 42").result["session_id"]
    resumed = Run(tmp_path, ws, [{"text": "ok"}], "-r", sid, prompt="again")
    assert resumed.result["session_id"] == sid
    fork = Run(tmp_path, ws, [{"text": "ok"}], "-r", "--fork-session", prompt="fork it")
    assert fork.code == 0 and fork.result["session_id"] != sid
    assert "remember 42" in json.dumps(fork.requests()[0]["messages"])
    named = Run(tmp_path, ws, [{"text": "ok"}], "--resume", sid, "--fork-session", "--session-id", UUID,
                prompt="fork again")
    assert named.code == 0 and named.result["session_id"] == UUID, named.proc.stderr
    assert "remember 42" in json.dumps(named.requests()[0]["messages"])
    usage_error(Run(tmp_path, ws, [{"text": "x"}], "-r", sid, "--session-id", UUID), "needs --fork-session")


# --- permission modes -------------------------------------------------------------------------------


def test_dangerously_skip_permissions_is_bypass_and_contradictions_are_refused(tmp_path, ws):
    run = Run(tmp_path, ws, [bash("touch made.txt"), {"text": "done"}], "--dangerously-skip-permissions")
    assert run.code == 0 and (ws / "made.txt").exists()
    assert run.events("session_started")[0]["permission_mode"] == "bypassPermissions"
    usage_error(Run(tmp_path, ws, [{"text": "x"}], "--dangerously-skip-permissions", "--permission-mode", "plan"),
                "contradicts --permission-mode plan")


def test_skip_permissions_keeps_the_built_in_credential_denies(tmp_path, ws):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL\n")
    run = Run(tmp_path, ws, [{"tool_calls": [{"id": "r1", "name": "read", "input": {"path": "~/.ssh/id_ed25519"}}]},
                             {"text": "done"}], "--dangerously-skip-permissions", env={"HOME": str(home)})
    assert run.events("tool_call_done")[0]["result"]["status"] == "denied"
    assert "PRIVATE-KEY-MATERIAL" not in run.proc.stdout


def test_dont_ask_denies_what_would_ask_instead_of_asking(tmp_path, ws):
    replies = [{"tool_calls": [{"id": "b1", "name": "bash", "input": {"command": "touch made.txt"}},
                               {"id": "b2", "name": "bash", "input": {"command": "touch ok.txt"}},
                               {"id": "r1", "name": "read", "input": {"path": "a.txt"}}]}, {"text": "done"}]
    run = Run(tmp_path, ws, replies, "--approve", "on-request", "--permission-mode", "dontAsk",
              "--allowedTools", "Bash(touch ok.txt)")
    assert run.code == 2, run.proc.stderr
    assert run.events("approval_required") == []
    done = {d["call_id"]: d["result"] for d in run.events("tool_call_done")}
    assert done["b1"]["status"] == "denied" and "dontAsk" in done["b1"]["visible"]
    assert done["b2"]["status"] == "ok" and done["r1"]["status"] == "ok"
    assert (ws / "ok.txt").exists() and not (ws / "made.txt").exists()


def test_an_unknown_permission_mode_names_the_choices(tmp_path, ws):
    run = Run(tmp_path, ws, [{"text": "x"}], "--permission-mode", "yolo")
    assert run.code == EXIT_USAGE and "dontAsk" in run.proc.stderr and "'yolo'" in run.proc.stderr


def test_verbose_still_logs_to_stderr(tmp_path, ws):
    quiet = Run(tmp_path, ws, [{"text": "ok"}], fmt="text")
    assert quiet.code == 0 and "model request" not in quiet.proc.stderr
    run = Run(tmp_path, ws, [{"text": "ok"}], "--verbose", fmt="text")
    assert run.code == 0 and run.proc.stdout == "ok\n" and "model request" in run.proc.stderr.lower()
