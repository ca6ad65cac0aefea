"""``cox exec PROMPT``: Codex's ``codex exec`` habits, on ``cox run``'s headless path.

Why a command of its own: scripts written for ``codex exec`` pass the prompt as an argument and
speak Codex's flags (``-c key=value``, ``-s``, ``-C``, ``--json``, ``--output-last-message``,
``--output-schema``, ``--skip-git-repo-check``, ``--full-auto``). This module only translates
them into what ``cox run`` reads (:func:`as_run`) and then runs ``commands.cmd_run``: one
headless path, one result contract, cox's own exit codes (0 ok · 1 error · 2 a call was denied ·
3 budget · 4 interrupted · 64 usage).

The sandbox flags, onto cox's two axes (the sandbox of commands, ``sandbox.mode``, and the
permission mode of every call; docs/exec.md has the table and the why):

- ``-s read-only``: the read-only sandbox and ``plan`` (cox's file tools run outside the sandbox,
  so only plan mode keeps them from writing, as Codex's read-only sandbox does);
- ``-s workspace-write``: the workspace-write sandbox and ``acceptEdits`` (edits in the workspace
  run; a command that is not read-only still needs an allow rule, as any headless cox run);
- ``-s danger-full-access``: no sandbox; the permission mode stays what your config says;
- ``--full-auto``: the workspace-write sandbox and ``bypassPermissions`` — nothing asks, and the
  sandbox (which fails closed without bubblewrap) and deny rules still hold: Codex's "sandboxed
  automatic execution";
- ``--dangerously-bypass-approvals-and-sandbox`` (``--yolo``): ``bypassPermissions`` and no
  sandbox; deny rules still hold.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .config_flags import add_config_flags

SANDBOXES = ("read-only", "workspace-write", "danger-full-access")
SANDBOX_MODES = {"read-only": "plan", "workspace-write": "acceptEdits", "danger-full-access": None}
"""The permission mode each ``-s`` brings (None: the configured one)."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("exec", help="run one prompt headless, with codex exec's flags")
    p.add_argument("prompt", nargs="?", help="the prompt; '-' (or none, with stdin not a terminal) reads stdin")
    p.add_argument("-c", "--config", dest="overrides", action="append", type=_pair, metavar="KEY=VALUE",
                   help="set any config key for this run (dotted, the value in TOML: -c core.max_turns=5, "
                        "-c 'permissions.deny=[\"Bash(curl:*)\"]'); repeatable, trusted like your config file")
    p.add_argument("--json", action="store_true", help="print cox's stream-json events, the result last")
    p.add_argument("-s", "--sandbox", choices=SANDBOXES,
                   help="read-only (plan mode), workspace-write (edits in the workspace run) or danger-full-access")
    p.add_argument("-C", "--cd", dest="cwd", metavar="DIR", help="the workspace folder (default: the current one)")
    p.add_argument("-m", "--model", help="the model for this run (overrides core.model)")
    p.add_argument("-o", "--output-last-message", metavar="FILE",
                   help="also write the final answer to FILE (replaced whole, even when empty)")
    p.add_argument("--output-schema", metavar="FILE",
                   help="the final answer must be JSON valid against the JSON Schema in FILE (sent back once when not)")
    p.add_argument("--skip-git-repo-check", action="store_true",
                   help="run outside a git repository too")
    p.add_argument("--full-auto", action="store_true",
                   help="nothing asks, inside the workspace-write sandbox (deny rules still hold)")
    p.add_argument("--dangerously-bypass-approvals-and-sandbox", "--yolo", dest="yolo", action="store_true",
                   help="nothing asks and commands run unsandboxed (deny rules still hold)")
    p.add_argument("--max-turns", type=_at_least_one, metavar="N", help="at most N model requests (N >= 1)")
    p.add_argument("--script", metavar="FILE", help="use the scripted model with this JSON script")
    p.add_argument("--verbose", action="store_true", help="also log each request, decision and call to stderr")
    add_config_flags(p)
    # What `cox run` reads and `cox exec` does not take.
    p.set_defaults(input_format="text", approve=None, permission_mode=None, mode=None, deep=False, worktree=None,
                   resume=None, continue_=False, fork_session=False, json_schema=None)


