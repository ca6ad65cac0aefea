"""``cox policy check`` and ``cox policy test``: ask the permission engine why, and pin rules in CI.

Why: when cox asks before ``git status && npm test`` a person wants to know which command was not
covered, and a team wants its rules to keep meaning what it thinks after an edit (Codex has
``codex execpolicy check`` and inline match/not_match examples for the same reasons).

- ``cox policy check [--config FILE] [--mode MODE] [--tool Bash] [--grant G]… -- LINE`` prints
  one JSON object: decision, reason, the rule that decided, the segments, whether the line was
  opaque. Exit 0 whatever the decision; 2 with one ``cox: …`` line for a bad rule or bad usage.
- ``cox policy test CASES.jsonl`` runs one case per line and ends with ``N passed, M failed``;
  exit 1 if any case failed (a malformed case fails too), 2 when the file cannot be read.

``policy check`` reads exactly the layers a session started in the workspace (``--cwd``, else
the current folder) would: cox's user and project config, Claude Code's user and project
settings, ``COX_*`` variables, through the same ``load_config`` and ``build_engine`` the session
uses; ``--config FILE`` adds one more cox config file on top, trusted like your own. Ignored
settings are printed to stderr as ``cox: warning: …``; the JSON names the files that were read.
``policy test`` stays hermetic for CI: its rules are the ``--config`` file's ``[permissions]``
table and each case's own ``config``, nothing from the machine it runs on.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from cox.protocol.types import ApprovalPolicy, PermissionMode, Risk, SandboxMode, ToolCall

__all__ = ["add_parser", "run"]

# --tool NAME → (cox tool, risk its calls carry). Bash's risk comes from classifying the line.
_TOOLS: dict[str, tuple[str, Risk]] = {
    "Bash": ("bash", Risk.EXEC), "Read": ("read", Risk.READ_ONLY), "Grep": ("grep", Risk.READ_ONLY),
    "Glob": ("glob", Risk.READ_ONLY), "Edit": ("edit", Risk.WRITE), "MultiEdit": ("edit", Risk.WRITE),
    "NotebookEdit": ("edit", Risk.WRITE), "Write": ("write", Risk.WRITE),
    "WebFetch": ("web_fetch", Risk.EXEC), "WebSearch": ("web_search", Risk.READ_ONLY),
    "CloudAgent": ("cloud_agent", Risk.DESTRUCTIVE), "Agent": ("agent", Risk.EXEC), "Task": ("agent", Risk.EXEC),
    "LS": ("ls", Risk.READ_ONLY), "TodoWrite": ("todo_write", Risk.READ_ONLY),
}
_BY_COX = {tool: (tool, risk) for tool, risk in _TOOLS.values()}
_BY_COX.update({"apply_patch": ("apply_patch", Risk.WRITE), "edit": ("edit", Risk.WRITE)})
_KINDS = ("allow", "ask", "deny")


class UsageError(Exception):
    """Bad usage or a bad rule: reported as one line, exit code 2."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``policy check`` and ``policy test`` on the ``cox`` command's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "policy", help="check permission rules: why cox would allow, ask or deny a call",
        description="Ask the permission engine about one call, or test a rule set against cases.")
    actions = parser.add_subparsers(dest="policy_command", metavar="{check,test}")
    actions.required = True

    check = actions.add_parser("check", help="decide one call and print the decision as JSON",
                               description="Decide one tool call: cox policy check -- 'git status && rm -rf x'")
    _common(check)
    check.add_argument("--mode", dest="policy_mode", choices=[m.value for m in PermissionMode],
                       help="permission mode (default: the config's, else default)")
    check.add_argument("--approval-policy", dest="policy_approval", choices=[a.value for a in ApprovalPolicy],
                       help="never turns an ask into a deny (default: the config's)")
    check.add_argument("--sandbox", dest="policy_sandbox", choices=[s.value for s in SandboxMode],
                       help="(default: the config's)")
    check.add_argument("--tool", dest="policy_tool", default="Bash",
                       help="Bash (default), Read, Edit, Write, Grep, Glob, WebFetch, mcp__server__tool …")
    check.add_argument("--risk", dest="policy_risk", choices=[r.value for r in Risk],
                       help="the risk the call carries (default: the tool's; bash lines are classified)")
    check.add_argument("--grant", dest="policy_grants", action="append", default=[], metavar="GRANT",
                       help="a session grant, as recorded ('npm test', 'Edit(/repo/a.py)'); repeatable")
    check.add_argument("policy_subject", nargs="+", metavar="COMMAND",
                       help="the command line (after --), or the path / URL / repository for --tool")

    test = actions.add_parser("test", help="check a rule set against cases, one JSON object per line",
                              description="Each line: {\"config\": {\"allow\": [...], \"ask\": [...], "
                              "\"deny\": [...]}, \"mode\": \"default\", \"tool\": \"Bash\", \"command\": "
                              "\"...\", \"grants\": [...], \"expected\": \"deny\"}")
    _common(test)
    test.add_argument("policy_cases", metavar="CASES.jsonl", help="one case a line: a call and the decision it must get")
    parser.set_defaults(func=run)
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", dest="policy_config", metavar="FILE",
                   help="check: one more config file on top of the session's layers; test: the rules "
                   "(its [permissions] table)")
    p.add_argument("--cwd", dest="policy_cwd", metavar="DIR",
                   help="the workspace whose layers a session would read (default: the current directory)")
    p.add_argument("--root", dest="policy_roots", action="append", metavar="DIR",
                   help="workspace root for relative paths (default: the workspace); repeatable")
    p.add_argument("--home", dest="policy_home", metavar="DIR", help="home directory for ~ (default: $HOME)")


