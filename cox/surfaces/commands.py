"""The sub-commands that open sessions or read the store: ``run``, ``sessions``, ``expand``."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cox.actors.store.layout import Layout, cox_home
from cox.slim import dataclass

from . import startup
from .cli import EXIT_USAGE
from .home import home_problem

if TYPE_CHECKING:
    from cox.actors.tools.base import BaseTool


def fail(message: str, code: int = 1) -> int:
    print(f"cox: {message}", file=sys.stderr)
    return code


def _load_config(cwd: Path, home: Path, flags: dict[str, Any], extra: Any = None) -> Any:
    from cox.config import load_config
    from cox.policy.sanitize import sanitize

    more: dict[str, Any] = {}
    if extra is not None:  # the command line's -c, --settings and --setting-sources (config_flags)
        more = {"overrides": extra.overrides, "settings": extra.settings, "claude_sources": extra.sources}
    config = load_config(cwd, cox_home=home, flags=flags, **more)
    for w in config.warnings:  # ignored settings: also shown in the TUI's first notices
        print(f"cox: warning: {sanitize(w)}", file=sys.stderr)
    return config


class Refused(Exception):
    """The session cannot start; ``str()`` is the message, ``code`` the exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Prepared:
    home: Path
    layout: Layout
    cwd: Path
    config: Any
    provider: Any
    engine: Any
    settings: Any
    resumed: Any
    mcp: Any = None
    """The session's ``McpManager`` once ``session_tools`` started its MCP servers."""
    worktree: Any = None
    """The ``cox.worktrees.Worktree`` the session runs in (``--worktree``, or a resumed one's)."""
    skills: Any = None
    """The session's ``cox.agents.skills.Skills`` once ``session_tools`` found them."""
    extra_mcp: dict[str, Any] = field(default_factory=dict)
    """MCP servers besides the configured ones, by name (Claude Code's dialect: the SDK client's
    in-process servers); they win a name clash."""
    flags: Any = None
    """The ``config_flags.ConfigFlags`` of the command line (``--mcp-config``, ``--add-dir`` …)."""
    structured: Any = None
    """The ``structured.StructuredAnswer`` of ``--json-schema`` / ``--output-schema``, or None."""
    options: Any = None
    """The ``compat_flags.ClaudeOptions`` of the command line (the tools offered, prompts, …)."""


def price_line(model: str, overrides: dict[str, Any]) -> str:
    from cox.actors.provider.catalog import describe

    info = describe(model, overrides)
    if not info.priced:
        return f"{model} (no price in the catalog)"
    return f"{model} (${info.input:g} in / ${info.output:g} out per million tokens)"


