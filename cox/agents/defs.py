"""Agent definitions: the types ``agent(subagent_type=…)`` can start, and the tools each child gets.

Two are built in — ``explore`` (read-only, the cheap tier) and ``general-purpose`` (every tool of
the parent) — and more come from Markdown files in Claude Code's format, so a migrating user's
agents work unchanged: ``.cox/agents/`` and ``.claude/agents/`` of the project, then
``$COX_HOME/agents/`` (``~/.cox/agents``) and ``$CLAUDE_CONFIG_DIR`` (``~/.claude``)``/agents/`` of
the user. The first definition of a name in that order is used: project over user (as Claude
Code), cox's folder over Claude's at the same level. Sub-folders are read too, as Claude Code does.

A project's agent files are written by whoever wrote the repository, so they are read the way
its ``.cox/config.toml`` is (``cox.config.project``): as a request that may only narrow.

- Reading: never a plain read (``cox.config.readfile``: a regular file under a size cap, no FIFO,
  device or ``/dev/zero``), and a project file or folder that is a symlink out of the project is
  not followed. A bad file is one warning naming it (and the line) and is skipped; nothing here
  raises.
- Tools: a child never gets a tool its parent lacks (:func:`child_tools` intersects), nor any
  tool that starts agents (the lead adds ``agent`` back below the depth limit). Claude Code's
  ``Bash(git diff:*)``-style restrictions cannot be expressed, so such an entry is left out
  rather than widened to the whole tool. ``disallowedTools`` is honoured (it narrows).
- Names: a project file may not take a built-in name (in any case: ``Explore`` is Claude Code's). ``explore`` is promised read-only to the
  parent's model and the person; a repository's ``explore.md`` could otherwise give it ``write``
  and ``bash`` under a name the parent trusts to change nothing. A project file that replaces
  one of the user's own agents is allowed (Claude Code's precedence) but said in a warning.
  The user's own files may replace built-ins: they are the person's choice.
- Model: ``inherit`` and the tiers (Claude Code's ``haiku``/``sonnet``/``opus`` are cox's
  ``cheap``/``main``/``think``) always stay with the provider the person chose. A model id from
  a project file is kept only when it belongs to the same provider family as the parent's model,
  the rule for a project's ``core.model``: otherwise a repository could send the child's
  conversation — your code — to another vendor. Unknown parent model: the child inherits.
- Fields Claude Code has and cox does not (``permissionMode``, ``hooks``, ``mcpServers``) are
  ignored with a warning, since each would change what runs; the child's permission mode is never
  wider than the parent's anyway. Cosmetic ones (``color``, ``effort`` …) are ignored silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox import lazyre
from cox.actors.tools.spelling import COX_NAME
from cox.slim import dataclass

if TYPE_CHECKING:
    from .frontmatter import Value

__all__ = ["AgentDef", "Agents", "CLAUDE_TOOLS", "READ_ONLY_TOOLS", "SPAWNING_TOOLS", "TOOL_KINDS",
           "builtin_agents", "child_tools", "load_agents", "parse_agent"]

FILE_LIMIT = 1024 * 1024
"""An agent file larger than this is refused: its body is a system prompt sent on every child
request, and no real one comes close."""
MAX_FILES = 200
"""Agent files read per folder (sub-folders included); the rest are skipped with a warning."""
MAX_DEPTH = 4
PROMPT_LIMIT = 64 * 1024
"""Characters of a file's prompt kept, as for instruction files (``instruction_block``): it is
sent with every request of the child."""
DESCRIPTION_LIMIT = 4000
"""Characters of a description kept: every description reaches the parent's model with the
``agent`` tool on every request, so a repository must not be able to bloat it."""

TOOL_KINDS: dict[str, str] = {
    "read": "read-only", "grep": "read-only", "glob": "read-only", "ls": "read-only",
    "todo_write": "read-only",  # it changes only the session's own todo list
    "skill": "read-only",  # it reads a SKILL.md the person's folders or the workspace hold
    "list_mcp_resources": "read-only", "read_mcp_resource": "read-only",
    "bash": "per-call",  # the line's risk (cox.policy.bash); read-only lines run in a read-only sandbox
    "diagnostics": "per-call",  # Exec while it would start its language's server, read-only once it runs
    "definition": "read-only", "references": "read-only",
    "rename_symbol": "writes",
    "write": "writes", "edit": "writes", "apply_patch": "writes",
    "web_fetch": "sends",  # Risk.EXEC: the URL itself carries data off the machine
    "tool_search": "enables",  # it turns on deferred tools, which are none of the above
    "agent": "spawns", "agent_wait": "spawns", "agent_send": "spawns", "agent_close": "spawns",
    "run_agent_work_graph": "spawns",
}
"""What each of cox's own tools is to a read-only child, decided name by name (a test keeps it
equal to the registry, so a new tool is decided here before it ships). A static table, not the
tools' ``describe``: :func:`child_tools` knows only names, and the answer must not depend on a
call's input. MCP tools (``mcp__…``) are not here: their read-only hint is the server's own
claim, so a read-only child does not get them (a call would be judged per call anyway)."""

READ_ONLY_TOOLS = frozenset(name for name, kind in TOOL_KINDS.items() if kind in ("read-only", "per-call"))
"""The tools a read-only child (``explore``, a work-graph task that is not writable) gets. ``bash``
is among them because its read-only lines (``git log``, ``rg``) are what exploring needs: the
read-only policy the child runs under denies every line cox does not rate read-only."""

SPAWNING_TOOLS = frozenset(name for name, kind in TOOL_KINDS.items() if kind == "spawns")
"""Never given by :func:`child_tools`: the lead adds them back below the depth limit (a work graph
starts agents too, so it would step around the limit)."""

CLAUDE_TOOLS: dict[str, str] = {
    **{claude.lower(): cox for claude, cox in COX_NAME.items()},  # the one spelling table (Skill included)
    "listmcpresourcestool": "list_mcp_resources", "readmcpresourcetool": "read_mcp_resource",
}
"""Claude Code's tool names (case-insensitive) → cox's. Not mapped, so dropped with a warning:
``WebSearch``, ``NotebookEdit``, ``BashOutput``, ``KillShell`` and the rest (cox has no
equivalent). cox's own names are accepted as they are, and ``mcp__server__tool`` names pass
through unchanged (cox names MCP tools the same way)."""

MODEL_ALIASES: dict[str, str] = {"haiku": "cheap", "sonnet": "main", "opus": "think",
                                 "cheap": "cheap", "main": "main", "code": "main", "think": "think"}
TIERS = frozenset(MODEL_ALIASES.values())

_NAME = lazyre.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_MODEL_ID = lazyre.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$")
_MCP = lazyre.compile(r"^mcp__[A-Za-z0-9_.-]+__[A-Za-z0-9_.-]+$")
_IGNORED_WARN = {
    "permissionmode": "the agent runs in the parent's permission mode (a child's is never wider)",
    "hooks": "hooks come only from settings files (`cox hooks list`)",
    "mcpservers": "the agent sees the parent's MCP servers",
}


@dataclass(frozen=True, slots=True)
class AgentDef:
    name: str
    """"explore", "general-purpose", or the file's front-matter name."""
    description: str
    tools: tuple[str, ...] | None
    """cox tool names; None = every tool of the parent."""
    model: str | None
    """None = the parent's; a tier "cheap" | "main" | "think"; or a model name."""
    prompt: str
    """The system prompt of the child (the file's body; built-ins their own)."""
    read_only: bool = False
    """A policy that denies every call that is not read-only (explore)."""
    source: str = "builtin"
    """"builtin", or the file's path."""
    disallowed: tuple[str, ...] = ()
    """Tools the child never gets even when ``tools`` is None (Claude Code's ``disallowedTools``)."""


