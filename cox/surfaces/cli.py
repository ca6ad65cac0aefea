"""The ``cox`` command. Sub-commands import what they need when they run, so ``cox run -p``
does not pay for the TUI, tree-sitter, MCP or a provider SDK it does not use."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from .claude_code.flags import PRINT, UsageProblem, add_dialect_flags, route, settle

EXTRA_COMMANDS = {"config": "config_cli", "policy": "policy_cli", "apply-patch": "patch_cli", "mcp": "mcp_cli",
                  "hooks": "hooks_cli", "ext": "ext_cli", "exec": "exec_cli", "serve": "web.cli"}
TEXT_COMMANDS = {"sessions", "doctor", "stats", "config", "policy", "mcp", "apply-patch", "hooks", "ext"}
"""Commands whose stdout on a terminal is sanitised as a whole: they show what config files, MCP
servers and sessions hold (a server named with escapes). Not ``run`` (its text output is
sanitised, its JSON lossless), ``expand`` (raw bytes when redirected), ``demo`` and the TUI or
``--plain`` (they sanitise what they draw; the TUI's own escapes must pass) or ``mcp serve``."""


PERMISSION_MODES = ["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]
PERMISSION_MODE_HELP = ("default: edits and commands that are not read-only ask (headless: are denied); "
                        "acceptEdits: edits in the workspace run too; plan: read-only; bypassPermissions: nothing asks "
                        "(deny rules and the sandbox still hold); dontAsk: whatever would ask is denied instead")
MODEL_HELP = "the model for this session (overrides core.model); `cox config show` prints the configured one"
CWD_HELP = "the workspace folder (default: the current one)"
VERBOSE_HELP = ("also log to stderr: each model request (tokens in and out, duration, cost), each permission "
                "decision (with its reason), each tool call's status and duration")

WORKTREE_HELP = ("work in the git worktree _worktrees/<repo>-NAME on branch NAME (made from a fresh "
                 "origin/<default> when missing); the main checkout stays readable, every edit lands in the worktree")

EXIT_USAGE = 64  # EX_USAGE: the command line is wrong (2 means "a call was denied" in cox run)


class Parser(argparse.ArgumentParser):
    """argparse with cox's exit code for a usage error (64, not argparse's 2); its sub-parsers
    are of this class too.

    ``add_argument`` checks a metavar against ``nargs`` with a fresh help formatter, whose
    constructor imports ``shutil`` (and with it zlib, bz2 and lzma) and asks the terminal for its
    width: that check reads no width and changes nothing in the formatter, so one made with a
    width is shared by every check. Help and usage are formatted as argparse formats them."""

    _checking = False
    _checkers: dict[Any, argparse.HelpFormatter] = {}

    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        self._checking = True
        try:
            return super().add_argument(*args, **kwargs)
        finally:
            self._checking = False

    def _get_formatter(self) -> argparse.HelpFormatter:
        if self._checking:  # the metavar check (see above)
            checker = self._checkers.get(self.formatter_class)
            if checker is None:
                checker = self._checkers[self.formatter_class] = self.formatter_class(prog="cox", width=80)  # type: ignore[call-arg]
            return checker
        return super()._get_formatter()


class Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Sub-commands whose parsers are built when the command line names one (:meth:`later`):
    ``cox run -p`` builds ``run``'s, not the other commands' (~3 ms). Every name is a choice from
    the start, so usage errors and the command list of ``--help`` read the same."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._later: dict[str, tuple[Callable[[argparse.ArgumentParser], None], dict[str, Any]]] = {}

    def later(self, name: str, build: Callable[[argparse.ArgumentParser], None], **kwargs: Any) -> None:
        """``build(add_parser(name, **kwargs))``, done when ``name`` is looked up."""
        if "help" in kwargs:
            self._choices_actions.append(self._ChoicesPseudoAction(name, (), kwargs.pop("help")))
        self._name_parser_map[name] = None
        self._later[name] = (build, kwargs)

    def built(self, name: str) -> argparse.ArgumentParser:
        """The parser of ``name``, built now if it was left for later."""
        pending = self._later.pop(name, None)
        if pending is not None:
            build, kwargs = pending
            kwargs.setdefault("prog", f"{self._prog_prefix} {name}")
            parser = self._parser_class(**kwargs)
            self._name_parser_map[name] = parser
            build(parser)
        return self._name_parser_map[name]  # type: ignore[no-any-return]

    def build_all(self) -> None:
        for name in list(self._later):
            self.built(name)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values and values[0] in self._later:
            self.built(values[0])
        super().__call__(parser, namespace, values, option_string)


def at_least_one(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    p = Parser(prog="cox", description="cox: a coding agent for the terminal, scripts and editors")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    p.add_argument("--permission-mode", choices=PERMISSION_MODES, help=PERMISSION_MODE_HELP)
    p.add_argument("--model", help=MODEL_HELP)
    p.add_argument("--mode", choices=["architect", "editor"], help="start in architect or editor mode")
    p.add_argument("-r", "--resume", nargs="?", const="", metavar="ID",
                   help="continue a stored session; without ID pick one of this workspace's from a list")
    p.add_argument("--continue", dest="continue_", action="store_true", help="continue the latest session here")
    p.add_argument("--fork-session", action="store_true",
                   help="with --resume/--continue: continue a copy under a new session id")
    p.add_argument("--cwd", metavar="DIR", help=CWD_HELP)
    p.add_argument("--worktree", metavar="NAME", help=WORKTREE_HELP)
    p.add_argument("--script", metavar="FILE", help="use the scripted model with this JSON script")
    p.add_argument("--plain", action="store_true", help="the line-mode surface (for terminals urwid cannot draw, "
                   "screen readers, and pipes)")
    p.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    # prog: what argparse would compute with a help formatter (the usage before the command)
    sub = cast(Commands, p.add_subparsers(dest="command", action=Commands, prog="cox"))
    sub.later("run", _run_flags, help="run one session headless (for scripts)")
    sub.later("demo", _demo_flags, help="run a full session offline on a bundled scripted model")
    sub.later("sessions", _sessions_flags, help="list and search stored sessions")
    sub.later("doctor", _no_flags, help="check keys, config, sandbox, git and tools on this machine")
    sub.later("stats", _stats_flags, help="spend and cache hits from the usage ledger")
    sub.later("acp", _acp_flags, help="an Agent Client Protocol agent on stdio (Zed, JetBrains, any ACP client)")
    sub.later("expand", _expand_flags, help="print an archived tool output")

    # These commands bring their own parsers; import them only when they may be asked for, so
    # `cox run -p` does not pay for them at start-up.
    # Otherwise each is a bare name, so a usage error lists every command (none of them can be
    # what runs: a command line that names one builds the real parsers).
    words = set(sys.argv[1:] if argv is None else argv)
    helping = bool(words & {"-h", "--help"})
    if helping or words & EXTRA_COMMANDS.keys():
        for module in EXTRA_COMMANDS.values():
            __import__(f"cox.surfaces.{module}", fromlist=["add_parser"]).add_parser(sub)
    else:
        for name in EXTRA_COMMANDS:
            sub.later(name, _no_flags, add_help=False)
    if helping:  # what a person reads (and tests walk) is every parser as built
        sub.build_all()
    return p


def _no_flags(parser: argparse.ArgumentParser) -> None:
    return None


def _run_flags(run: argparse.ArgumentParser) -> None:
    run.add_argument("-p", "--prompt", "--print", dest="prompt", nargs="?", const=PRINT,
                     help="the prompt; '-' reads it from stdin (bare -p/--print, as Claude Code's: the prompt follows)")
    run.add_argument("--output-format", choices=["text", "json", "stream-json"], default="text",
                     help="text (default): the answer on stdout, status on stderr; json: one result object; "
                          "stream-json: every event as a JSON line, the result last")
    run.add_argument("--input-format", choices=["text", "stream-json"], default="text",
                     help="stream-json: Submissions as JSON lines on stdin (answer approvals, interrupt)")
    run.add_argument("--approve", choices=["never", "on-request"], default=None,
                     help="never (default): a call the policy would ask about is denied")
    run.add_argument("--max-turns", type=at_least_one, metavar="N", help="at most N model requests (N >= 1)")
    run.add_argument("--mode", choices=["architect", "editor"],
                     help="architect: plan mode with main turns on the think tier (this flag is the price consent)")
    run.add_argument("--deep", action="store_true", help="the same as --mode architect")
    run.add_argument("--cwd", metavar="DIR", help=CWD_HELP)
    run.add_argument("--worktree", metavar="NAME", help=WORKTREE_HELP)
    run.add_argument("--script", metavar="FILE", help="use the scripted model with this JSON script")
    from .compat_flags import add_claude_flags
    from .config_flags import add_config_flags

    add_claude_flags(run)  # Claude Code's flags: --allowedTools, --model sonnet, -r, --json-schema …
    add_config_flags(run)  # --mcp-config, --settings, --setting-sources, --add-dir (cox exec's too)
    add_dialect_flags(run)  # Claude Code's dialect (cox.surfaces.claude_code): last, so it sees the others' flags


def _demo_flags(demo: argparse.ArgumentParser) -> None:
    demo.add_argument("--json", action="store_true", help="print stream-json events instead of a transcript")


def _sessions_flags(sessions: argparse.ArgumentParser) -> None:
    sessions.add_argument("--grep", metavar="TEXT", help="only sessions whose title or messages contain TEXT")
    sessions.add_argument("--limit", type=at_least_one, default=30, metavar="N", help="at most N sessions (default 30)")
    sessions.add_argument("--json", action="store_true", help="one JSON object per session (with the matching lines)")


def _stats_flags(stats: argparse.ArgumentParser) -> None:
    period = stats.add_mutually_exclusive_group()
    period.add_argument("--day", action="store_true", help="today, by model (the default)")
    period.add_argument("--month", action="store_true", help="this calendar month, by model")
    period.add_argument("--cache", action="store_true", help="prompt-cache hit ratio per session and model")
    stats.add_argument("--json", action="store_true", help="the same figures as JSON")


def _acp_flags(acp: argparse.ArgumentParser) -> None:
    for flag, helptext in (("--script", "use the scripted model with this JSON script"), ("--model", MODEL_HELP)):
        acp.add_argument(flag, default=argparse.SUPPRESS, help=helptext)
    acp.add_argument("--permission-mode", choices=PERMISSION_MODES, default=argparse.SUPPRESS, help=PERMISSION_MODE_HELP)


def _expand_flags(expand: argparse.ArgumentParser) -> None:
    expand.add_argument("id", help="the archive id a capped tool result names (expand #ID)")
    expand.add_argument("--lines", metavar="A-B", help="only lines A to B (1-based, inclusive)")


def main(argv: list[str] | None = None) -> int:
    # Before anything slow is imported: a SIGINT or SIGTERM from here on ends `cox run` with its
    # result line and exit 4 (other commands get the default handlers back once parsed). As the
    # process's entry (argv None) the handlers stay until the process exits, so a signal during
    # teardown cannot turn the result's exit code into -15.
    from . import startup
    from .stopper import Stopper

    if argv is None:
        startup.pause()  # the collector waits until the session is open (cox.surfaces.startup)
    stopper = Stopper()
    stopper.install()
    # cox's threads (provider stream, session, surface) hand each delta along; with CPython's
    # default 5 ms GIL switch interval a thread woken by a message waits up to 5 ms per hop while
    # the stream thread parses a large chunk. 1 ms keeps the first delta on stdout within a few ms.
    sys.setswitchinterval(0.001)
    # Every line cox writes to stderr is for a person, and many quote what a model, tool, MCP
    # server, config file or provider wrote: none may carry a terminal escape sequence.
    from cox.policy.sanitize import SanitizedStream

    stdout, stderr = sys.stdout, sys.stderr
    sys.stderr = SanitizedStream(stderr)
    try:
        words = route(sys.argv[1:] if argv is None else argv)  # `cox -p …`: Claude Code's dialect of `cox run`
        args = _parser(words).parse_args(words)
        if args.command in ("run", "exec"):  # headless: the result line and exit code survive signals
            if args.command == "run":
                from .commands import cmd_run

                try:
                    settle(args)
                except UsageProblem as exc:
                    print(f"cox: {exc}", file=sys.stderr)
                    return EXIT_USAGE

                code = cmd_run(args, stopper)
            else:
                from .exec_cli import run as cmd_exec

                code = cmd_exec(args, stopper)
            if argv is None:
                stopper.hold_until_exit()
            return code
        stopper.restore()
        if stopper.signum is not None:
            return 4
        if args.version:
            from cox import __version__

            print(f"cox {__version__}")
            return 0
        if args.command in TEXT_COMMANDS and getattr(args, "mcp_command", None) != "serve" and stdout.isatty():
            sys.stdout = SanitizedStream(stdout)
        if args.command is not None:  # the TUI's start-up ends when its session is open
            startup.over()
        return _dispatch(args)
    except KeyboardInterrupt:
        return 4
    except BrokenPipeError:
        return 1
    finally:
        startup.over()
        sys.stdout, sys.stderr = stdout, stderr
        if argv is not None:  # called in-process: leave the caller's handlers as they were
            stopper.restore()


def _dispatch(args: Any) -> int:
    cmd = args.command
    if cmd == "demo":
        from .demo.run import cmd_demo

        return cmd_demo(args)
    if cmd == "sessions":
        from .commands import cmd_sessions, reading_store

        return reading_store(cmd_sessions, args)
    if cmd == "stats":
        from .commands import reading_store
        from .stats import run as stats_run

        return reading_store(stats_run, args)
    if cmd == "doctor":
        from .doctor import run as doctor_run

        return doctor_run(args)
    if cmd == "acp":
        from .acp.main import run as acp_run

        return acp_run(args)
    if cmd == "expand":
        from .commands import cmd_expand, reading_store

        return reading_store(cmd_expand, args)
    if cmd == "config":
        from .config_cli import run as config_run

        return int(config_run(args))
    if cmd == "mcp":
        from .mcp_cli import run as mcp_run

        return int(mcp_run(args))
    if cmd == "hooks":
        from .hooks_cli import run as hooks_run

        return int(hooks_run(args))
    if cmd == "ext":
        from .ext_cli import run as ext_run

        return int(ext_run(args))
    if cmd == "apply-patch":
        from .patch_cli import run as patch_run

        return int(patch_run(args))
    if cmd == "policy":
        from .policy_cli import run as policy_run

        return int(policy_run(args))
    if cmd == "serve":
        from .web.cli import run as serve_run

        return int(serve_run(args))
    from .commands import cmd_interactive

    return cmd_interactive(args)


def cwd_of(args: Any) -> Path:
    return Path(getattr(args, "cwd", None) or os.getcwd()).resolve()


if __name__ == "__main__":
    sys.exit(main())
