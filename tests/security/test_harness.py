"""The attack bench itself: it runs cox as the identity it claims, and a marker test can fail."""

from __future__ import annotations

import os

import pytest


def test_a_write_the_policy_allows_lands_as_the_identity(attack):
    out = attack.run([{"tool_calls": [{"id": "w1", "name": "write",
                                        "input": {"path": "made.txt", "content": "hi\n"}}]},
                      {"text": "done"}], args=("--permission-mode", "acceptEdits"))
    assert out.result["subtype"] == "success", out.proc.stderr
    made = attack.workspace / "made.txt"
    assert made.read_text() == "hi\n"
    assert (made.stat().st_uid == 0) == (attack.identity == "root" and os.geteuid() == 0)


@pytest.mark.only_nobwrap
def test_without_bubblewrap_cox_cannot_find_it(attack):
    import shutil

    assert shutil.which("bwrap", path=attack.env_path) is None