@dataclass(frozen=True, slots=True)
class Agents:
    defs: dict[str, AgentDef]
    """By name, precedence resolved: built-ins first, then the files' agents in the order found."""
    warnings: tuple[str, ...]
    """For the person: a bad file, a project file narrowed, a name clash."""


EXPLORE_PROMPT = """You are explore, a read-only subagent of cox. Another agent (the parent) \
gave you one question about the code in the workspace; find the answer in the code and report it. \
Nobody answers questions while you work: if the question can be read two ways, answer the likelier \
reading and say which you chose.

- You can read, search and list files, and run read-only shell commands (git log, git show, \
git blame, git grep). You change nothing: any call that would write a file (even under /tmp), \
delete, install or reach the network is denied. Do not look for a way around a denial; note what \
you could not check.
- Work fast: start broad (glob for file names, grep for symbols and strings), then read only the \
parts that matter, with line ranges. Make independent searches in one step, so they run in \
parallel. Prefer a grep with context to reading a whole large file.
- Be thorough: follow a definition to its callers and a call to its definition, look at the tests \
and the configuration, and try more than one plausible name or spelling before you conclude \
that something does not exist.
- Stop when the question is answered: do not survey the rest of the repository.
- Ground every claim in the code, as path:line (or path:start-end) relative to the workspace. \
Keep what you saw apart from what you infer.

Your final message is the only thing the parent sees: not your searches, not the files you \
read. Make it a report that stands on its own: the direct answer first, then the evidence as \
path:line references with a short note each, then what you could not determine. No preamble. \
Quote only the lines that prove a point, never large blocks of code."""