def run(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``cox policy check|test``; returns the exit code."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        if args.policy_command == "check":
            return _check(args, out, err)
        if args.policy_command == "test":
            return _test(args, out)
        raise UsageError("expected `cox policy check` or `cox policy test`")
    except UsageError as exc:
        err.write(f"cox: policy {getattr(args, 'policy_command', '') or ''}: {exc}\n".replace(" :", ":"))
        return 2


# --- shared ---------------------------------------------------------------------------------


def _workspace(args: argparse.Namespace) -> Path:
    return Path(getattr(args, "policy_cwd", None) or getattr(args, "cwd", None) or Path.cwd()).resolve()


def _where(args: argparse.Namespace) -> tuple[Path, list[Path]]:
    home = Path(args.policy_home) if getattr(args, "policy_home", None) else Path.home()
    roots = [Path(r).absolute() for r in (getattr(args, "policy_roots", None) or [])] or [_workspace(args)]
    return home, roots


def session_engine(args: argparse.Namespace, err: TextIO) -> tuple[Any, Any]:
    """The effective config and the permission engine a session in the workspace would have
    (``load_config`` and ``build_engine``, the session's own), with ``--config`` on top."""
    from cox.config import ConfigError, load_config
    from cox.policy.rules import RuleError

    from .wiring import build_engine

    home, roots = _where(args)
    cwd = _workspace(args)
    extra: list[Path] = []
    if args.policy_config:
        extra_path = Path(args.policy_config)
        if not extra_path.is_file():
            raise UsageError(f"cannot read {extra_path}: no such file")
        extra.append(extra_path)
    try:
        config = load_config(cwd, extra=extra, user_home=home)
    except ConfigError as exc:
        raise UsageError(f"config error: {exc}") from None
    from cox.policy.sanitize import sanitize

    for warning in config.warnings:
        err.write(f"cox: warning: {sanitize(warning)}\n")
    try:
        return config, build_engine(config, cwd, home, roots=roots)
    except RuleError as exc:
        raise UsageError(str(exc)) from None


def read_permissions(path: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``[permissions]`` of one cox config file (read by the config loader, alone: no other
    layer), as the allow / ask / deny / mode mapping cases use, and each rule's ``file:line``."""
    from cox.config import ConfigError
    from cox.config.loader import load_file

    if not Path(path).is_file():
        raise UsageError(f"cannot read {path}: no such file")
    try:
        p = load_file(Path(path)).permissions
    except ConfigError as exc:
        raise UsageError(f"config error: {exc}") from None
    table = {"allow": list(p.allow), "ask": list(p.ask), "deny": list(p.deny), "mode": str(p.mode)}
    return table, dict(p.origins)


def _rules(config: Mapping[str, Any], kind: str, where: str) -> list[str]:
    value = config.get(kind, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: permissions.{kind} must be a list of strings")
    return value


def _engine(config: Mapping[str, Any], origins: Mapping[str, str], where: str, home: Path, roots: Sequence[Path]) -> Any:
    from cox.policy.permission import Engine
    from cox.policy.rules import RuleError

    mode = config.get("mode", PermissionMode.DEFAULT.value)
    try:
        mode = PermissionMode(mode)
    except ValueError:
        raise UsageError(f"{where}: unknown permissions.mode {mode!r}") from None
    try:
        return Engine.compile(_rules(config, "allow", where), _rules(config, "ask", where),
                              _rules(config, "deny", where), mode=mode, home=home, roots=list(roots),
                              origins=origins, origin=where)
    except RuleError as exc:
        raise UsageError(str(exc)) from None


def _call(tool: str, subject: str, risk: str | None) -> ToolCall:
    """A ToolCall for ``--tool``/``tool``, with the risk, segments and opacity the real tool gives."""
    if tool in _TOOLS:
        name, default = _TOOLS[tool]
    elif tool in _BY_COX:
        name, default = _BY_COX[tool]
    elif tool.startswith("mcp__"):
        name, default = tool, Risk.EXEC
    else:
        raise UsageError(f"unknown tool {tool!r}; try Bash, Read, Edit, Write, Grep, Glob, WebFetch or mcp__s__t")
    if name == "bash":
        from cox.policy.bash import classify

        c = classify(subject)
        return ToolCall(id="policy-check", name=name, input={"command": subject},
                        risk=Risk(risk) if risk else c.risk, subject=subject, segments=list(c.segments),
                        opaque=c.opaque)
    if name.startswith("mcp__"):
        subject = subject or name
    return ToolCall(id="policy-check", name=name, input={}, risk=Risk(risk) if risk else default, subject=subject)


# --- check ----------------------------------------------------------------------------------


def _check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    config, engine = session_engine(args, err)
    subject = " ".join(args.policy_subject)
    call = _call(args.policy_tool, subject, args.policy_risk)
    outcome = engine.decide(call, PermissionMode(args.policy_mode or config.permissions.mode),
                            ApprovalPolicy(args.policy_approval or config.permissions.approval_policy),
                            SandboxMode(args.policy_sandbox or config.sandbox.mode), list(args.policy_grants))
    report = {**outcome.to_dict(), "tool": call.name, "subject": subject, "risk": call.risk.value,
              "segments": list(call.segments or []), "opaque": call.opaque, "files": list(config.files)}
    if call.name == "bash":
        home, roots = _where(args)
        report["sandbox"] = _sandbox_section(call, engine, SandboxMode(args.policy_sandbox or config.sandbox.mode),
                                             home, roots)
    out.write(json.dumps(report, ensure_ascii=False) + "\n")
    return 0


def _sandbox_section(call: ToolCall, engine: Any, mode: SandboxMode, home: Path, roots: Sequence[Path]) -> dict[str, str]:
    """What the sandbox of this bash call would be (a line rated read-only gets a read-only file
    system): writable and read-only paths, masks, /tmp, network, user, removed variables."""
    from cox.actors.store.layout import cox_home
    from cox.actors.tools.shell_env import login_environment, sandbox_status
    from cox.policy.sandbox import describe_dict, explain, read_deny_patterns

    rows = explain(mode, roots=list(roots), cwd=roots[0] if roots else Path.cwd(), home=home, cox_home=cox_home(),
                   read_deny=read_deny_patterns(engine.deny), env=login_environment()[0],
                   frozen=call.risk is Risk.READ_ONLY, working=sandbox_status())
    return describe_dict(rows)


# --- test -----------------------------------------------------------------------------------


def _test(args: argparse.Namespace, out: TextIO) -> int:
    home, roots = _where(args)
    base: dict[str, Any] = {}
    base_origins: dict[str, str] = {}
    if args.policy_config:
        base, base_origins = read_permissions(args.policy_config)
    try:
        lines = Path(args.policy_cases).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read {args.policy_cases}: {exc.strerror or exc}") from None
    engines: dict[str, Any] = {}
    passed = failed = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        label = f"line {n}"
        try:
            case = json.loads(line)
            if not isinstance(case, dict):
                raise UsageError("a case must be a JSON object")
            label = str(case["id"]) if "id" in case else label
            got = _run_case(case, base, base_origins, f"{args.policy_cases}:{n}", home, roots, engines)
        except (UsageError, ValueError, KeyError, TypeError) as exc:
            failed += 1
            message = str(exc) if not isinstance(exc, KeyError) else f"missing key {exc}"
            out.write(f"FAIL {label}: bad case: {message}\n")
            continue
        expected, outcome, shown = got
        if outcome.kind == expected:
            passed += 1
            continue
        failed += 1
        out.write(f"FAIL {label}: {shown}\n  expected {expected}, got {outcome.kind}: {outcome.reason}\n")
    out.write(f"{passed} passed, {failed} failed\n")
    return 1 if failed else 0


def _run_case(case: dict[str, Any], base: Mapping[str, Any], base_origins: Mapping[str, str], where: str,
              home: Path, roots: Sequence[Path], engines: dict[str, Any]) -> tuple[str, Any, str]:
    expected = case["expected"]
    if expected not in _KINDS:
        raise UsageError(f"expected must be allow, ask or deny, not {expected!r}")
    config = case.get("config", base)
    if not isinstance(config, dict):
        raise UsageError("config must be an object with allow / ask / deny lists")
    origins = base_origins if "config" not in case else {}
    key = json.dumps(config, sort_keys=True)
    engine = engines.get(key)
    if engine is None:
        engine = engines[key] = _engine(config, origins, where, home, roots)
    tool = str(case.get("tool", "Bash"))
    subject = case.get("command", case.get("subject", ""))
    grants = case.get("grants", [])
    if not isinstance(subject, str) or not isinstance(grants, list) or not all(isinstance(g, str) for g in grants):
        raise UsageError("command/subject must be a string and grants a list of strings")
    mode = case.get("mode") or config.get("mode") or PermissionMode.DEFAULT.value
    call = _call(tool, subject, case.get("risk"))
    outcome = engine.decide(call, PermissionMode(mode), ApprovalPolicy(case.get("approval_policy", "on-request")),
                            SandboxMode(case.get("sandbox", SandboxMode.WORKSPACE_WRITE.value)), grants)
    shown = subject if tool in ("Bash", "bash") else f"{tool}({subject})"
    return expected, outcome, shown
