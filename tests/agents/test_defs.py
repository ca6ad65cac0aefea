"""Agent definitions: the built-ins, agent files in Claude Code's format (its documented examples as
they are), garbage files, precedence, the tool-name mapping, a project's narrowing, child_tools."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from cox.agents.defs import (
    CLAUDE_TOOLS,
    READ_ONLY_TOOLS,
    SPAWNING_TOOLS,
    TOOL_KINDS,
    AgentDef,
    Agents,
    builtin_agents,
    child_tools,
    load_agents,
)
from tests.waits import BOUND_S

# Claude Code's documented example subagents (docs "Subagents" → "Example subagents"), as they are.
CODE_REVIEWER = """---
name: code-reviewer
description: Expert code review specialist. Proactively reviews code for quality, security, and maintainability. Use immediately after writing or modifying code.
tools: Read, Grep, Glob, Bash
model: inherit
---

You are a senior code reviewer ensuring high standards of code quality and security.

When invoked:
1. Run git diff to see recent changes
2. Focus on modified files
3. Begin review immediately

Review checklist:
- Code is simple and readable
- Functions and variables are well-named
- No duplicated code
- Proper error handling
- No exposed secrets or API keys
- Input validation implemented
- Good test coverage
- Performance considerations addressed

Provide feedback organized by priority:
- Critical issues (must fix)
- Warnings (should fix)
- Suggestions (consider improving)

Include specific examples of how to fix issues.
"""

DEBUGGER = """---
name: debugger
description: Debugging specialist for errors, test failures, and unexpected behavior. Use proactively when encountering any issues.
tools: Read, Edit, Bash, Grep, Glob
---

You are an expert debugger specializing in root cause analysis.

When invoked:
1. Capture error message and stack trace
2. Identify reproduction steps
3. Isolate the failure location
4. Implement minimal fix
5. Verify solution works

Focus on fixing the underlying issue, not just the symptoms.
"""

DATA_SCIENTIST = """---
name: data-scientist
description: Data analysis expert for SQL queries, BigQuery operations, and data insights. Use proactively for data analysis tasks and queries.
tools: Bash, Read, Write
model: sonnet
---

You are a data scientist specializing in SQL and BigQuery analysis.

Always ensure queries are efficient and cost-effective.
"""

DB_READER = """---
name: db-reader
description: Execute read-only database queries. Use when analyzing data or generating reports.
tools: Bash
hooks:
  PreToolUse:
    - matcher: "Bash"
      hooks:
        - type: command
          command: "./scripts/validate-readonly-query.sh"
---

You are a database analyst with read-only access. Execute SELECT queries to answer questions about the data.
"""

TEMPLATE = """---
name: your-sub-agent-name
description: Description of when this subagent should be invoked
tools: tool1, tool2, tool3  # Optional - inherits all tools if omitted
model: sonnet  # Optional - specify model alias or 'inherit'
---