GENERAL_PROMPT = """You are a subagent of cox. Another agent (the parent) gave you one task in \
the user's workspace; where the sections above speak of the user, read the parent. Carry the task \
out completely and on your own: nobody will answer questions while you work, so when something \
is unclear, make the reasonable choice and say so in your report.

- Do the task and nothing more. Stay inside the files and the scope it names; leave unrelated \
code, and changes you did not make, as they are.
- When you changed code, check it the way the project does (its tests, its linters, its type \
checker) and fix what you broke.
- If a call is denied or a step cannot be done, do not force it: finish what you can and report \
what is left.

Your final message is the only thing the parent sees: not your tool calls, not their output. \
End with a concise report: what you did, the files you changed (paths), what you verified and \
how, and anything left undone or uncertain. Cite code as path:line. No preamble."""


def builtin_agents() -> dict[str, AgentDef]:
    return {
        "explore": AgentDef(
            "explore",
            "Fast read-only explorer of the codebase: finds files, symbols and how things work, and "
            "reports with paths and line numbers. Use it for questions that need many searches or "
            "reads; it changes nothing.",
            ("read", "grep", "glob", "ls", "bash"), "cheap", EXPLORE_PROMPT, read_only=True),
        "general-purpose": AgentDef(
            "general-purpose",
            "General agent for multi-step tasks: researches, edits and runs commands with all of "
            "your tools, and ends with a concise report of what it did.",
            None, None, GENERAL_PROMPT),
    }


def child_tools(defn: AgentDef, available: Iterable[str]) -> list[str]:
    """The names of the parent's tools the child gets, in the order of ``available``: never one
    that starts agents (:data:`SPAWNING_TOOLS`), only those the definition names (all when it
    names none) less those it disallows, and for a read-only definition only
    :data:`READ_ONLY_TOOLS`."""
    wanted = None if defn.tools is None else frozenset(defn.tools)
    out: list[str] = []
    for name in dict.fromkeys(available):
        if name in SPAWNING_TOOLS or name in defn.disallowed or (wanted is not None and name not in wanted):
            continue
        if defn.read_only and name not in READ_ONLY_TOOLS:
            continue
        out.append(name)
    return out


def load_agents(cwd: Path, home: Path, *, cox_home: Path | None = None, env: Mapping[str, str] | None = None,
                parent_model: str | None = None, models: Mapping[str, Any] | None = None) -> Agents:
    """Every agent in effect for a session in ``cwd`` of the user whose home is ``home``:
    the built-ins, then the files (see the module docstring for order and rules). ``cox_home``
    defaults to ``$COX_HOME`` or ``home/.cox``; ``env`` (for ``COX_HOME``, ``CLAUDE_CONFIG_DIR``)
    to the process's. ``parent_model`` (and the user's ``[models]`` overrides) decide whether a
    project agent's model id is kept."""
    env = os.environ if env is None else env
    if cox_home is None:
        cox_home = Path(env["COX_HOME"]).expanduser() if env.get("COX_HOME") else home / ".cox"
    from cox.config.readfile import user_claude_dir

    claude = user_claude_dir(home, env)
    project = cwd.absolute()
    folders = [(project / ".cox" / "agents", True), (project / ".claude" / "agents", True),
               (cox_home / "agents", False), (claude / "agents", False)]
    user_folders = {_real(f) for f, is_project in folders if not is_project}
    warnings: list[str] = []
    found: dict[str, AgentDef] = {}
    builtins = builtin_agents()
    for folder, is_project in folders:
        if is_project and _real(folder) in user_folders:
            continue  # the project is the home folder: these files are the user's
        for path in _agent_files(folder, project if is_project else None, warnings):
            defn = parse_agent(path, warnings, project=is_project, parent_model=parent_model, models=models)
            if defn is None:
                continue
            if is_project and defn.name.lower() in builtins:  # "Explore" is Claude Code's spelling
                warnings.append(f"{path}: a project agent may not replace the built-in {defn.name!r} "
                                "(the parent relies on what it promises); skipped — rename it")
                continue
            first = found.get(defn.name)
            if first is None:
                found[defn.name] = defn
            elif _is_project(first.source, project) and not is_project:
                warnings.append(f"{first.source} replaces your agent {defn.name!r} from {path} "
                                "(a project's agents take precedence)")
            else:
                warnings.append(f"{path}: {defn.name!r} is already defined by {first.source}, "
                                "which is used; rename one")
    return Agents({**builtins, **found}, tuple(warnings))