def _pair(text: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not key.strip():
        raise argparse.ArgumentTypeError(f"wants KEY=VALUE (like core.model=gpt-5), got {text!r}")
    return key.strip(), value


def _at_least_one(text: str) -> int:
    from .cli import at_least_one

    return at_least_one(text)


class Refusal(Exception):
    """``cox exec`` cannot start as asked; ``str()`` says why and what to do."""


def as_run(args: Any, stdin_tty: bool) -> None:
    """Turn ``cox exec``'s namespace into the one ``cox run`` reads (in place)."""
    args.output_format = "stream-json" if args.json else "text"
    if args.prompt is None:
        if stdin_tty:
            raise Refusal("nothing to do: pass the prompt (cox exec \"fix the failing test\"), or '-' to read it "
                          "from stdin")
        args.prompt = "-"
    if args.full_auto and args.yolo:
        raise Refusal("--full-auto and --dangerously-bypass-approvals-and-sandbox contradict each other; pick one")
    if (args.full_auto or args.yolo) and args.sandbox:
        raise Refusal(f"-s {args.sandbox} with {'--full-auto' if args.full_auto else '--dangerously-bypass-approvals-and-sandbox'}: "
                      "that flag chooses the sandbox itself; pass one of them")
    if args.full_auto:
        args.sandbox, args.permission_mode = "workspace-write", "bypassPermissions"
    elif args.yolo:
        args.sandbox, args.permission_mode = "danger-full-access", "bypassPermissions"
    elif args.sandbox:
        args.permission_mode = SANDBOX_MODES[args.sandbox]
    cwd = Path(args.cwd or ".").absolute()
    if args.cwd is not None and not cwd.is_dir():
        raise Refusal(f"-C {args.cwd} is not a folder")
    if not args.skip_git_repo_check:
        from cox.gitdirs import git_dirs

        if git_dirs(cwd.resolve()) is None:
            raise Refusal(f"{cwd} is not inside a git repository, and cox exec runs only in one (so what it changes "
                          "can be reviewed and undone); pass --skip-git-repo-check to run here anyway")
    if args.output_schema is not None:
        from .structured import SchemaError, StructuredAnswer

        try:
            StructuredAnswer.parse(args.output_schema, "--output-schema")
        except SchemaError as exc:
            raise Refusal(str(exc)) from None
        args.json_schema = args.output_schema  # the --json-schema mechanism (cox.surfaces.structured)
    if args.output_last_message is not None:
        target = Path(args.output_last_message).expanduser().absolute()
        if not target.parent.is_dir():
            raise Refusal(f"--output-last-message {args.output_last_message}: {target.parent} is not a folder")
        if target.is_dir():
            raise Refusal(f"--output-last-message {args.output_last_message} is a folder; name a file")


def run(args: Any, stopper: Any) -> int:
    """``cox exec``: translated, then ``cox run``'s whole path; a refusal ends in its result too."""
    from .commands import cmd_run, refuse_run
    from .headless import EXIT_ERROR, EXIT_OK, EXIT_USAGE

    try:
        as_run(args, sys.stdin.isatty())
    except Refusal as exc:
        args.output_format = "stream-json" if args.json else "text"
        return refuse_run(args, stopper, str(exc), EXIT_USAGE)
    failed: list[str] = []
    if args.output_last_message is not None:
        args.final = lambda res: _write_last(Path(args.output_last_message), res, failed)
    code = cmd_run(args, stopper)
    if failed:
        print(f"cox: {failed[0]}", file=sys.stderr)
        return EXIT_ERROR if code == EXIT_OK else int(code)
    return int(code)


def _write_last(path: Path, res: dict[str, Any] | None, failed: list[str]) -> None:
    """The final answer (the result's text; after a failure what the model had said), written
    whole with ``cox.atomic``: a reader sees the old file or the new one, never half."""
    from cox.atomic import write_atomic

    text = "" if res is None else str(res.get("partial_result", "") if res.get("is_error") else res.get("result", ""))
    try:
        write_atomic(path.expanduser().absolute(), text.encode(), new_mode=0o644)
    except OSError as exc:
        failed.append(f"--output-last-message: cannot write {path} ({exc.strerror or exc})")