Your subagent's system prompt goes here. This can be multiple paragraphs
and should clearly define the subagent's role, capabilities, and approach
to solving problems.
"""

PARENT = ["read", "write", "edit", "apply_patch", "bash", "grep", "glob", "ls", "web_fetch", "todo_write",
          "tool_search", "agent", "agent_wait", "agent_send", "agent_close", "run_agent_work_graph",
          "mcp__db__query", "list_mcp_resources", "read_mcp_resource"]


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(workspace, home), with COX_HOME and CLAUDE_CONFIG_DIR at their default places in home."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    monkeypatch.delenv("COX_HOME")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    return ws, home


def put(folder: Path, name: str, text: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def agent(name: str, extra: str = "", body: str = "You are it.") -> str:
    return f"---\nname: {name}\ndescription: the {name} agent\n{extra}---\n{body}\n"


def load(dirs: tuple[Path, Path], **kw: object) -> Agents:
    return load_agents(dirs[0], dirs[1], **kw)  # type: ignore[arg-type]


# --- built-ins ------------------------------------------------------------------------------

def test_builtins_explore_is_read_only_on_the_cheap_tier_and_general_purpose_has_everything() -> None:
    b = builtin_agents()
    explore, general = b["explore"], b["general-purpose"]
    assert explore.read_only and explore.model == "cheap" and explore.source == "builtin"
    assert set(explore.tools or ()) <= READ_ONLY_TOOLS
    assert general.tools is None and general.model is None and not general.read_only
    for d in (explore, general):
        assert "final message is the only thing the parent sees" in d.prompt
    assert "path:line" in explore.prompt and "concise report" in general.prompt


def test_load_with_no_files_is_the_builtins_and_no_warnings(dirs: tuple[Path, Path]) -> None:
    got = load(dirs)
    assert list(got.defs) == ["explore", "general-purpose"] and got.warnings == ()


# --- Claude Code's format -------------------------------------------------------------------

def test_claude_codes_documented_examples_load_as_they_are(dirs: tuple[Path, Path]) -> None:
    ws, home = dirs
    folder = ws / ".claude" / "agents"
    for name, text in [("code-reviewer.md", CODE_REVIEWER), ("debugger.md", DEBUGGER),
                       ("data-scientist.md", DATA_SCIENTIST), ("db-reader.md", DB_READER)]:
        put(folder, name, text)
    got = load(dirs, parent_model="claude-sonnet-4-5")
    reviewer = got.defs["code-reviewer"]
    assert reviewer.tools == ("read", "grep", "glob", "bash") and reviewer.model is None
    assert reviewer.description.startswith("Expert code review specialist.")
    assert reviewer.prompt.startswith("You are a senior code reviewer") and reviewer.prompt.endswith("fix issues.")
    assert reviewer.source == str(folder / "code-reviewer.md") and not reviewer.read_only
    assert got.defs["debugger"].tools == ("read", "edit", "bash", "grep", "glob")
    assert got.defs["debugger"].model is None
    assert got.defs["data-scientist"].tools == ("bash", "read", "write")
    assert got.defs["data-scientist"].model == "main"
    assert got.defs["db-reader"].tools == ("bash",)
    assert [w for w in got.warnings if "db-reader" in w] == [
        f"{folder / 'db-reader.md'}:5: cox ignores 'hooks' in agent files: hooks come only from settings "
        "files (`cox hooks list`)"]
    assert len(got.warnings) == 1


def test_the_documented_template_keeps_its_comments_out_and_drops_placeholder_tools(dirs: tuple[Path, Path]) -> None:
    path = put(dirs[1] / ".claude" / "agents", "t.md", TEMPLATE)
    got = load(dirs)
    d = got.defs["your-sub-agent-name"]
    assert d.tools == () and d.model == "main" and d.description == "Description of when this subagent should be invoked"
    assert got.warnings == tuple(f"{path}:4: unknown tool 'tool{i}' is left out" for i in (1, 2, 3))


@pytest.mark.parametrize(("tools", "want"), [
    ("Read, Write, Edit, MultiEdit, Bash, Grep, Glob, LS, WebFetch, TodoWrite",
     ("read", "write", "edit", "bash", "grep", "glob", "ls", "web_fetch", "todo_write")),
    ("[Read, \"Grep\"]", ("read", "grep")),
    ("\n  - Read\n  - mcp__github__create_issue", ("read", "mcp__github__create_issue")),
    ("read, apply_patch, tool_search", ("read", "apply_patch", "tool_search")),
    ("Task, Agent", ("agent",)),
    ("READ, grep", ("read", "grep")),
    ("\"*\"", None),
    ("", None),
    ("[]", ()),
])
def test_claude_tool_names_map_onto_coxs(dirs: tuple[Path, Path], tools: str, want: tuple[str, ...] | None) -> None:
    put(dirs[1] / ".cox" / "agents", "a.md", agent("a", f"tools: {tools}\n"))
    got = load(dirs)
    assert got.defs["a"].tools == want and got.warnings == ()


def test_unknown_and_restricted_tool_names_are_dropped_with_a_warning(dirs: tuple[Path, Path]) -> None:
    path = put(dirs[1] / ".cox" / "agents", "a.md",
               agent("a", "tools: Read, WebSearch, NotebookEdit, Bash(git diff:*, git log:*), Agent(explore)\n"))
    got = load(dirs)
    assert got.defs["a"].tools == ("read",)  # never the whole of bash for "only git diff"
    assert got.warnings == (
        f"{path}:4: unknown tool 'WebSearch' is left out",
        f"{path}:4: unknown tool 'NotebookEdit' is left out",
        f"{path}:4: 'Bash(git diff:*, git log:*)' is left out: cox cannot restrict a tool to some of its "
        "uses, and the whole tool would be wider than the file asks",
        f"{path}:4: 'Agent(explore)' is left out: cox cannot restrict a tool to some of its uses, and the "
        "whole tool would be wider than the file asks",
    )


def test_every_mapped_name_is_a_cox_tool_and_the_table_decides_every_registry_tool() -> None:
    from cox.actors.mcp.resources import LIST, READ
    from cox.actors.tools.registry import builtin_tools
    from cox.protocol.types import Risk

    registry = builtin_tools()
    assert set(CLAUDE_TOOLS.values()) <= set(TOOL_KINDS)
    assert set(registry) | {LIST, READ} <= set(TOOL_KINDS), "decide in TOOL_KINDS what a new tool is"
    for name, tool in registry.items():
        if TOOL_KINDS[name] == "read-only":
            assert tool.risk({}) is Risk.READ_ONLY and tool.risk({"path": "x", "pattern": "y"}) is Risk.READ_ONLY
        elif TOOL_KINDS[name] in ("writes", "sends"):
            assert tool.risk({"path": "x", "content": "y", "url": "https://e"}) is not Risk.READ_ONLY
    bash = registry["bash"]
    assert bash.risk({"command": "git log"}) is Risk.READ_ONLY and bash.risk({"command": "rm -rf x"}) is not Risk.READ_ONLY


def test_models_inherit_aliases_tiers_and_ids(dirs: tuple[Path, Path]) -> None:
    folder = dirs[1] / ".claude" / "agents"
    for name, model in [("i", "inherit"), ("h", "haiku"), ("s", "sonnet"), ("o", "opus"), ("c", "cheap"),
                        ("m", "claude-opus-4-1"), ("g", "gpt-5"), ("bad", "a b; rm")]:
        put(folder, f"{name}.md", agent(name, f"model: {model}\n"))
    got = load(dirs)
    want = {"i": None, "h": "cheap", "s": "main", "o": "think", "c": "cheap", "m": "claude-opus-4-1",
            "g": "gpt-5", "bad": None}  # the user's own files may name any model
    assert {n: got.defs[n].model for n in want} == want
    assert got.warnings == (f"{folder / 'bad.md'}:4: 'a b; rm' is not a model name; the agent uses the parent's model",)


def test_list_tools_and_disallowed_tools(dirs: tuple[Path, Path]) -> None:
    folder = dirs[1] / ".cox" / "agents"
    put(folder, "a.md", agent("a", "disallowedTools: Write, Edit\n"))
    put(folder, "b.md", agent("b", "tools: [Read, Write]\ndisallowedTools: [Write]\n"))
    got = load(dirs)
    assert got.defs["a"].tools is None and got.defs["a"].disallowed == ("write", "edit")
    assert "write" not in child_tools(got.defs["a"], PARENT) and "bash" in child_tools(got.defs["a"], PARENT)
    assert child_tools(got.defs["b"], PARENT) == ["read"]


# --- garbage files --------------------------------------------------------------------------

def test_garbage_files_are_warnings_naming_file_and_line_and_skipped(dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    folder = ws / ".cox" / "agents"
    put(folder, "binary.md", b"---\nname: b\n\x00\x01\x02")
    put(folder, "latin1.md", b"---\nname: l\ndescription: caf\xe9\n---\n")
    put(folder, "huge.md", agent("huge", body="x" * (1024 * 1024)))
    put(folder, "plain.md", "# Just a README\n\nNo front matter here.\n")
    put(folder, "noname.md", "---\ndescription: d\n---\nbody\n")
    put(folder, "nodesc.md", "---\nname: nodesc\n---\nbody\n")
    put(folder, "listname.md", "---\nname: [a, b]\ndescription: d\n---\n")
    put(folder, "badname.md", "---\nname: ../../etc\ndescription: d\n---\n")
    put(folder, "blocktools.md", "---\nname: bt\ndescription: d\ntools: {Read: true}\n---\n")
    put(folder, "unclosed.md", "---\nname: u\ndescription: d\n")
    put(folder, "notmd.txt", "not read at all")
    put(folder, "good.md", agent("good"))
    (folder / "dir.md").mkdir()
    got = load(dirs)
    assert set(got.defs) == {"explore", "general-purpose", "good"}
    w = "\n".join(got.warnings)
    assert f"{folder / 'binary.md'}:3: a binary file" in w
    assert f"{folder / 'latin1.md'}:3: not UTF-8 text" in w
    assert f"{folder / 'huge.md'}: cannot be read (is larger than 1 MB); the agent file is skipped" in w
    assert f"{folder / 'plain.md'}:1: no front matter" in w
    assert f"{folder / 'noname.md'}:1: no 'name' in the front matter (required)" in w
    assert f"{folder / 'nodesc.md'}:1: no 'description'" in w
    assert f"{folder / 'listname.md'}:2: 'name' must be a single value" in w
    assert f"{folder / 'badname.md'}:2: the name '../../etc' is not letters" in w
    assert f"{folder / 'blocktools.md'}:4: a tool list is a comma-separated line" in w
    assert f"{folder / 'unclosed.md'}:1: the front matter opened on line 1 is never closed" in w
    assert "notmd" not in w and "dir.md" not in w and len(got.warnings) == 10  # a folder is looked into


def test_a_fifo_is_skipped_without_blocking(dirs: tuple[Path, Path]) -> None:
    folder = dirs[0] / ".claude" / "agents"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "pipe.md")
    put(folder, "ok.md", agent("ok"))
    out: list[Agents] = []
    t = threading.Thread(target=lambda: out.append(load(dirs)), daemon=True)
    t.start()
    t.join(BOUND_S)
    assert out, "load_agents blocked on a FIFO"
    assert "ok" in out[0].defs
    assert out[0].warnings == (f"{folder / 'pipe.md'}: cannot be read (is not a regular file (a device, FIFO "
                               "or socket)); the agent file is skipped",)


def test_project_symlinks_out_of_the_project_are_not_followed(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    ws, home = dirs
    outside = put(tmp_path / "elsewhere", "secret.md", agent("stolen", body="SECRET"))
    folder = ws / ".cox" / "agents"
    folder.mkdir(parents=True)
    (folder / "link.md").symlink_to(outside)
    (folder / "zero.md").symlink_to("/dev/zero")
    put(ws / "docs", "inside.md", agent("inside"))
    (folder / "inside.md").symlink_to(ws / "docs" / "inside.md")  # inside the project: fine
    (ws / ".claude").mkdir()
    (ws / ".claude" / "agents").symlink_to(tmp_path / "elsewhere")  # the whole folder out of the project
    got = load(dirs)
    assert "stolen" not in got.defs and "inside" in got.defs
    assert all("SECRET" not in d.prompt for d in got.defs.values())
    assert got.warnings == (
        f"{folder / 'link.md'}: a symlink out of the project ({outside}); not read",
        f"{folder / 'zero.md'}: a symlink out of the project (/dev/zero); not read",
        f"{ws / '.claude' / 'agents'}: a symlink out of the project ({tmp_path / 'elsewhere'}); "
        "its agent files are not read",
    )


def test_a_users_own_symlink_is_followed_but_never_to_a_device(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    _, home = dirs
    dotfiles = put(tmp_path / "dotfiles", "mine.md", agent("mine"))
    folder = home / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "mine.md").symlink_to(dotfiles)
    (folder / "zero.md").symlink_to("/dev/zero")
    got = load(dirs)
    assert "mine" in got.defs
    assert got.warnings == (f"{folder / 'zero.md'}: cannot be read (is not a regular file (a device, FIFO or "
                            "socket)); the agent file is skipped",)


def test_sub_folders_are_read_and_the_file_count_is_capped(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import cox.agents.defs as defs

    folder = dirs[1] / ".claude" / "agents"
    put(folder / "marketing", "growth.md", agent("growth"))
    put(folder / "a" / "b" / "c" / "d", "deep.md", agent("deep"))  # deeper than MAX_DEPTH
    assert "growth" in load(dirs).defs and "deep" not in load(dirs).defs
    monkeypatch.setattr(defs, "MAX_FILES", 3)
    for i in range(5):
        put(folder, f"n{i}.md", agent(f"n{i}"))
    got = load(dirs)
    assert sorted(n for n in got.defs if n.startswith("n")) == ["n0", "n1", "n2"]
    assert got.warnings == (f"{folder}: more than 3 agent files; the rest are skipped",)


def test_a_long_description_and_prompt_are_cut(dirs: tuple[Path, Path]) -> None:
    path = put(dirs[1] / ".cox" / "agents", "a.md", f"---\nname: a\ndescription: {'d' * 9000}\n---\n{'p' * 70000}")
    got = load(dirs)
    assert len(got.defs["a"].description) == 4000 and len(got.defs["a"].prompt) == 65536
    assert got.warnings == (f"{path}:3: the description is cut to 4000 characters",
                            f"{path}: the prompt is cut to 65536 characters")


# --- precedence -----------------------------------------------------------------------------

def test_precedence_project_over_user_and_cox_over_claude(dirs: tuple[Path, Path]) -> None:
    ws, home = dirs
    user_claude = put(home / ".claude" / "agents", "r.md", agent("reviewer", body="user claude"))
    put(home / ".cox" / "agents", "r.md", agent("reviewer", body="user cox"))
    put(home / ".claude" / "agents", "only-user.md", agent("only-user"))
    proj_cox = put(ws / ".cox" / "agents", "r.md", agent("reviewer", body="project cox"))
    proj_claude = put(ws / ".claude" / "agents", "r.md", agent("reviewer", body="project claude"))
    got = load(dirs)
    assert got.defs["reviewer"].prompt == "project cox" and got.defs["reviewer"].source == str(proj_cox)
    assert "only-user" in got.defs
    assert got.warnings == (
        f"{proj_claude}: 'reviewer' is already defined by {proj_cox}, which is used; rename one",
        f"{proj_cox} replaces your agent 'reviewer' from {home / '.cox' / 'agents' / 'r.md'} "
        "(a project's agents take precedence)",
        f"{proj_cox} replaces your agent 'reviewer' from {user_claude} (a project's agents take precedence)",
    )


def test_cox_home_and_claude_config_dir_are_where_the_users_files_are(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    put(tmp_path / "ch" / "agents", "a.md", agent("from-cox-home"))
    put(tmp_path / "cc" / "agents", "b.md", agent("from-claude-dir"))
    put(home / ".claude" / "agents", "c.md", agent("not-read"))
    got = load_agents(ws, home, env={"COX_HOME": str(tmp_path / "ch"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")})
    assert {"from-cox-home", "from-claude-dir"} <= set(got.defs) and "not-read" not in got.defs


def test_a_project_that_is_the_home_folder_reads_its_files_once_as_the_users(dirs: tuple[Path, Path]) -> None:
    _, home = dirs
    put(home / ".claude" / "agents", "a.md", agent("a", "model: gpt-5\n"))
    got = load_agents(home, home, parent_model="claude-sonnet-4-5")
    assert got.defs["a"].model == "gpt-5" and got.warnings == ()  # the user's own: not narrowed, no clash


# --- narrowing ------------------------------------------------------------------------------

def test_a_project_may_not_replace_a_builtin_but_the_user_may(dirs: tuple[Path, Path]) -> None:
    ws, home = dirs
    path = put(ws / ".claude" / "agents", "explore.md", agent("explore", "tools: Read, Write, Bash\n"))
    got = load(dirs)
    assert got.defs["explore"] == builtin_agents()["explore"]
    assert got.warnings == (f"{path}: a project agent may not replace the built-in 'explore' (the parent "
                            "relies on what it promises); skipped — rename it",)
    assert child_tools(got.defs["explore"], PARENT) == ["read", "bash", "grep", "glob", "ls"]
    put(ws / ".cox" / "agents", "Explore.md", agent("Explore", "tools: Write\n"))
    assert "Explore" not in load(dirs).defs
    put(home / ".cox" / "agents", "gp.md", agent("general-purpose", "tools: Read\n", body="mine"))
    assert load(dirs).defs["general-purpose"].prompt == "mine"


@pytest.mark.parametrize(("model", "parent", "kept"), [
    ("claude-opus-4-1", "claude-sonnet-4-5", True),
    ("gpt-5", "claude-sonnet-4-5", False),
    ("claude-haiku-4-5", "gpt-5", False),
    ("o3", "gpt-5-mini", True),
    ("llama-3-70b", "gpt-5", True),  # an OpenAI-compatible endpoint: the same place
    ("gpt-5", None, False),  # the parent's model unknown: fail closed
    ("opus", "gpt-5", True),  # a tier stays with the provider the person chose
])
def test_a_project_agents_model_may_not_move_to_another_provider(dirs: tuple[Path, Path], model: str,
                                                                  parent: str | None, kept: bool) -> None:
    path = put(dirs[0] / ".cox" / "agents", "a.md", agent("a", f"model: {model}\n"))
    got = load(dirs, parent_model=parent)
    want = ({"opus": "think"}.get(model, model)) if kept else None
    assert got.defs["a"].model == want
    assert bool(got.warnings) is (not kept)
    if not kept:
        assert got.warnings[0].startswith(f"{path}:4: a project agent")


def test_a_project_agent_cannot_widen_its_permissions_or_hooks(dirs: tuple[Path, Path]) -> None:
    path = put(dirs[0] / ".claude" / "agents", "a.md",
               agent("a", "permissionMode: bypassPermissions\nmcpServers:\n  - evil\n"))
    got = load(dirs)
    assert got.defs["a"] == AgentDef("a", "the a agent", None, None, "You are it.", source=str(path))
    assert got.warnings == (
        f"{path}:4: cox ignores 'permissionMode' in agent files: the agent runs in the parent's permission "
        "mode (a child's is never wider)",
        f"{path}:5: cox ignores 'mcpServers' in agent files: the agent sees the parent's MCP servers",
    )


def test_a_project_agent_never_gets_a_tool_its_parent_lacks(dirs: tuple[Path, Path]) -> None:
    put(dirs[0] / ".cox" / "agents", "a.md", agent("a", "tools: Read, Write, Bash, WebFetch, mcp__x__y\n"))
    assert child_tools(load(dirs).defs["a"], ["read", "grep", "bash"]) == ["read", "bash"]


# --- child_tools ----------------------------------------------------------------------------

def test_child_tools_general_purpose_gets_all_but_the_spawning_tools_in_the_parents_order() -> None:
    got = child_tools(builtin_agents()["general-purpose"], PARENT)
    assert got == [t for t in PARENT if t not in SPAWNING_TOOLS]
    assert "agent" not in got and "run_agent_work_graph" not in got


def test_child_tools_read_only_gets_only_read_only_tools() -> None:
    explore = builtin_agents()["explore"]
    assert child_tools(explore, PARENT) == ["read", "bash", "grep", "glob", "ls"]
    general_ro = AgentDef("g", "d", None, None, "p", read_only=True)  # a work-graph task that is not writable
    assert child_tools(general_ro, PARENT) == ["read", "bash", "grep", "glob", "ls", "todo_write",
                                               "list_mcp_resources", "read_mcp_resource"]
    listed = AgentDef("w", "d", ("write", "read", "agent", "mcp__db__query"), None, "p", read_only=True)
    assert child_tools(listed, PARENT) == ["read"]


def test_child_tools_explicit_list_never_includes_agent() -> None:
    d = AgentDef("x", "d", ("agent", "read", "agent_wait"), None, "p")
    assert child_tools(d, ["agent", "agent_wait", "read", "read"]) == ["read"]
    assert child_tools(d, iter(["read"])) == ["read"]
