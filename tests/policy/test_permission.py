"""The permission engine: the order of its steps, Example 3 of the spec, modes, grants, defaults."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cox.policy.defaults import DEFAULT_DENY
from cox.policy.permission import Engine
from cox.protocol.types import ApprovalPolicy, PermissionMode, Risk, SandboxMode, ToolCall

from .helpers import HOME, bash, call, decide, engine, kind

DEFAULT, ACCEPT, PLAN, BYPASS = (PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS, PermissionMode.PLAN,
                                 PermissionMode.BYPASS)


# --- Example 3, case by case ------------------------------------------------------------------


def test_example3_default_config_denies_ssh_read_despite_read_only() -> None:
    e = Engine.compile([], [], [], home="/home/alice", roots=["/repo"])  # the default config
    ssh = call("read", "/home/alice/.ssh/id_ed25519", Risk.READ_ONLY)
    out = e.decide(ssh, PermissionMode.DEFAULT, ApprovalPolicy.ON_REQUEST, SandboxMode.WORKSPACE_WRITE, [])
    assert out.kind == "deny" and out.rule == "Read(~/.ssh/**)"


def test_example3_allow_runs_without_asking(example3: Engine) -> None:
    out = decide(example3, "cargo test --workspace")
    assert out.kind == "allow" and out.rule == "Bash(cargo test:*)"


def test_example3_ask_always_asks(example3: Engine) -> None:
    out = decide(example3, "git commit -m 'wip'")
    assert out.kind == "ask" and out.rule == "Bash(git commit:*)"


def test_example3_deny_never_runs_even_with_an_allow_rule() -> None:
    e = engine(allow=["Read(~/.ssh/**)", "Read"], deny=["Read(~/.ssh/**)"])
    assert kind(e, call("read", f"{HOME}/.ssh/config")) == "deny"
    assert kind(e, call("read", f"{HOME}/.ssh/config"), mode=BYPASS) == "deny"


def test_example3_deny_rm_denies_compound_line() -> None:
    assert kind(engine(deny=["Bash(rm:*)"]), "git status && rm -rf x") == "deny"


def test_example3_leading_assignment_does_not_hide_rm() -> None:
    assert kind(engine(deny=["Bash(rm:*)"]), "FOO=bar rm -rf x") == "deny"


def test_example3_deny_sees_past_stripped_wrapper() -> None:
    e = engine(deny=["Bash(rm:*)"])
    for line in ("nohup rm -rf x", "timeout 5 rm -rf x", "time rm x", "nice rm x", "stdbuf -oL rm x",
                 "command rm x", "builtin rm x", "noglob rm x", "xargs rm"):
        assert kind(e, line) == "deny", line


def test_example3_deny_reparses_sh_c() -> None:
    e = engine(deny=["Bash(rm:*)"])
    for line in ("sh -c 'rm -rf x'", 'bash -c "rm -rf x"', "eval rm -rf x", "eval 'ls; rm -rf x'"):
        assert kind(e, line) == "deny", line


def test_example3_allow_prefix_needs_every_command_covered() -> None:
    e = engine(allow=["Bash(git:*)"])
    assert kind(e, "git status && git diff") == "allow"
    assert kind(e, "git status; rm -rf x") == "ask"


def test_example3_different_rules_cover_different_commands() -> None:
    e = engine(allow=["Bash(git:*)", "Bash(npm test:*)"])
    out = decide(e, "git pull && npm test")
    assert out.kind == "allow" and set(out.rules) == {"Bash(git:*)", "Bash(npm test:*)"}


@pytest.mark.parametrize("line", [
    "git log $(rm -rf x)", "git log `id`", "git diff <(ls)", "eval git status", "sh -c 'git status'",
    "git log > out.txt", "git status )", "git log; export X=1", "PATH=/evil git status", "env git status",
    "sudo git status",
])
def test_example3_opaque_line_is_never_allowed_by_a_prefix_rule_or_grant(line: str) -> None:
    e = engine(allow=["Bash(git:*)", "Bash(sh:*)", "Bash(eval:*)", "Bash(env:*)", "Bash(sudo:*)", "Bash(export:*)",
                      "Bash(PATH=/evil git:*)"])
    assert kind(e, line) == "ask", line
    assert kind(e, line, grants=["git status", "git log", "git diff"]) == "ask"
    assert kind(e, line, policy=ApprovalPolicy.NEVER) == "deny"  # cox run -p turns that ask into a deny


def test_example3_harmless_redirects_keep_a_line_allowable() -> None:
    e = engine(allow=["Bash(npm test:*)"])
    assert kind(e, "npm test 2>&1") == "allow"
    assert kind(e, "npm test > /dev/null 2>&1") == "allow"


def test_example3_locale_assignment_stays_eligible() -> None:
    e = engine(allow=["Bash(npm test:*)"])
    assert kind(e, "LC_ALL=C npm test") == "allow"
    assert kind(e, "NO_COLOR=1 TZ=UTC npm test") == "allow"
    assert kind(e, "NODE_OPTIONS=--require=x npm test") == "ask"
    assert kind(e, "LC_ALL=C ls") == "allow"  # read-only auto-allow too


def test_example3_bare_and_exact_rules_match_whole_line() -> None:
    assert kind(engine(allow=["Bash"]), "git status; rm -rf x") == "allow"
    e = engine(allow=["Bash(make && make install)"])
    assert kind(e, "make && make install") == "allow"
    assert kind(e, "make install") == "ask"


def test_example3_exact_rule_allows_an_opaque_line_written_exactly() -> None:
    e = engine(allow=["Bash(echo $(date) > stamp)"])
    assert kind(e, "echo $(date) > stamp") == "allow"


def test_example3_session_grant_per_command() -> None:
    e = engine()
    grants = e.grants_for(bash("git status && npm test"))
    assert grants == ["git status", "npm test"]
    assert kind(e, "npm test", grants=grants) == "allow"
    assert kind(e, "npm test; rm -rf ~", grants=grants) == "ask"


def test_example3_opaque_line_granted_only_as_exact_line() -> None:
    e = engine()
    line = "npm test > report.txt"
    grants = e.grants_for(bash(line))
    assert grants == [line]
    assert kind(e, line, grants=grants) == "allow"
    assert kind(e, "npm test", grants=grants) == "ask"
    assert kind(e, "npm test > other.txt", grants=grants) == "ask"


def test_example3_bypass_and_read_only_auto_allow_unchanged() -> None:
    e = engine(allow=["Bash(git:*)"])
    assert kind(e, "ls -la | wc -l") == "allow"
    assert kind(e, "curl x | sh", mode=BYPASS) == "allow"


def test_example3_adding_deny_never_turns_deny_into_anything_else() -> None:
    e1 = engine(deny=["Bash(rm:*)"])
    e2 = engine(allow=["Bash"], deny=["Bash(rm:*)", "Bash(git:*)"])
    assert kind(e1, "rm x") == kind(e2, "rm x") == "deny"


# --- order of the steps -----------------------------------------------------------------------


def test_order_deny_before_bypass() -> None:
    assert kind(engine(deny=["Bash(rm:*)"]), "rm x", mode=BYPASS) == "deny"


def test_order_plan_before_allow() -> None:
    out = decide(engine(allow=["Bash(npm test:*)"]), "npm test", mode=PLAN)
    assert out.kind == "deny" and "plan mode" in out.reason


def test_order_plan_lets_read_only_through_to_ask_rules() -> None:
    e = engine(ask=["Read(/repo/private/**)"])
    assert kind(e, call("read", "/repo/src/a.py"), mode=PLAN) == "allow"
    assert kind(e, call("read", "/repo/private/a"), mode=PLAN) == "ask"
    assert kind(e, "git status", mode=PLAN) == "allow"
    assert kind(e, call("edit", "/repo/a", Risk.WRITE), mode=PLAN) == "deny"


def test_order_allow_before_ask() -> None:
    e = engine(allow=["Bash(git:*)"], ask=["Bash(git push:*)"])
    assert kind(e, "git push") == "allow"  # the spec's order: allow rules, then ask rules


def test_order_ask_before_grants() -> None:
    e = engine(ask=["Bash(npm publish:*)"])
    assert kind(e, "npm publish", grants=["npm publish"]) == "ask"


def test_order_ask_rule_on_any_command_applies() -> None:
    e = engine(ask=["Bash(git push:*)"])
    assert decide(e, "ls && git push origin main").rule == "Bash(git push:*)"
    assert kind(e, "sudo git push") == "ask"


def test_order_grants_before_risk_default() -> None:
    assert kind(engine(), call("edit", "/repo/a.py", Risk.WRITE), grants=["Edit(/repo/a.py)"]) == "allow"


def test_grants_and_allow_rules_mix() -> None:
    e = engine(allow=["Bash(git:*)"])
    out = decide(e, "git add . && npm test", grants=["npm test"])
    assert out.kind == "allow" and out.step == "grant"


def test_read_only_commands_need_no_rule_in_a_compound_line() -> None:
    e = engine(allow=["Bash(npm test:*)"])
    assert kind(e, "cd sub && npm test") == "allow"


def test_approval_policy_never_turns_ask_into_deny_and_says_so() -> None:
    out = decide(engine(), "npm test", policy=ApprovalPolicy.NEVER)
    assert out.kind == "deny" and "approval policy is never" in out.reason and out.step == "approval-policy"
    assert kind(engine(), "ls", policy=ApprovalPolicy.NEVER) == "allow"


def test_dont_ask_mode_turns_every_ask_into_deny_and_keeps_the_rest() -> None:
    dont = PermissionMode.DONT_ASK
    out = decide(engine(), "npm test", mode=dont)
    assert out.kind == "deny" and "dontAsk mode denies" in out.reason and out.step == "dont-ask"
    assert kind(engine(ask=["Bash(ls:*)"]), "ls", mode=dont) == "deny"  # an ask rule too
    assert kind(engine(), "ls", mode=dont) == "allow"  # read-only runs
    assert kind(engine(allow=["Bash(npm test)"]), "npm test", mode=dont) == "allow"
    assert kind(engine(), call("edit", "/repo/a.py", Risk.WRITE), mode=dont) == "deny"
    assert kind(engine(), call("read", f"{HOME}/.ssh/id_rsa"), mode=dont) == "deny"


# --- modes and the risk default ---------------------------------------------------------------


@pytest.mark.parametrize(("mode", "risk", "expected"), [
    (DEFAULT, Risk.READ_ONLY, "allow"), (DEFAULT, Risk.WRITE, "ask"), (DEFAULT, Risk.EXEC, "ask"),
    (DEFAULT, Risk.DESTRUCTIVE, "ask"), (ACCEPT, Risk.WRITE, "allow"), (ACCEPT, Risk.EXEC, "ask"),
    (PLAN, Risk.READ_ONLY, "allow"), (PLAN, Risk.WRITE, "deny"), (PLAN, Risk.EXEC, "deny"),
    (BYPASS, Risk.DESTRUCTIVE, "allow"),
])
def test_mode_by_risk(mode: PermissionMode, risk: Risk, expected: str) -> None:
    assert kind(engine(), call("edit", "/repo/a.py", risk), mode=mode) == expected


def test_accept_edits_does_not_apply_to_bash_or_a_read_only_sandbox() -> None:
    assert kind(engine(), "mkdir x", mode=ACCEPT) == "ask"
    out = decide(engine(), call("edit", "/repo/a", Risk.WRITE), mode=ACCEPT, sandbox=SandboxMode.READ_ONLY)
    assert out.kind == "ask" and "read-only" in out.reason


def test_engine_mode_is_the_default_when_decide_gets_none() -> None:
    e = engine(mode="plan")
    assert e.decide(bash("npm test")).kind == "deny"
    assert e.decide(bash("npm test"), PermissionMode.DEFAULT).kind == "ask"


def test_bash_risk_is_the_stricter_of_call_and_classifier() -> None:
    c = replace(bash("rm -rf x"), risk=Risk.READ_ONLY)
    assert kind(engine(), c) == "ask"
    assert kind(engine(), c, mode=PLAN) == "deny"


def test_a_call_marked_opaque_by_the_tool_stays_opaque() -> None:
    c = replace(bash("npm test"), opaque=True)
    assert kind(engine(allow=["Bash(npm test:*)"]), c) == "ask"


def test_extra_segments_from_the_tool_are_seen_by_deny() -> None:
    c = replace(bash("./run.sh"), segments=["./run.sh", "rm -rf x"])
    assert kind(engine(deny=["Bash(rm:*)"]), c) == "deny"


# --- CloudAgent -------------------------------------------------------------------------------


def cloud(repo: str = "acme/app") -> ToolCall:
    return call("cloud_agent", repo, Risk.DESTRUCTIVE)


@pytest.mark.parametrize("mode", [DEFAULT, ACCEPT, BYPASS])
def test_cloud_agent_asks_in_every_mode_bypass_included(mode: PermissionMode) -> None:
    assert kind(engine(), cloud(), mode=mode) == "ask"


def test_cloud_agent_plan_denies_even_with_allow() -> None:
    assert kind(engine(allow=["CloudAgent(acme/app)"]), cloud(), mode=PLAN) == "deny"


def test_cloud_agent_exact_allow_lifts_the_question_ignoring_case() -> None:
    e = engine(allow=["CloudAgent(ACME/App)"])
    assert kind(e, cloud("acme/app")) == "allow"
    assert kind(e, cloud("acme/app"), mode=BYPASS) == "allow"
    assert kind(e, cloud("acme/other")) == "ask"


def test_cloud_agent_bare_allow_and_grant_do_not_lift_it() -> None:
    e = engine(allow=["CloudAgent"])
    assert kind(e, cloud()) == "ask"
    assert kind(engine(), cloud(), grants=["CloudAgent(acme/app)"]) == "ask"
    assert engine().grants_for(cloud()) == []


def test_cloud_agent_deny_and_ask_rules_apply() -> None:
    assert kind(engine(deny=["CloudAgent"]), cloud()) == "deny"
    assert kind(engine(allow=["CloudAgent(acme/app)"], deny=["CloudAgent(acme/app)"]), cloud()) == "deny"
    assert kind(engine(ask=["CloudAgent(acme/app)"]), cloud()) == "ask"
    assert kind(engine(), cloud(), policy=ApprovalPolicy.NEVER) == "deny"


# --- defaults ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [
    ".ssh/id_rsa", ".ssh/config", ".gnupg/private-keys-v1.d/x", ".aws/credentials", ".netrc", ".kube/config",
    ".docker/config.json", ".config/gh/hosts.yml", ".git-credentials", ".config/gcloud/credentials.db",
])
def test_default_deny_applies_to_every_reading_tool_in_every_mode(path: str) -> None:
    e = engine()
    for tool in ("read", "grep", "glob"):
        for mode in PermissionMode:
            assert kind(e, call(tool, f"{HOME}/{path}"), mode=mode) == "deny", (tool, mode)


def test_default_deny_also_stops_writes_to_key_stores() -> None:
    assert kind(engine(), call("write", f"{HOME}/.ssh/authorized_keys", Risk.WRITE), mode=BYPASS) == "deny"


def test_default_deny_can_be_turned_off_and_leaves_workspace_env_alone() -> None:
    assert kind(engine(default_deny=False), call("read", f"{HOME}/.ssh/id_rsa")) == "allow"
    assert kind(engine(), call("read", "/repo/.env")) == "allow"
    assert all(r.startswith(("Read(~/", "Edit(~/")) for r in DEFAULT_DENY)


def test_default_deny_names_itself() -> None:
    out = decide(engine(), call("read", f"{HOME}/.aws/credentials"))
    assert "built-in" in out.reason and out.origin is not None


def test_denied_path_for_search_tools() -> None:
    e = engine(deny=["Read(/repo/secrets/**)"])
    assert e.denied_path("/repo/secrets/k") is not None
    assert e.denied_path("~/.ssh/id_rsa") is not None
    assert e.denied_path("/repo/src/a.py") is None


# --- grants_for -------------------------------------------------------------------------------


def test_grants_for_other_tools_are_exact() -> None:
    e = engine()
    assert e.grants_for(call("edit", "/repo/src/a.py", Risk.WRITE)) == ["Edit(/repo/src/a.py)"]
    assert e.grants_for(call("read", "/repo/a[1]*.py")) == ["Read(/repo/a\\[1\\]\\*.py)"]
    assert e.grants_for(call("web_fetch", "https://docs.rs/tokio")) == ["WebFetch(domain:docs.rs)"]
    assert e.grants_for(call("mcp__gh__issue", "mcp__gh__issue")) == ["mcp__gh__issue"]


def test_a_glob_shaped_path_grant_covers_only_that_path() -> None:
    e = engine()
    g = e.grants_for(call("edit", "/repo/*.py", Risk.WRITE))
    assert kind(e, call("edit", "/repo/*.py", Risk.WRITE), grants=g) == "allow"
    assert kind(e, call("edit", "/repo/a.py", Risk.WRITE), grants=g) == "ask"


def test_grants_round_trip_for_every_tool() -> None:
    e = engine()
    for c in (call("write", "/repo/n.txt", Risk.WRITE), call("web_fetch", "https://a.b/c", Risk.EXEC),
              call("mcp__s__t", "mcp__s__t", Risk.EXEC), bash("npm test && make"), bash("make > log")):
        assert kind(e, c) == "ask"
        assert kind(e, c, grants=e.grants_for(c)) == "allow", c


def test_bash_grant_does_not_cover_other_tools_and_back() -> None:
    e = engine()
    assert kind(e, call("edit", "/repo/x", Risk.WRITE), grants=["x"]) == "ask"
    assert kind(e, "cat", grants=["Edit(/repo/cat)"]) == "allow"  # cat is read-only anyway
    assert kind(e, "make", grants=["Edit(/repo/make)"]) == "ask"


def test_grants_are_normalised_the_way_rules_are() -> None:
    e = engine()
    assert kind(e, "npm   'test'", grants=["npm test"]) == "allow"
    assert kind(e, "nohup npm test", grants=["npm test"]) == "allow"
    assert kind(e, "npm test", grants=["Bash(npm test)"]) == "allow"
    assert kind(e, "npm test --all", grants=["npm test"]) == "ask"  # a grant is exact, not a prefix


# --- reasons ----------------------------------------------------------------------------------


def test_reasons_name_the_rule_origin_and_command() -> None:
    e = engine(deny=["Bash(rm:*)"], origins={"Bash(rm:*)": "~/.cox/config.toml:4"})
    out = decide(e, "git status && rm -rf build")
    assert "Bash(rm:*)" in out.reason and "~/.cox/config.toml:4" in out.reason and "rm -rf build" in out.reason
    assert out.origin == "~/.cox/config.toml:4"
    out = decide(engine(allow=["Bash(git:*)"]), "git status && make")
    assert "`make`" in out.reason
    out = decide(engine(), "echo $(id)")
    assert "$(" in out.reason


# --- read-only bash commands that read what a Read deny rule protects --------------------------


@pytest.mark.parametrize("line", [
    "cat ~/.ssh/id_rsa", "head -n 3 /home/alice/.aws/credentials", "cat $HOME/.netrc", 'cat "$HOME/.ssh/id_ed25519"',
    "cd ~/.ssh && cat id_rsa", "cd && cat .ssh/id_rsa", "cat < ~/.git-credentials", "grep -r secret ~",
    "rg token /home/alice", "cd ~ && rg aws_secret", "grep --file=~/.ssh/config x", "git status && cat ~/.ssh/config",
])
def test_read_only_bash_reading_a_denied_path_asks(line: str) -> None:
    e = engine(allow=["Bash(git:*)"])
    out = decide(e, line)
    assert out.kind == "ask" and out.rule is not None and "denies reading" in out.reason, out
    assert kind(e, line, policy=ApprovalPolicy.NEVER) == "deny"


@pytest.mark.parametrize("line", ["cat README.md", "rg key src", "grep -rn TODO .", "ls ~", "grep key ~/notes.txt",
                                  "cat /etc/hostname"])
def test_read_only_bash_elsewhere_still_runs(line: str) -> None:
    assert kind(engine(), line) == "allow"


def test_user_read_deny_rules_guard_bash_reads_too() -> None:
    e = engine(deny=["Read(./secrets/**)"])
    assert kind(e, "cat secrets/prod.key") == "ask"
    assert kind(e, "cat src/a.py") == "allow"


@pytest.mark.parametrize("line", [
    "'rm' -rf x", '"rm" -rf x', "r\\m -rf x", "\\rm -rf x", 'r""m -rf x', "/bin/rm -rf x", "command rm -rf x",
    "ls; rm -rf x", "ls\nrm -rf x", "ls & rm -rf x", "ls || rm -rf x", "(rm -rf x)", "{ rm -rf x; }",
    "echo $(rm -rf x)", "echo `rm -rf x`", "cat <(rm -rf x)", "if true; then rm -rf x; fi", "! rm -rf x",
    "while :; do rm -rf x; done", "f() { rm -rf x; }", "FOO=1 BAR=2 rm -rf x", "nohup nice timeout 5 rm -rf x",
    "sudo -E env X=1 rm -rf x", "find / -exec rm -rf {} +", "bash -c 'eval \"rm -rf x\"'", "rm -rf x # comment",
    "x=$(rm -rf x)", "export X=$(rm -rf x)", "cat <<EOF\n$(rm -rf x)\nEOF", "ls |& rm -rf x",
])
def test_deny_rm_cannot_be_dodged(line: str) -> None:
    e = engine(allow=["Bash"], deny=["Bash(rm:*)"])
    assert kind(e, line, mode=BYPASS) == "deny", line
