"""Claude Code's spelling of cox's tools, both ways (cox.actors.tools.spelling)."""

from __future__ import annotations

from cox.actors.tools.registry import builtin_tools
from cox.actors.tools.spelling import (
    CLAUDE_NAME,
    COX_NAME,
    as_called,
    as_cox_call,
    claude_name,
    cox_name,
    to_claude,
    to_cox,
)


def test_every_claude_name_is_a_cox_tool_and_back() -> None:
    tools = set(builtin_tools()) | {"agent", "skill"}  # the last two: when the session has agents, skills
    assert set(COX_NAME.values()) <= tools
    for cox, claude in CLAUDE_NAME.items():
        assert cox_name(claude) == cox


def test_file_tools_take_file_path_and_show_it_absolute() -> None:
    assert to_cox("Read", {"file_path": "/w/a.py", "offset": 3}) == ("read", {"path": "/w/a.py", "offset": 3})
    assert to_cox("Edit", {"file_path": "/w/a", "old_string": "x", "new_string": "y", "replace_all": True}) == (
        "edit", {"path": "/w/a", "old_string": "x", "new_string": "y", "replace_all": True})
    assert to_claude("write", {"path": "sub/../b.txt", "content": "hi"}, cwd="/w") == (
        "Write", {"file_path": "/w/b.txt", "content": "hi"})


def test_bash_timeouts_are_milliseconds_in_claude_code() -> None:
    assert to_cox("Bash", {"command": "ls", "timeout": 1500}) == ("bash", {"command": "ls", "timeout": 2})
    assert to_claude("bash", {"command": "ls", "timeout": 2}) == ("Bash", {"command": "ls", "timeout": 2000})


def test_grep_flags_and_claude_codes_default_output_mode() -> None:
    name, given = to_cox("Grep", {"pattern": "x", "-i": True, "-A": 2, "-B": 4, "head_limit": 9, "type": "py", "-n": True})
    assert name == "grep"
    assert given == {"pattern": "x", "case_insensitive": True, "context": 4, "max_results": 9, "glob": "*.py",
                     "files_with_matches": True}
    assert to_cox("Grep", {"pattern": "x", "output_mode": "content"})[1] == {"pattern": "x"}
    assert to_cox("Grep", {"pattern": "x", "output_mode": "count", "multiline": True})[1] == {
        "pattern": "x", "count": True, "multiline": True}
    assert to_cox("Grep", {"pattern": "x", "output_mode": "lines"})[1] == {"pattern": "x", "output_mode": "lines"}
    assert to_cox("Grep", {"pattern": "x", "type": "py", "glob": "src/*"})[1] == {"pattern": "x", "glob": "src/*",
                                                                                "files_with_matches": True}
    assert to_claude("grep", {"pattern": "x", "count": True})[1] == {"pattern": "x", "output_mode": "count"}
    shown = to_claude("grep", {"pattern": "x", "case_insensitive": True, "context": 1})[1]
    assert shown == {"pattern": "x", "-i": True, "-C": 1, "output_mode": "content"}


def test_cox_names_and_unknown_tools_pass_through() -> None:
    assert to_cox("read", {"path": "a"}) == ("read", {"path": "a"})
    assert to_cox("mcp__srv__t", {"file_path": "a"}) == ("mcp__srv__t", {"file_path": "a"})
    assert to_claude("apply_patch", {"patch": "p"}) == ("apply_patch", {"patch": "p"})


def test_multiedit_todos_and_task() -> None:
    assert claude_name("edit", {"path": "a", "edits": []}) == "MultiEdit"
    assert to_cox("MultiEdit", {"file_path": "/a", "edits": [{"old_string": "a", "new_string": "b"}]}) == (
        "edit", {"path": "/a", "edits": [{"old_string": "a", "new_string": "b"}]})
    assert to_cox("TodoWrite", {"todos": [{"content": "c", "status": "pending", "activeForm": "Doing c"}]}) == (
        "todo_write", {"todos": [{"content": "c", "status": "pending"}]})
    assert to_claude("todo_write", {"todos": [{"content": "c", "status": "pending"}]})[1]["todos"][0]["activeForm"] == "c"
    assert to_cox("Task", {"description": "d", "prompt": "p", "subagent_type": "explore"})[0] == "agent"
    assert claude_name("agent") == "Task"


def test_an_unknown_claude_field_is_kept_for_the_tool_to_name() -> None:
    assert to_cox("Read", {"file_path": "a", "pages": "1-2"})[1] == {"path": "a", "pages": "1-2"}


def test_each_direction_is_idempotent() -> None:
    claude = ("Bash", {"command": "ls", "timeout": 2000})
    assert to_claude(*claude) == claude
    assert to_cox("bash", {"command": "ls", "timeout": 2}) == ("bash", {"command": "ls", "timeout": 2})
    for name, given in [("Read", {"file_path": "/w/a"}), ("Grep", {"pattern": "x", "-i": True, "output_mode": "count"}),
                        ("Bash", {"command": "ls", "timeout": 1000}), ("MultiEdit", {"file_path": "/w/a", "edits": []})]:
        cox = to_cox(name, given)
        assert to_cox(*cox) == cox
        assert to_claude(*cox) == (name, given)  # the round trip gives the model's own spelling back


def test_bash_drops_a_false_sandbox_switch_and_keeps_a_true_one_for_the_tool_to_refuse() -> None:
    assert to_cox("Bash", {"command": "ls", "dangerouslyDisableSandbox": False}) == ("bash", {"command": "ls"})
    assert to_cox("Bash", {"command": "ls", "dangerouslyDisableSandbox": True})[1]["dangerouslyDisableSandbox"] is True


def test_the_choke_point_helpers() -> None:
    call = as_cox_call({"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "a", "content": "c"}})
    assert (call.id, call.name, call.input) == ("t1", "write", {"path": "a", "content": "c"})
    assert as_cox_call({"id": "t2", "name": "Read", "input": None}).input == {}
    # a changed input goes back into the history in the spelling the model used
    assert as_called("Write", "write", {"path": "b", "content": "c"}) == {"file_path": "b", "content": "c"}
    assert as_called("write", "write", {"path": "b", "content": "c"}) == {"path": "b", "content": "c"}
    assert as_called("mcp__s__t", "mcp__s__t", {"x": 1}) == {"x": 1}
