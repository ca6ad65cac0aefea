"""A turn's own allow rules (a user's command's or skill's ``allowed-tools``): they pre-approve
what they cover and nothing else — every deny rule, plan mode, an ask rule and a read that Read
deny rules protect still win, and a line they cover only in part still asks."""

from __future__ import annotations

from cox.protocol.types import ApprovalPolicy, PermissionMode, Risk

from .helpers import bash, call, engine

NEVER = ApprovalPolicy.NEVER


def turn(e, c, rules, mode=PermissionMode.DEFAULT):  # type: ignore[no-untyped-def]
    return e.decide(bash(c) if isinstance(c, str) else c, mode, NEVER, turn_allow=rules)


def test_a_turn_rule_pre_approves_what_it_covers() -> None:
    e = engine()
    assert turn(e, "mkdir out", []).kind == "deny"
    got = turn(e, "mkdir out && mkdir b", ["Bash(mkdir:*)"])
    assert got.kind == "allow" and got.step == "grant" and "allowed for this turn" in got.reason
    assert turn(e, call("write", "/repo/a.py", Risk.WRITE), ["Edit(/repo/**)"]).kind == "allow"


def test_what_a_turn_rule_does_not_cover_still_needs_approval() -> None:
    e = engine(ask=["Bash(git push:*)"], deny=["Bash(rm:*)", "Read(/repo/secret/**)"])
    rules = ["Bash(echo:*)", "Bash(git:*)", "Bash(rm:*)", "Bash(cat:*)"]
    for line in ("echo hi; touch m", "echo $(touch m)", "echo `touch m`", "eval 'echo x'"):
        assert turn(e, line, rules).kind == "deny", line
    assert turn(e, "rm -rf x", rules).step == "deny-rule"
    assert turn(e, "git push origin", rules).kind == "deny"  # the ask rule's question is not lifted
    assert turn(e, "cat secret/key", rules).kind == "deny"  # a read Read deny rules protect
    assert turn(e, "mkdir x", rules, PermissionMode.PLAN).kind == "deny"
    assert turn(e, "mkdir x", ["not a rule((", "CloudAgent"]).kind == "deny"
