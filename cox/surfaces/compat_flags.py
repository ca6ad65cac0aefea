"""Claude Code's command-line flags on cox's run path, so a script written for ``claude -p`` runs.

One function registers them (:func:`add_claude_flags`: the ``run`` sub-parser, and any other
entry point that speaks Claude Code), one turns what was parsed into what a session needs
(:func:`claude_options`): config overrides, permission rules, the tools offered, what the model
is told, the schema of the answer, the fallback model and the new session's id. Every value is
checked here, so a wrong one is one sentence and the usage exit code, before anything starts.

What they become:

- ``--allowedTools`` / ``--disallowedTools``: allow / deny rules in the rule grammar
  (:mod:`cox.policy.rules`), merged with the config's; a deny holds in every mode, bypass too;
- ``--tools``: the built-in tools offered to the model (``""`` none, ``default`` all);
- ``--system-prompt`` replaces cox's system prompt ("" is cox's own), ``--append-system-prompt``
  follows it; ``--json-schema``: :mod:`cox.surfaces.structured`;
- ``--max-budget-usd``: ``budget.session_usd``; ``--dangerously-skip-permissions``: permission mode
  ``bypassPermissions`` (deny rules, the built-in credential denies and the sandbox still hold);
- ``--model`` aliases (``sonnet``, ``opus``, ``haiku``, ``opus-4-1`` …): the catalog's model on
  the provider that has a key (:func:`cox.actors.provider.catalog.resolve_alias`);
- ``-r`` without an id: the latest session in this workspace (``--continue``);
  ``--session-id``: the new session's id (a fork's, with ``--fork-session``);
- ``--system-prompt-file`` / ``--append-system-prompt-file``: the same from a file;
- the request's knobs, on the main loop's requests (:func:`apply_request_flags`): ``--effort``
  (Anthropic's ``output_config.effort``; OpenAI's reasoning effort), ``--max-thinking-tokens``
  (a thinking budget; 0 is no thinking), ``--thinking adaptive|enabled|disabled``,
  ``--thinking-display``, ``--task-budget`` (``output_config.task_budget`` with its beta) and
  ``--betas`` (the ``anthropic-beta`` header); a knob the session's provider has no field for is
  refused at start-up, never dropped;
- ``--include-hook-events``: hook lifecycle frames in Claude Code's stream (``claude_code``);
- what cox cannot do (:data:`REFUSED`: ``--plugin-dir``, ``--resume-session-at``,
  ``--resume-drops-turn``, ``--session-mirror``) is refused with what to do instead.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from cox import lazyre
from cox.slim import dataclass

if TYPE_CHECKING:
    from .structured import StructuredAnswer

DEFAULT_TOOLS = "default"
EFFORTS = ("low", "medium", "high", "xhigh", "max")
OPENAI_EFFORT = {"low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "xhigh"}
"""Claude Code's effort levels as OpenAI's reasoning efforts (``max`` is OpenAI's top one)."""

REFUSED: dict[str, str] = {
    "plugin_dir": "--plugin-dir: cox does not load Claude Code plugins; put the plugin's commands, skills and "
                  "agents under .claude/ (or ~/.claude/), its MCP servers in --mcp-config, and its hooks in "
                  "settings, where cox reads them",
    "resume_session_at": "--resume-session-at: cox resumes a whole session; resume it (--resume ID), then "
                         "rewind to a turn (the SDK's rewind_files, or /rewind N)",
    "resume_drops_turn": "--resume-drops-turn: cox resumes a whole session; resume it (--resume ID), then "
                         "rewind the last turn (/rewind N)",
    "session_mirror": "--session-mirror: cox keeps its own transcript (its rollout, `cox sessions`) and cannot "
                      "mirror it to an SDK session store; run without session_store",
}
"""Claude Code's flags cox cannot honour, each with what to do instead (a usage error)."""


class FlagError(ValueError):
    """A flag's value cannot mean anything: the message says which and what to pass instead."""


def add_claude_flags(parser: argparse.ArgumentParser) -> None:
    """Register Claude Code's flags on ``parser``. A flag the parser already has (an entry point
    that defines ``--model`` itself) is left as it is: only the missing spellings are added."""
    from .cli import MODEL_HELP, PERMISSION_MODE_HELP, PERMISSION_MODES, VERBOSE_HELP

    def add(*names: str, **kw: Any) -> None:
        free = [n for n in names if n not in parser._option_string_actions]
        if free:
            parser.add_argument(*free, **kw)

    rules = "comma- or space-separated, repeatable; Claude Code's rule grammar: Bash(git status:*), Edit, mcp__srv"
    add("--allowedTools", "--allowed-tools", dest="allowed_tools", action="append", nargs="+", metavar="RULE",
        help=f"calls these rules cover run without asking ({rules})")
    add("--disallowedTools", "--disallowed-tools", dest="disallowed_tools", action="append", nargs="+",
        metavar="RULE", help=f"calls these rules cover are denied, in every permission mode ({rules})")
    add("--tools", dest="tools", action="append", nargs="+", metavar="TOOL",
        help='the built-in tools offered to the model: "" none, "default" all, or names (Bash, Read, Edit … '
             "or cox's bash, read, edit …)")
    add("--system-prompt", dest="system_prompt", metavar="TEXT",
        help="told to the model instead of cox's system prompt (an empty TEXT keeps cox's)")
    add("--append-system-prompt", dest="append_system_prompt", metavar="TEXT",
        help="told to the model after the system prompt")
    add("--json-schema", dest="json_schema", metavar="SCHEMA",
        help="the final answer must be JSON valid against this JSON Schema (its text or a file); sent back once "
             "when it is not; the value is the result's structured_output")
    add("--max-budget-usd", dest="max_budget_usd", metavar="USD",
        help="stop (stop reason budget, exit 3) before a model request would pass this many US dollars")
    add("--fallback-model", dest="fallback_model", metavar="MODEL",
        help="when the main model is overloaded or unavailable, go on with this one (same provider)")
    add("--session-id", dest="session_id", metavar="UUID",
        help="the new session's id (a UUID no stored session has)")
    add("--permission-mode", choices=PERMISSION_MODES, help=PERMISSION_MODE_HELP)
    add("--dangerously-skip-permissions", dest="skip_permissions", action="store_true",
        help="the same as --permission-mode bypassPermissions: nothing asks (deny rules and the sandbox still hold)")
    add("--model", help=MODEL_HELP + "; sonnet, opus and haiku name the code, think and cheap tier of the "
                                     "provider that has a key")
    add("-c", "--continue", dest="continue_", action="store_true", help="continue the latest session here")
    add("-r", "--resume", dest="resume", nargs="?", const="", metavar="ID",
        help="continue a stored session; without ID the latest one here")
    add("--fork-session", dest="fork_session", action="store_true",
        help="with --resume/--continue: continue a copy under a new session id")
    add("--verbose", action="store_true", help=VERBOSE_HELP)
    add("--system-prompt-file", dest="system_prompt_file", metavar="FILE",
        help="--system-prompt, read from FILE")
    add("--append-system-prompt-file", dest="append_system_prompt_file", metavar="FILE",
        help="--append-system-prompt, read from FILE")
    add("--effort", dest="effort", choices=EFFORTS,
        help="how much effort the model spends (Anthropic's output_config.effort, OpenAI's reasoning effort)")
    add("--max-thinking-tokens", dest="max_thinking_tokens", metavar="N",
        help="a thinking budget for each request of the main loop (0: no thinking)")
    add("--thinking", dest="thinking", choices=("adaptive", "enabled", "disabled"),
        help="adaptive: the model decides how much to think; disabled: no thinking")
    add("--thinking-display", dest="thinking_display", choices=("summarized", "omitted"),
        help="how the model's thinking is returned (Anthropic)")
    add("--task-budget", dest="task_budget", metavar="TOKENS",
        help="an advisory token budget for the whole agentic loop (Anthropic's task budgets beta)")
    add("--betas", dest="betas", action="append", nargs="+", metavar="BETA",
        help="Anthropic API beta headers to send (comma- or space-separated)")
    add("--include-hook-events", dest="include_hook_events", action="store_true",
        help="stream-json in Claude Code's dialect: also each hook's system/hook_started and hook_response")
    for dest in REFUSED:
        add("--" + dest.replace("_", "-"), dest=dest, nargs="?", const="", metavar="VALUE", help=argparse.SUPPRESS)


@dataclass
class ClaudeOptions:
    """What the flags ask of a session (nothing given: every field empty)."""

    flags: dict[str, Any] = field(default_factory=dict)
    """Config overrides, dotted keys (``permissions.mode``, ``budget.session_usd``, rule lists)."""
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    tools: frozenset[str] | None = None
    """The cox names of the built-in tools offered; None: all of them."""
    system_prompt: str = ""
    append_system_prompt: str = ""
    structured: StructuredAnswer | None = None
    fallback_model: str = ""
    session_id: str | None = None
    request: RequestFlags = field(default_factory=lambda: RequestFlags())
    """The request's knobs (:func:`apply_request_flags`)."""


@dataclass
class RequestFlags:
    """``--effort``, the thinking flags, ``--task-budget`` and ``--betas`` as checked values."""

    effort: str | None = None
    thinking_budget: int | None = None
    """``--max-thinking-tokens`` (0: thinking off)."""
    thinking: str | None = None
    thinking_display: str | None = None
    task_budget: int | None = None
    betas: list[str] = field(default_factory=list)

    def given(self) -> list[str]:
        """The flags given, as they were spelled (for a refusal that names them)."""
        names = {"effort": "--effort", "thinking_budget": "--max-thinking-tokens", "thinking": "--thinking",
                 "thinking_display": "--thinking-display", "task_budget": "--task-budget", "betas": "--betas"}
        return [flag for key, flag in names.items() if getattr(self, key) not in (None, [])]


def claude_options(args: Any) -> ClaudeOptions:
    """Check the flags ``args`` carries and say what they mean; raises :class:`FlagError`. Any
    namespace will do: a flag its entry point does not have counts as not given."""
    def get(name: str) -> Any:
        return getattr(args, name, None)

    out = ClaudeOptions()
    for dest, why in REFUSED.items():
        if get(dest) is not None:
            raise FlagError(why)
    if get("include_hook_events") and get("dialect") != "claude":
        raise FlagError("--include-hook-events adds Claude Code's hook frames to its stream-json (cox -p … "
                        "--output-format stream-json); cox run's own events have no hook frames")
    home = "~"
    out.allow = _rules(get("allowed_tools"), "--allowedTools", home)
    out.deny = _rules(get("disallowed_tools"), "--disallowedTools", home)
    if out.allow:
        out.flags["permissions.allow"] = out.allow
    if out.deny:
        out.flags["permissions.deny"] = out.deny
    out.tools = _offered(get("tools"))
    mode = get("permission_mode")
    if get("skip_permissions"):
        if mode not in (None, "bypassPermissions"):
            raise FlagError(f"--dangerously-skip-permissions means --permission-mode bypassPermissions, which "
                            f"contradicts --permission-mode {mode}; pass one of them")
        mode = "bypassPermissions"
    if mode is not None:
        out.flags["permissions.mode"] = mode
    budget = get("max_budget_usd")
    if budget is not None:
        out.flags["budget.session_usd"] = _dollars(budget)
    out.system_prompt = _text_or_file(get("system_prompt"), get("system_prompt_file"), "--system-prompt")
    appended = [_text_or_file(get("append_system_prompt"), get("append_system_prompt_file"), "--append-system-prompt")]
    schema = get("json_schema")
    if schema is not None:
        from .structured import SchemaError, StructuredAnswer

        try:
            out.structured = StructuredAnswer.parse(schema)
        except SchemaError as exc:
            raise FlagError(str(exc)) from None
        appended.append(out.structured.instructions())
    out.append_system_prompt = "\n\n".join(a.strip() for a in appended if a.strip())
    fallback = (get("fallback_model") or "").strip()
    if get("fallback_model") is not None and not fallback:
        raise FlagError("--fallback-model is empty; name the model to go on with when the main one is unavailable")
    out.fallback_model = fallback
    out.request = _request_flags(get)
    out.session_id = _session_id(get("session_id"))
    if out.session_id is not None and (get("resume") or get("continue_")) and not get("fork_session"):
        raise FlagError("--session-id names a new session; with --resume/--continue it needs --fork-session "
                        "(the copy gets that id)")
    return out


def normalise_resume(args: Any) -> None:
    """``-r``/``--resume`` without an id is ``--continue`` (the latest session in this workspace)."""
    if getattr(args, "resume", None) == "":
        args.resume = None
        args.continue_ = True


def provider_for(config: Any, env: Mapping[str, str], script: str | None) -> str:
    """The provider family an alias resolves on: the configured one, else the one with a key
    (Anthropic first); a scripted run names Anthropic's models (it plays whatever is asked)."""
    kind = str(config.core.provider)
    if kind in ("anthropic", "openai"):
        return kind
    if kind == "openai-chat":
        return "openai"
    if script or config.core.script:
        return "anthropic"
    if env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"):
        return "anthropic"
    return "openai" if env.get("OPENAI_API_KEY") else "anthropic"


def concrete_model(name: str, config: Any, script: str | None, env: Mapping[str, str] | None = None) -> str:
    """``--model NAME`` as the model to send to: an alias resolved (see the module's docstring)."""
    from cox.actors.provider.catalog import resolve_alias

    return resolve_alias(name, provider_for(config, os.environ if env is None else env, script), config.models)


def check_fallback(fallback: str, main: str, provider_kind: str, overrides: Mapping[str, Any]) -> None:
    """A fallback the session could never use is refused at start-up, not found out under load."""
    from cox.actors.provider.catalog import describe

    if fallback == main:
        raise FlagError(f"--fallback-model {fallback} is the main model too; name another model to go on with")
    family = describe(fallback, dict(overrides)).provider
    if provider_kind in ("anthropic", "openai") and (family == "anthropic") != (provider_kind == "anthropic"):
        raise FlagError(f"--fallback-model {fallback} is not served by this session's provider ({provider_kind}); "
                        f"name a model of {provider_kind}")


def apply_request_flags(provider: Any, kind: str, flags: RequestFlags) -> None:
    """Set the request's knobs on the session's provider (``kind``: anthropic, openai, openai-chat,
    scripted; see the module's docstring); raises :class:`FlagError` for one its wire has no field
    for. The scripted model plays any request."""
    if kind == "scripted" or not flags.given():
        return
    if kind == "anthropic":
        if flags.effort:
            provider.effort = "max" if flags.effort == "xhigh" else flags.effort
        if flags.thinking == "disabled" or flags.thinking_budget == 0:
            provider.thinking_off = True
        elif flags.thinking_budget:
            provider.thinking_budget = flags.thinking_budget
        elif flags.thinking in ("adaptive", "enabled"):
            provider.thinking = True
        provider.thinking_display = flags.thinking_display
        provider.task_budget = flags.task_budget
        provider.betas = tuple(flags.betas)
        return
    anthropic_only = [f for f in ("--thinking-display", "--task-budget", "--betas") if f in flags.given()]
    if anthropic_only:
        raise FlagError(f"{', '.join(anthropic_only)}: only Anthropic's API takes this, and this session's provider "
                        f"is {kind}; leave it out, or use a Claude model with an Anthropic key")
    effort = OPENAI_EFFORT[flags.effort] if flags.effort else None
    if flags.thinking == "disabled" or flags.thinking_budget == 0:
        effort = effort or "low"  # OpenAI's reasoning models always reason: the least there is
    if kind == "openai":
        provider.reasoning_effort = effort
        if flags.thinking_budget:
            provider.thinking_budget = flags.thinking_budget
    elif kind == "openai-chat":
        provider.reasoning_effort = effort or ("high" if flags.thinking_budget else None)
    else:
        raise FlagError(f"{', '.join(flags.given())}: the {kind} provider takes no reasoning settings; leave them out")


def offered_tools(tools: dict[str, Any], offered: frozenset[str] | None) -> dict[str, Any]:
    """``tools`` cut down to what ``--tools`` offers (all of them when it was not given)."""
    if offered is None:
        return tools
    return {name: tool for name, tool in tools.items() if name in offered}


# --- the parts -----------------------------------------------------------------------------

def _split(values: Sequence[Sequence[str]] | None) -> list[str]:
    """Flag values as items: separated by commas or spaces outside parentheses, so
    ``"Bash(git status:*) Edit,Read"`` is three rules."""
    items: list[str] = []
    for group in values or []:
        for value in group:
            depth, word = 0, ""
            for ch in value:
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth = max(0, depth - 1)
                if depth == 0 and (ch == "," or ch.isspace()):
                    if word:
                        items.append(word)
                    word = ""
                    continue
                word += ch
            if word:
                items.append(word)
    return items


def _rules(values: Sequence[Sequence[str]] | None, flag: str, home: str) -> list[str]:
    from cox.policy.rules import RuleError, parse_rule

    rules = _split(values)
    if values is not None and not rules:
        raise FlagError(f"{flag} names no rule; pass rules such as Bash(git status:*) or Edit")
    for text in rules:
        try:
            parse_rule(text, flag, home=home, roots=["/"])
        except RuleError as exc:
            raise FlagError(str(exc)) from None
    return list(dict.fromkeys(rules))


def _offered(values: Sequence[Sequence[str]] | None) -> frozenset[str] | None:
    """The cox tool names ``--tools`` offers; None for all of them."""
    if values is None:
        return None
    from cox.actors.tools.agent import agent_tools
    from cox.actors.tools.registry import builtin_tools, deferred_builtin_tools
    from cox.actors.tools.spelling import COX_NAME

    names = _split(values)
    if names == [DEFAULT_TOOLS]:
        return None
    if DEFAULT_TOOLS in names:
        raise FlagError("--tools default means every built-in tool; it cannot be listed with other names")
    agents = frozenset(agent_tools({}))  # agent comes with agent_wait, agent_send, agent_close
    known = frozenset({*builtin_tools(), *agents, *deferred_builtin_tools(), *COX_NAME.values()})
    out: set[str] = set()
    for name in names:
        cox = COX_NAME.get(name, name)
        if cox not in known:
            raise FlagError(f"--tools: no built-in tool is called {name!r}; known: "
                            f"{', '.join(sorted(COX_NAME))}, or cox's {', '.join(sorted(known))}")
        out.update(agents if cox in agents else {cox})
    return frozenset(out)


def _text_or_file(text: str | None, path: str | None, flag: str) -> str:
    """``--X TEXT`` or ``--X-file FILE`` (not both): the text, or the file's (UTF-8, at most 1 MB)."""
    if path is None:
        return text or ""
    if text:
        raise FlagError(f"{flag} and {flag}-file both give it; pass one")
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as fh:
            got = fh.read(1_000_001)
    except (OSError, UnicodeDecodeError) as exc:
        raise FlagError(f"{flag}-file {path}: cannot be read ({getattr(exc, 'strerror', None) or exc}); "
                        "pass a readable UTF-8 text file") from None
    if len(got) > 1_000_000:
        raise FlagError(f"{flag}-file {path} is over 1 MB; a system prompt that long would not fit a request")
    return got


def _count(text: Any, flag: str, *, zero: bool) -> int:
    try:
        n = int(str(text).strip())
    except ValueError:
        raise FlagError(f"{flag} wants a whole number of tokens, got {text!r}") from None
    if n < 0 or (n == 0 and not zero):
        raise FlagError(f"{flag} must be more than 0, got {text!r}")
    return n


def _request_flags(get: Any) -> RequestFlags:
    out = RequestFlags(effort=get("effort"), thinking=get("thinking"), thinking_display=get("thinking_display"))
    if get("max_thinking_tokens") is not None:
        out.thinking_budget = _count(get("max_thinking_tokens"), "--max-thinking-tokens", zero=True)
    if out.thinking == "disabled" and out.thinking_budget:
        raise FlagError("--thinking disabled contradicts --max-thinking-tokens; pass one of them")
    if get("task_budget") is not None:
        out.task_budget = _count(get("task_budget"), "--task-budget", zero=False)
    betas = _split(get("betas"))
    if get("betas") is not None and not betas:
        raise FlagError("--betas names no beta; pass names such as context-1m-2025-08-07")
    for beta in betas:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", beta):
            raise FlagError(f"--betas {beta!r} is not a beta name (letters, digits, '.', '_' and '-')")
    out.betas = list(dict.fromkeys(betas))
    return out


def _dollars(text: Any) -> float:
    try:
        usd = float(str(text).strip().lstrip("$"))
    except ValueError:
        raise FlagError(f"--max-budget-usd wants an amount in US dollars (like 0.50), got {text!r}") from None
    if not usd > 0 or usd == float("inf"):
        raise FlagError(f"--max-budget-usd must be more than 0, got {text!r}")
    return usd


_UUID = lazyre.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _session_id(text: str | None) -> str | None:
    """A UUID's canonical spelling: what ``str(uuid.UUID(text))`` gives for the one spelling
    accepted, without importing uuid (and platform with it) for a flag most runs lack."""
    if text is None:
        return None
    if not _UUID.fullmatch(text.strip()):
        raise FlagError(f"--session-id wants a UUID (like 00000000-0000-0000-0000-000000000000), got {text!r}")
    return text.strip().lower()
