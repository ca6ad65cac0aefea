"""The scripted provider refuses a key it does not know, naming the reply, the step and the key
(a typo such as ``txt`` used to play as a silently empty reply)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cox.actors.provider.scripted import ScriptedProvider, ScriptError, load_script


@pytest.mark.parametrize(("replies", "where", "key"), [
    ([{"text": "ok"}, {"txt": "hi"}], "reply #2", "txt"),
    ([{"events": [{"text": "a"}, {"text": "b", "repeats": 2}]}], "reply #1, step #2", "repeats"),
    ([{"events": [{"txt": "a"}]}], "reply #1, step #1", "no known step"),
    ([{"tool_calls": [{"name": "read", "inputs": {}}]}], "reply #1, tool call #1", "inputs"),
    ([{"events": [{"tool_call": {"name": "read", "args": {}}}]}], "reply #1, step #1, its tool_call", "args"),
    ([{"error": {"message": "x", "retry-after": 3}}], "reply #1, its error", "retry-after"),
    ([{"text": "x", "usage": {"input": 3}}], "reply #1, its usage", "input"),
    (["just text"], "reply #1 is not an object", ""),
])
def test_unknown_keys_are_refused_with_their_place(tmp_path: Path, replies, where, key):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"model": "scripted", "replies": replies}))
    with pytest.raises(ScriptError) as err:
        load_script(path)
    assert f"model script {path}, {where}" in str(err.value) and key in str(err.value)
    with pytest.raises(ScriptError):
        ScriptedProvider({"replies": replies})


def test_top_level_keys_and_every_documented_form_load():
    with pytest.raises(ScriptError, match="unknown key 'reply'"):
        load_script({"reply": [], "replies": []})
    load_script({"model": "m", "replies": [
        {"thinking": "t", "signature": "s", "text": "x", "tool_calls": [{"id": "t1", "name": "read", "input": {}}],
         "stop": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1, "cache_read_tokens": 0,
                                       "cache_write_tokens": 0}, "chunk": 2, "delay_ms": 0, "delta_delay_ms": 0},
        {"events": [{"text": "Hel"}, {"delay_ms": 5}, {"text": "lo", "repeat": 3}, {"thinking": "h", "signature": "s"},
                    {"tool_call": {"name": "bash", "input": {"command": "ls"}}},
                    {"tool_call_raw": {"name": "write", "partial_json": "{"}}, {"stall": True},
                    {"error": {"message": "o", "status": 529, "retryable": True, "retry_after": 0.1}},
                    {"crash": "boom"}], "stop": "max_tokens"},
        {"error": {"message": "m", "status": 500, "retryable": False, "context_overflow": False}},
    ]})