def parse_agent(path: Path, warnings: list[str], *, project: bool = False, parent_model: str | None = None,
                models: Mapping[str, Any] | None = None) -> AgentDef | None:
    """One agent file as a definition, or None (with a warning) when it cannot be one."""
    from cox.config.readfile import read_settings_bytes

    try:
        data = read_settings_bytes(path, limit=FILE_LIMIT)
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.append(f"{path}: cannot be read ({exc.strerror or exc}); the agent file is skipped")
        return None
    if b"\0" in data:
        line = data[: data.index(b"\0")].count(b"\n") + 1
        warnings.append(f"{path}:{line}: a binary file, not an agent definition; skipped")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        warnings.append(f"{path}:{line}: not UTF-8 text; the agent file is skipped")
        return None
    from .frontmatter import FrontMatterError  # with the first agent file found: most folders have none

    try:
        return _definition(path, text, warnings, project=project, parent_model=parent_model, models=models)
    except FrontMatterError as exc:
        warnings.append(f"{path}:{exc.line}: {exc.reason}; the agent file is skipped")
        return None


def _definition(path: Path, text: str, warnings: list[str], *, project: bool, parent_model: str | None,
                models: Mapping[str, Any] | None) -> AgentDef:
    """Raises FrontMatterError(line, why) when the file cannot be an agent definition."""
    from .frontmatter import Block, FrontMatterError, split

    fields, body = split(text)
    keys = {k.lower(): k for k in fields}

    def get(key: str) -> tuple[int, Value]:
        return fields.get(keys.get(key.lower(), key), (1, None))

    def scalar(key: str) -> tuple[int, str | None]:
        line, value = get(key)
        if isinstance(value, (list, Block)):
            raise FrontMatterError(line, f"{key!r} must be a single value")
        return line, value

    line, name = scalar("name")
    if not name:
        raise FrontMatterError(line, "no 'name' in the front matter (required)")
    if not _NAME.match(name):
        raise FrontMatterError(line, f"the name {name[:64]!r} is not letters, digits, '-', '_' and '.' (at most 64)")
    line, description = scalar("description")
    if not description or not description.strip():
        raise FrontMatterError(line, "no 'description' in the front matter (required: it tells the "
                                     "parent when to use the agent)")
    description = description.strip()
    if len(description) > DESCRIPTION_LIMIT:
        warnings.append(f"{path}:{line}: the description is cut to {DESCRIPTION_LIMIT} characters")
        description = description[:DESCRIPTION_LIMIT]
    if len(body) > PROMPT_LIMIT:
        warnings.append(f"{path}: the prompt is cut to {PROMPT_LIMIT} characters")
        body = body[:PROMPT_LIMIT]
    tools = _tools(path, get("tools"), warnings)
    disallowed = _tools(path, get("disallowedTools"), warnings)
    line, model_raw = scalar("model")
    model = _model(path, line, model_raw, warnings, project=project, parent_model=parent_model, models=models)
    for key, why in _IGNORED_WARN.items():
        if key in keys:
            warnings.append(f"{path}:{fields[keys[key]][0]}: cox ignores {keys[key]!r} in agent files: {why}")
    return AgentDef(name, description, tools, model, body, source=str(path), disallowed=disallowed or ())