def prepare(args: Any, *, approval_default: str, headless: bool = False) -> Prepared:
    """Everything a surface needs to open a session from its command line: config, provider,
    permission engine, settings and (for --resume / --continue) the rebuilt history."""
    from cox.config import ConfigError

    from . import logs
    from .compat_flags import (
        FlagError,
        apply_request_flags,
        check_fallback,
        claude_options,
        concrete_model,
        normalise_resume,
    )
    from .wiring import SetupError, build_engine, choose_provider, settings_from

    normalise_resume(args)
    try:
        options = claude_options(args)
    except FlagError as exc:
        raise Refused(str(exc), EXIT_USAGE) from None
    cwd = Path(getattr(args, "cwd", None) or os.getcwd()).resolve()
    if not cwd.is_dir():
        raise Refused(f"--cwd {cwd} is not a folder")
    home = cox_home()
    problem = home_problem(home)
    if problem:
        raise Refused(problem)
    layout = Layout(home)
    logs.setup(layout.logs, verbose=getattr(args, "verbose", False))
    wt = None
    if getattr(args, "worktree", None) or getattr(args, "resume", None):
        from .worktree_session import Refusal, enter

        try:
            wt = enter(args, layout, cwd)
        except Refusal as exc:
            raise Refused(str(exc)) from None
        if wt is not None:
            cwd = wt.path  # the session works there; the main checkout is its read-only second root
    from .config_flags import read_config_flags

    try:
        extra = read_config_flags(args, cwd, cox_home=home)
    except FlagError as exc:
        raise Refused(str(exc), EXIT_USAGE) from None
    roots = [wt.path, wt.repo] if wt is not None else None
    if extra.add_dirs:  # more writable roots (they join the settings' writable roots below)
        roots = [*(roots or [cwd]), *extra.add_dirs]
    flags: dict[str, Any] = dict(options.flags)  # permissions.mode, budget.session_usd, the flags' rules
    if getattr(args, "model", None):
        flags["core.model"] = args.model
    if getattr(args, "max_turns", None):
        flags["core.max_turns"] = args.max_turns
    if getattr(args, "sandbox", None):
        flags["sandbox.mode"] = args.sandbox
    try:
        config = _load_config(cwd, home, flags, extra)
    except ConfigError as exc:
        usage = str(exc).startswith("flag:-c")  # the command line is wrong, not a file
        raise Refused(f"config error: {exc}", EXIT_USAGE if usage else 1) from None
    _name_flag_rules(config, options)
    from cox.policy.sanitize import sanitize

    for warning in extra.warnings:  # as the config's: on stderr, and among the TUI's first notices
        print(f"cox: warning: {sanitize(warning)}", file=sys.stderr)
    config.warnings.extend(extra.warnings)
    script = getattr(args, "script", None)
    model = getattr(args, "model", None)
    if model:  # an alias (sonnet, opus-4-1 …) becomes the model it stands for on the provider with a key
        model = config.core.model = concrete_model(model, config, script)
    try:
        chosen = choose_provider(config, script, model=model)
        engine = build_engine(config, cwd, Path.home(), roots=roots)
        fallback = concrete_model(options.fallback_model, config, script) if options.fallback_model else ""
        if fallback:
            check_fallback(fallback, chosen.model, chosen.kind, config.models)
        apply_request_flags(chosen.provider, chosen.kind, options.request)
    except FlagError as exc:
        raise Refused(str(exc), EXIT_USAGE) from None
    except SetupError as exc:
        raise Refused(str(exc)) from None
    except ValueError as exc:  # a malformed permission rule names itself and its file
        raise Refused(f"config error: {exc}") from None
    resumed = None
    session_id = options.session_id
    if getattr(args, "fork_session", False) and not (getattr(args, "resume", None) or getattr(args, "continue_", False)):
        raise Refused("--fork-session copies a stored session: pass it with --resume ID or --continue", EXIT_USAGE)
    if getattr(args, "resume", None) or getattr(args, "continue_", False):
        from cox.actors.session.resume import rebuild
        from cox.actors.store.rollout import read_rollout

        from .claude_code.ids import uuid_to_ulid

        session_id = uuid_to_ulid(args.resume) if args.resume else _latest_session(layout, cwd)  # either spelling
        if session_id is None:
            raise Refused(f"no stored session for {cwd}; `cox sessions` lists them")
        if not layout.rollout(session_id).is_file():
            raise Refused(f"no session {session_id}; `cox sessions` lists them")
        session_id = _claim(layout, session_id, bool(getattr(args, "fork_session", False)), options.session_id)
        read = read_rollout(layout.rollout(session_id))
        resumed = rebuild(read.events)
        resumed.notices = read.notices
    elif session_id is not None:
        _claim_new(layout, session_id)
    settings = settings_from(config, cwd, session_id=session_id, model=chosen.model,
                             approval_policy=getattr(args, "approve", None) or approval_default, home=Path.home(),
                             roots=roots)
    settings.writable_roots.extend(extra.add_dirs)
    settings.cheap_model = chosen.cheap_model
    settings.think_model = chosen.think_model
    settings.system_prompt = options.system_prompt
    settings.append_system_prompt = options.append_system_prompt
    settings.fallback_model = fallback
    mode_flag = getattr(args, "mode", None) or ("architect" if getattr(args, "deep", False) else None)
    settings.preset = mode_flag or config.core.mode
    if settings.preset == "architect" and mode_flag is None and headless:
        raise Refused(f"core.mode = architect (from {config.source('core.mode')}) runs main turns on the think tier, "
                      f"{price_line(chosen.think_model, settings.model_overrides)}; a headless run needs that "
                      "consent on its command line: pass --mode architect (or --deep)", EXIT_USAGE)
    if wt is not None:
        from .worktree_session import announce, write_record

        write_record(layout, settings.session_id, wt)
        config.warnings.extend(announce(wt, layout, settings.session_id))
    return Prepared(home, layout, cwd, config, chosen.provider, engine, settings, resumed, worktree=wt, flags=extra,
                    structured=options.structured, options=options)