def _tools(path: Path, field: tuple[int, Value], warnings: list[str]) -> tuple[str, ...] | None:
    """The cox names of a ``tools`` / ``disallowedTools`` value (None when absent or empty: every
    tool). Entries cox cannot map are left out, each with a warning."""
    from .frontmatter import Block, FrontMatterError

    line, value = field
    if value is None:
        return None
    if isinstance(value, Block):
        raise FrontMatterError(line, "a tool list is a comma-separated line or a list of names")
    entries = [e.strip() for e in (value if isinstance(value, list) else _split_commas(value))]
    if [e for e in entries if e] == ["*"]:
        return None  # Claude Code's "every tool"
    out: list[str] = []
    for entry in entries:
        entry = entry.strip()
        if not entry:
            continue
        name = _tool_name(entry)
        if name is None:
            if "(" in entry:
                warnings.append(f"{path}:{line}: {entry[:60]!r} is left out: cox cannot restrict a tool "
                                "to some of its uses, and the whole tool would be wider than the file asks")
            else:
                warnings.append(f"{path}:{line}: unknown tool {entry[:60]!r} is left out")
            continue
        if name not in out:
            out.append(name)
    return tuple(out)


def _tool_name(entry: str) -> str | None:
    if _MCP.match(entry):
        return entry
    if entry in TOOL_KINDS:
        return entry
    return CLAUDE_TOOLS.get(entry.lower())


def _split_commas(value: str) -> list[str]:
    """``Read, Bash(git diff:*, git log:*), Grep``: commas inside parentheses do not split."""
    out, current, depth = [], "", 0
    for c in value:
        if c == "," and depth == 0:
            out.append(current)
            current = ""
            continue
        depth += (c == "(") - (c == ")" and depth > 0)
        current += c
    return [*out, current]


def _model(path: Path, line: int, raw: str | None, warnings: list[str], *, project: bool,
           parent_model: str | None, models: Mapping[str, Any] | None) -> str | None:
    value = (raw or "").strip()
    if not value or value.lower() == "inherit":
        return None
    if value.lower() in MODEL_ALIASES:
        return MODEL_ALIASES[value.lower()]
    if not _MODEL_ID.match(value):
        warnings.append(f"{path}:{line}: {value[:60]!r} is not a model name; the agent uses the parent's model")
        return None
    if not project:
        return value
    if parent_model is None:
        warnings.append(f"{path}:{line}: a project agent's model {value!r} is kept only when it goes to the "
                        "same provider as your model, which is not known here; the agent uses the parent's model")
        return None
    from cox.actors.provider.catalog import describe

    over = dict(models) if models else None
    theirs, ours = describe(value, over).provider, describe(parent_model, over).provider
    if _family(theirs) != _family(ours):
        warnings.append(f"{path}:{line}: a project agent may not move the conversation to another provider "
                        f"({value!r} is {theirs}, your model {parent_model!r} is {ours}); the agent uses "
                        "the parent's model")
        return None
    return value


def _family(provider: str) -> str:
    return "openai" if provider in ("openai", "openai-chat") else provider


def _agent_files(folder: Path, project: Path | None, warnings: list[str]) -> list[Path]:
    """The ``*.md`` files under ``folder`` (sorted, sub-folders to ``MAX_DEPTH``; symlinked
    sub-folders are not entered). For a project (``project`` given), a folder or file whose real
    path lies outside the project is skipped with a warning."""
    try:
        if not folder.is_dir():
            return []
    except OSError:
        return []
    if project is not None and not _inside(folder, project):
        warnings.append(f"{folder}: a symlink out of the project ({os.path.realpath(folder)}); "
                        "its agent files are not read")
        return []
    out: list[Path] = []
    stack: list[tuple[Path, int]] = [(folder, 0)]
    while stack:
        here, depth = stack.pop()
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError as exc:
            warnings.append(f"{here}: cannot be listed ({exc.strerror}); its agent files are skipped")
            continue
        folders: list[Path] = []
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth + 1 < MAX_DEPTH and not entry.name.startswith("."):
                        folders.append(path)
                    continue
                if not entry.name.endswith(".md"):
                    continue
                if project is not None and entry.is_symlink() and not _inside(path, project):
                    warnings.append(f"{path}: a symlink out of the project ({os.path.realpath(path)}); "
                                    "not read")
                    continue
            except OSError:
                continue
            if len(out) == MAX_FILES:
                warnings.append(f"{folder}: more than {MAX_FILES} agent files; the rest are skipped")
                return out
            out.append(path)
        stack.extend((f, depth + 1) for f in reversed(folders))
    return out


def _inside(path: Path, root: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip("/") + "/")


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _is_project(source: str, project: Path) -> bool:
    return source.startswith(str(project).rstrip("/") + "/")