def _name_flag_rules(config: Any, options: Any) -> None:
    """Rules from ``--allowedTools`` / ``--disallowedTools`` name that flag as their origin (a
    denial says which rule decided, and where it came from)."""
    origins = config.permissions.origins
    for flag, rules in (("--allowedTools", options.allow), ("--disallowedTools", options.deny)):
        for rule in rules:
            if str(origins.get(rule, "flag")).startswith("flag"):
                origins[rule] = flag


def _may_exist(path: Path) -> bool:
    """False only when ``path`` is surely absent: one that cannot be looked at (a folder the user
    may not enter) is read, so that reading it says what is wrong."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True
    return True


def session_tools(app: Any, prep: Prepared, *,
                  interactive: bool = False) -> tuple[dict[str, BaseTool], dict[str, BaseTool]]:
    """The built-in tools, plus those of the configured MCP servers (started under the app's
    ``mcp`` supervisor; a server that fails is a warning and an absence) and the two resource
    tools (``list_mcp_resources``, ``read_mcp_resource``). The MCP SDK is imported only when a
    server is configured, so plain runs do not pay for it. ``interactive``: a person can answer
    a server's elicitation (TUI, --plain), so the client declares it; ``cox run -p`` does not.

    The first model request does not wait for a server whose tool listing is cached
    (``cox.actors.mcp.cache``): its tools are built from the cache, and it starts in the
    background (even the SDK import happens there); a call of one of its tools waits for it. Only
    a server never listed before is waited for, at most ``mcp.startup_timeout_s``.

    Returns ``(tools, deferred)``: MCP tools past ``mcp.max_loaded_tools`` are deferred, found
    and loaded through ``tool_search`` (``cox.actors.tools.deferral``)."""
    tools = _tools()
    tools.update(session_skills(prep))
    if prep.settings.max_agent_depth > 0:  # the agent tools, with the types this folder has
        from cox.actors.tools.registry import agent_tools
        from cox.agents.defs import load_agents

        s = prep.settings
        agents = load_agents(prep.cwd, s.home, cox_home=s.cox_home or prep.home, parent_model=s.model,
                             models=s.model_overrides)
        from cox.policy.sanitize import sanitize

        for warning in agents.warnings:  # as the config's: on stderr, and among the TUI's first notices
            print(f"cox: warning: {sanitize(warning)}", file=sys.stderr)
        prep.config.warnings.extend(agents.warnings)
        tools.update(agent_tools({name: d.description for name, d in agents.defs.items()}))
    from cox.actors.mcp import server_files

    extra = prep.flags
    servers = dict(prep.extra_mcp)
    if (prep.config.mcp.servers or (extra and extra.mcp)
            or any(_may_exist(f) for f in server_files(prep.cwd, Path.home()))):  # else none is declared anywhere
        from cox.actors.mcp.config import load_servers

        servers = {**load_servers(prep.config.mcp, prep.cwd, flagged=extra.mcp if extra else None,
                                  strict=bool(extra and extra.strict_mcp)), **prep.extra_mcp}
    builtin_deferred: dict[str, BaseTool] = {}
    if prep.settings.max_agent_depth > 0:  # work graphs of agents, behind tool_search
        from cox.actors.tools.registry import deferred_builtin_tools

        builtin_deferred = deferred_builtin_tools()
    offered = prep.options.tools if prep.options is not None else None
    if offered is not None:  # --tools: only the built-in tools it names (tool_search with what it finds)
        from .compat_flags import offered_tools

        search = tools.get("tool_search")
        tools, builtin_deferred = offered_tools(tools, offered), offered_tools(builtin_deferred, offered)
        if search is not None and (servers or builtin_deferred):
            tools["tool_search"] = search
    if not servers:
        return tools, builtin_deferred
    from cox.actors.mcp import resource_tools, start_mcp
    from cox.actors.tools.deferral import split_deferred
    from cox.policy.sandbox import SandboxPolicy

    s = prep.settings
    from cox.policy.paths import write_roots

    sandbox = SandboxPolicy(s.sandbox_mode, tuple([*write_roots(s.roots), *s.writable_roots]), True)
    manager = start_mcp(app.root, servers, timeout_s=prep.config.mcp.timeout_s,
                        startup_timeout_s=prep.config.mcp.startup_timeout_s, cwd=prep.cwd, sandbox=sandbox,
                        log_dir=prep.layout.logs, elicitation=interactive, background=True)
    prep.mcp = manager
    app.on_close.append(manager.cancel_launch)
    manager.wait_settled(cached_ok=True)
    if interactive and sys.stdin.isatty() and sys.stderr.isatty():  # a person who can use a browser
        from .mcp_login import login_at_start

        login_at_start(manager)
    for notice in manager.notices():  # ignored fields, untrusted, failed and pending servers
        print(f"cox: warning: {notice}", file=sys.stderr)
    s.mcp_servers = manager.state()
    loaded, deferred = split_deferred({**tools, **resource_tools(manager), **manager.tools()},
                                      prep.config.mcp.max_loaded_tools)
    return loaded, {**deferred, **builtin_deferred}


def session_skills(prep: Prepared) -> dict[str, BaseTool]:
    """The skills of this user and workspace (``cox.agents.skills``), kept on ``prep`` for the
    surfaces where the person names one, and the ``skill`` tool when there is any."""
    from cox.actors.tools.registry import skill_tools
    from cox.agents.skills import load_skills
    from cox.policy.sanitize import sanitize

    s = prep.settings
    guard = prep.engine.read_guard() if hasattr(prep.engine, "read_guard") else None
    prep.skills = load_skills(prep.cwd, s.home, cox_home=s.cox_home or prep.home, reads=guard)
    for warning in prep.skills.warnings:  # as the agents': on stderr, and among the TUI's first notices
        print(f"cox: warning: {sanitize(warning)}", file=sys.stderr)
    prep.config.warnings.extend(prep.skills.warnings)
    return skill_tools(prep.skills)


def named_skill(prompt: str | None, prep: Prepared) -> str | None:
    """``-p "/name args"`` for a skill: the prompt with its instructions loaded into the turn."""
    from cox.agents.skills import user_named

    if prompt is None:
        return None
    text, why = user_named(prompt, prep.skills)
    if why is not None:
        raise Refused(f"{why}; the prompt was not sent", EXIT_USAGE)
    return text if text is not None else prompt


def session_hooks(prep: Prepared) -> Any:
    """The session's hooks (``cox.hooks``: the user's, Claude Code's user settings, a project's
    once trusted), or None when none is in effect; what was skipped is a warning on stderr."""
    from cox.hooks import open_hooks

    try:
        hooks, warnings = open_hooks(prep.config.hooks, settings=prep.settings,
                                     transcript_path=prep.layout.rollout(prep.settings.session_id),
                                     user_config=str(prep.home / "config.toml"),
                                     flag_settings=prep.flags.settings_hooks if prep.flags else (),
                                     claude_sources=prep.flags.sources if prep.flags else None)
    except Exception as exc:  # a bug or an unreadable disk: the session opens without hooks, and says so
        hooks, warnings = None, [f"hooks could not be loaded ({exc}); the session runs without them"]
    from cox.policy.sanitize import sanitize

    for warning in warnings:  # as the config's: on stderr, and among the TUI's first notices
        print(f"cox: warning: {sanitize(warning)}", file=sys.stderr)
    prep.config.warnings.extend(warnings)
    return hooks


def read_prompt(args: Any) -> str | None:
    """The prompt ``-p`` names (``-`` reads stdin); an empty or blank one is a usage error."""
    prompt: str | None = args.prompt
    if prompt == "-":
        if args.input_format == "stream-json":
            raise Refused("-p - reads the prompt from stdin, which --input-format stream-json also needs; pick one",
                          EXIT_USAGE)
        prompt = sys.stdin.read()
        if not prompt.strip():
            raise Refused("-p - read an empty prompt from stdin; pipe the prompt in, or pass -p TEXT", EXIT_USAGE)
    elif prompt is not None and not prompt.strip():
        raise Refused("the prompt is empty; pass -p TEXT (or -p - to read it from stdin)", EXIT_USAGE)
    if prompt is None and args.input_format != "stream-json":
        raise Refused("nothing to do: pass -p TEXT (or -p - for stdin, or --input-format stream-json)", EXIT_USAGE)
    return prompt


def cmd_run(args: Any, stopper: Any = None) -> int:
    """``cox run``: every way it ends, start-up failures and signals during start-up included,
    ends in one result (``headless.refusal`` for those that never reached the session)."""
    from .stopper import StartupInterrupted, Stopper

    stopper = stopper or Stopper()
    apps: list[Any] = []
    try:
        try:
            stopper.starting()
            return _run_session(args, stopper, apps)
        except StartupInterrupted as exc:
            return _refuse(args, stopper, f"interrupted by {exc} before the session started", "interrupted")
    finally:
        _close(apps)


def refuse_run(args: Any, stopper: Any, message: str, code: int = EXIT_USAGE) -> int:
    """A headless run refused before its start-up began (``cox exec``'s own checks): the same
    ``cox: …`` line and result as a refusal of ``cox run``'s start-up."""
    from .stopper import Stopper

    return _refuse(args, stopper or Stopper(), message, "usage" if code == EXIT_USAGE else "error")


def _refuse(args: Any, stopper: Any, message: str, stop: str) -> int:
    from .headless import refusal

    stopper.settle()
    resumed = getattr(args, "resume", None) or None
    if getattr(args, "dialect", "cox") == "claude":
        from .claude_code.driver import refusal as claude_refusal

        code = claude_refusal(args, message, stop, resumed)
    else:
        code = refusal(args.output_format, message, stop=stop, session_id=resumed)
    stopper.exit_code = code
    return code


def _run_session(args: Any, stopper: Any, apps: list[Any]) -> int:
    prep: Prepared | None = None
    dialect: Any = None
    try:
        prompt = read_prompt(args)
        prep = prepare(args, approval_default="never", headless=True)
        if getattr(args, "dialect", "cox") == "claude":  # Claude Code's wire: reads stdin from here on
            from .claude_code.driver import ClaudeDialect

            dialect = ClaudeDialect(args, prep)
        from .runtime import App

        apps.append(App(prep.home))
        app = apps[0]
        store_ready(app)
        tools, deferred = session_tools(app, prep)
        model = None
        hooks = session_hooks(prep)
        commands = None
        if dialect is not None or args.input_format == "stream-json" or (prompt or "").lstrip().startswith("/"):
            commands = session_commands(prep, tools, hooks)  # -p "/name", stdin's "/name" lines, the listings
        allow = None
        if prompt is not None and prompt.lstrip().startswith("/"):
            prompt, model, allow = slash_turn(prompt, commands, prep)
        if dialect is not None:
            dialect.set_commands(commands, prep.skills)
        handle = app.open_session(prep.settings, prep.provider, tools, prep.engine, prep.resumed,
                                  hooks=dialect.hooks(hooks) if dialect is not None else hooks, deferred=deferred)
        startup.over()
        if model and not getattr(args, "model", None):  # the command's front matter; --model wins
            from cox.protocol import messages as m

            handle.submit(m.SetModel(model=model))
    except Refused as exc:
        return _refuse(args, stopper, str(exc), "usage" if exc.code == EXIT_USAGE else "error")
    except Exception as exc:  # the store could not start (a home the cheap checks let through), or a bug
        return _refuse(args, stopper, _startup_failure(exc, prep), "error")
    from . import headless

    home = prep.home
    slash = None
    if commands is not None and args.input_format == "stream-json":
        slash = _stdin_slash(commands, prep, keep_model=bool(getattr(args, "model", None)))
    return headless.run(handle, prompt, fmt=args.output_format, input_format=args.input_format,
                        verbose=args.verbose, stopper=stopper,
                        explain=lambda: home_problem(home, deep=True), dialect=dialect,
                        structured=prep.structured, final=getattr(args, "final", None), slash=slash,
                        allow=allow)


def _stdin_slash(commands: Any, prep: Prepared, *, keep_model: bool) -> Any:
    """A ``/name args`` line from stdin, expanded as ``-p "/name args"`` is (``slash_turn``);
    one that cannot be is ``headless.TurnRefused``: that turn's error result, and the run goes on."""
    from .headless import TurnRefused

    def expand(line: str) -> Any:
        try:
            got = slash_turn(line, commands, prep)
        except Refused as exc:
            raise TurnRefused(str(exc), "usage" if exc.code == EXIT_USAGE else "error") from None
        return got._replace(model=None) if keep_model else got

    return expand


def session_commands(prep: Prepared, tools: dict[str, BaseTool], hooks: Any = None) -> Any:
    """The session's custom commands, MCP prompts and ``/init`` (``cox.commands``). A command's
    ``!`…``` line that needs approval is refused until a surface sets its runner's ``ask``."""
    from cox.commands.turns import open_commands

    commands = open_commands(prep.cwd, prep.settings, prep.engine, tools, mcp=prep.mcp, hooks=hooks,
                             skills=getattr(prep, "skills", None))
    from cox.policy.sanitize import sanitize

    for skipped in commands.catalog.skipped:  # as the config's: on stderr, and among the TUI's first notices
        warning = f"command /{skipped.name} ({skipped.source}) skipped: {skipped.reason}"
        print(f"cox: warning: {sanitize(warning)}", file=sys.stderr)
        prep.config.warnings.append(warning)
    return commands


def slash_turn(line: str, commands: Any, prep: Prepared) -> Any:
    """``/name args`` typed for a headless run (``-p``, or a line on stdin): its
    ``cox.commands.turns.Expanded`` (the user turn, the model the command's front matter names,
    the allow rules the turn pre-approves). A custom command, an MCP prompt or ``/init``
    (``commands``: ``session_commands``; a command a skill shares a name with is not among them),
    else a skill (``named_skill``); a line that names none goes to the model as typed. One that cannot be expanded raises ``Refused``: a ``-p`` run is
    refused, a stdin line's turn ends in that error."""
    from cox.agents.skills import named_grants
    from cox.commands.expand import CommandError
    from cox.commands.turns import Expanded

    try:
        got = commands.expand(line)
    except CommandError as exc:
        raise Refused(f"the command was not sent: {exc}") from None
    if got is not None:
        return got
    text = named_skill(line, prep)
    return Expanded(text, None, named_grants(line, prep.skills)) if text is not None and text != line else Expanded(line)


def store_ready(app: Any) -> None:
    """Wait until the store has opened cox.db and the rollout folder (an ask it answers only once
    started: a ``sync`` of no session writes nothing). A store that could not start raises here,
    at start-up, instead of taking the session down with it after the run began."""
    from cox.actors.store.messages import Sync

    store = app.store()
    if store is None:
        raise RuntimeError("the store did not start")
    store.ask(Sync(""), timeout=30)


def _startup_failure(exc: Exception, prep: Prepared | None) -> str:
    """One line for an exception at start-up: the home's problem when it has one (found by a
    deeper look than start-up takes), else the exception, with the details in the log."""
    problem = home_problem(prep.home if prep else cox_home(), deep=True)
    if problem:
        return problem
    import logging

    logging.getLogger("cox.run").exception("start-up failed")
    return f"the session could not start: {exc} (details in {Layout(cox_home()).logs / 'cox.log'})"


def _close(apps: list[Any]) -> None:
    """Stop what start-up started, even when it was cut short before ``App`` was whole."""
    try:
        if apps:
            apps[0].close()
        elif "pykka" in sys.modules:
            from cox.supervisors import shutdown

            shutdown(timeout=10.0)
    except Exception:  # the result is out; a failing teardown must not change the exit code
        import logging

        logging.getLogger("cox.run").exception("teardown failed")


def cmd_interactive(args: Any) -> int:
    from . import plain

    if getattr(args, "resume", None) == "":  # -r without an id: pick the session first (resume_pick)
        from .resume_pick import choose

        startup.over()  # a person picks at leisure
        code = choose(args)
        if code is not None:
            return code
    try:
        prep = prepare(args, approval_default="on-request")
    except Refused as exc:
        return fail(str(exc), exc.code)
    from .runtime import App

    try:
        app = App(prep.home)
    except Exception as exc:
        return fail(_startup_failure(exc, prep))
    try:
        try:
            store_ready(app)
            tools, deferred = session_tools(app, prep, interactive=True)
            hooks = session_hooks(prep)
            handle = app.open_session(prep.settings, prep.provider, tools, prep.engine, prep.resumed,
                                      hooks=hooks, deferred=deferred)
        except Exception as exc:
            return fail(_startup_failure(exc, prep))
        startup.over()
        think = price_line(prep.settings.think_model, prep.settings.model_overrides)
        from_config = prep.settings.preset == "architect" and not getattr(args, "mode", None)
        commands = session_commands(prep, tools, hooks)
        if getattr(args, "plain", False) or not (sys.stdin.isatty() and sys.stdout.isatty()):
            return plain.run(handle, resumed=prep.resumed, think_price=think, architect_from_config=from_config,
                             worktree=prep.worktree, skills=prep.skills, commands=commands)
        from cox.actors.provider.catalog import describe

        from .tui import app as tui

        s = prep.settings
        asked = s.main_model(s.preset)
        return tui.run(handle, resumed=prep.resumed, think_price=think, architect_from_config=from_config,
                       notices=prep.config.warnings,
                       status={"model": asked, "mode": s.permission_mode.value, "cwd": str(prep.cwd),
                               "commands": commands,
                               **({"mcp_state": prep.mcp.state} if prep.mcp is not None else {}),
                               **({"skills": prep.skills} if prep.skills is not None else {}),
                               "context_window": describe(asked, s.model_overrides).context_window,
                               "tier": "think" if s.preset == "architect" else "code",
                               **({"worktree": prep.worktree} if prep.worktree is not None else {}),
                               **({"rollout": str(prep.layout.rollout(s.session_id))} if prep.resumed else {})})
    finally:
        app.close()


def _tools() -> dict[str, BaseTool]:
    from cox.actors.tools.registry import builtin_tools

    return builtin_tools()


def _claim(layout: Layout, session_id: str, fork: bool, new_id: str | None = None) -> str:
    """One writer per session: hold the session's lock for this process, or refuse naming the
    live holder; ``--fork-session`` continues a copy under a new id instead (never refused), or
    under ``new_id`` (``--session-id``) when that id is free."""
    from cox.actors.store import lock

    if fork:
        from cox.actors.store.fork import fork_rollout

        if new_id is not None:
            _claim_new(layout, new_id)
        session_id = fork_rollout(layout, session_id, new_id)
    try:
        lock.hold(layout.sessions, session_id)
    except lock.SessionBusy as exc:
        raise Refused(str(exc)) from None
    return session_id


def _claim_new(layout: Layout, session_id: str) -> None:
    """``--session-id``: hold the new id's lock, then refuse it when a session has it already
    (stored, indexed, or running in another process): two sessions never share one rollout."""
    from cox.actors.store import lock

    try:
        lock.hold(layout.sessions, session_id)
    except lock.SessionBusy:
        raise Refused(f"--session-id {session_id}: a running session has that id; pass a new UUID", EXIT_USAGE) from None
    if layout.rollout(session_id).exists() or _indexed(layout, session_id):
        lock.release(layout.sessions, session_id)
        raise Refused(f"--session-id {session_id}: a stored session has that id already; pass a new UUID, or "
                      f"--resume {session_id} to continue it", EXIT_USAGE)


def _indexed(layout: Layout, session_id: str) -> bool:
    from cox.actors.store import db

    return db.read(layout.db, lambda conn: conn.execute("SELECT 1 FROM sessions WHERE id = ?",
                                                        (session_id,)).fetchone() is not None, False)


def _latest_session(layout: Layout, cwd: Path) -> str | None:
    from cox.actors.store import db

    none: list[dict[str, Any]] = []
    rows = db.read(layout.db, lambda conn: db.list_sessions(conn, limit=1000), none)  # a surface only reads
    return next((str(row["id"]) for row in rows if row["cwd"] == str(cwd)), None)


def reading_store(command: Any, args: Any) -> int:
    """Run ``sessions``, ``stats`` or ``expand``: a broken home (a file, read-only, a cox.db that
    is not a database) is the one line ``home_problem`` says and exit 1, never a traceback."""
    import sqlite3

    home = cox_home()
    problem = home_problem(home, create=False)
    if problem:
        return fail(problem)
    try:
        return int(command(args))
    except (sqlite3.Error, OSError) as exc:
        return fail(home_problem(home, create=False, deep=True) or f"cannot read {home}: {exc}")


def cmd_sessions(args: Any) -> int:
    """The stored sessions, newest first; a subagent's session (its index row names a parent)
    is listed under its parent, indented, not as a session of its own. ``--limit`` counts the
    person's sessions (the trees), ``--grep`` keeps a tree where any of its sessions matches."""
    from cox.actors.store import db
    from cox.policy.redact import scrub
    from cox.policy.sanitize import sanitize

    layout = Layout(cox_home())

    Listing = tuple[list[dict[str, Any]], dict[str, str]]

    def query(conn: Any) -> Listing:
        parents = _parents(conn)
        return db.list_sessions(conn, limit=args.limit if not (args.grep or parents) else 100_000), parents

    nothing: Listing = ([], {})
    rows, parents = db.read(layout.db, query, nothing)
    from .worktree_session import read_record

    known = {row["id"] for row in rows}
    children: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: (r["created_at"], r["id"])):  # a parent's agents in the order they started
        parent = parents.get(row["id"])
        if parent is not None and parent in known:
            children.setdefault(parent, []).append(row)

    def tree(row: dict[str, Any], depth: int) -> list[tuple[dict[str, Any], int]]:
        out = [(row, depth)]
        for child in children.get(row["id"], []):
            out += tree(child, depth + 1)
        return out

    shown = 0
    for top in rows:
        if parents.get(top["id"]) in known:
            continue  # listed under its parent
        nodes = tree(top, 0)
        found: dict[str, list[str]] = {}
        if args.grep:
            for row, _ in nodes:
                hits = _grep_rollout(layout.rollout(row["id"]), args.grep)
                if hits or args.grep.lower() in row["title"].lower():
                    found[row["id"]] = hits
            if not found:
                continue
        shown += 1
        for row, depth in nodes:
            wt = read_record(layout, row["id"])  # a worktree session: marked ⧉ <name>
            hits = [scrub(hit)[0] for hit in found.get(row["id"], [])]  # the rollout keeps user text as typed
            title = scrub(row["title"])[0]
            if args.json:
                print(json.dumps({**row, "title": title, "matches": hits, "worktree": wt["path"] if wt else None,
                                  "parent_id": parents.get(row["id"])}))
                continue
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row["updated_at"]))
            title = sanitize(title.replace("\n", " "))[:60]
            mark = f"⧉ {sanitize(wt['name'])}  " if wt else ""
            indent = "  " * (depth - 1) + "  └ " if depth else ""
            where = "" if depth else f"  {sanitize(row['cwd'])}"  # an agent works where its parent does (or in ⧉)
            print(f"{indent}{sanitize(row['id'])}  {when}  {row['turns']:>3} turns{where}  {mark}{title}")
            for hit in hits[:3]:
                print(f"{'  ' * depth}    … {sanitize(hit)}")
        if shown >= args.limit:
            break
    if not shown:
        print("no matching sessions" if args.grep else "no sessions yet")
    return 0


def _parents(conn: Any) -> dict[str, str]:
    """Each subagent session's parent id (an index made before subagents has no such column)."""
    import sqlite3

    try:
        found = conn.execute("SELECT id, parent_id FROM sessions WHERE parent_id IS NOT NULL AND parent_id != ''")
        return {str(i): str(p) for i, p in found.fetchall()}
    except sqlite3.OperationalError as exc:
        if "no such column" in str(exc):
            return {}
        raise


def _grep_rollout(path: Path, needle: str) -> list[str]:
    from cox.actors.store.rollout import read_rollout

    if not path.is_file():
        return []
    q = needle.lower()
    hits: list[str] = []
    text_parts: list[str] = []
    for ev in read_rollout(path).events:
        kind = ev.get("type")
        if kind == "user_message":
            text = str(ev.get("text", ""))
        elif kind == "assistant_message":
            text = " ".join(str(b.get("text", "")) for b in ev.get("content", []) if b.get("type") == "text")
        elif kind == "tool_call_done":
            text = str(ev.get("result", {}).get("visible", ""))
        else:
            continue
        text_parts.append(text)
        for line in text.splitlines():
            if q in line.lower():
                hits.append(line.strip()[:160])
    return hits


def cmd_expand(args: Any) -> int:
    """Print an archived tool output: its exact bytes when stdout is a file or a pipe (expand is
    lossless), and sanitised text on a terminal (the output is a tool's, and may carry escape
    sequences that would act on the terminal)."""
    import sqlite3

    from cox.actors.store import archive, db

    layout = Layout(cox_home())
    archive_id = args.id.lstrip("#")
    if not layout.db.exists():
        return fail(f"no archived output with id {archive_id}")
    conn = db.connect_ro(layout.db)
    try:
        data = archive.get(conn, layout.archive, archive_id)
    except archive.ArchiveMissing as exc:
        return fail(str(exc.args[0]))
    except sqlite3.Error as exc:
        if not db.missing_table(exc):
            raise
        return fail(f"no archived output with id {archive_id}")
    finally:
        conn.close()
    if args.lines:
        try:
            a, _, b = args.lines.partition("-")
            start, end = int(a), int(b or a)
        except ValueError:
            return fail(f"--lines wants A-B (like 3-80), got {args.lines!r}", EXIT_USAGE)
        parts = data.split(b"\n")
        lines = [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        data = b"".join(lines[max(start, 1) - 1 : end])
    if not sys.stdout.isatty():  # a file or a pipe: the exact bytes
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    from cox.policy.sanitize import sanitize

    text = sanitize(data.decode("utf-8", "replace"))
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
