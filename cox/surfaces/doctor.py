"""``cox doctor``: what works on this machine and what to do about what does not.

One row per check, ``ok`` / ``warn`` / ``fail``, with the fix in the row. Exit 1 when a check
failed (cox cannot run a session), 0 otherwise — warnings are things cox works around.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from cox.actors.store.layout import cox_home


def checks(cwd: Path, env: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    env = dict(os.environ) if env is None else env
    rows: list[tuple[str, str, str]] = []
    home = cox_home(env)
    from .home import home_problem

    problem = home_problem(home, deep=True)  # the doctor may take the time to read cox.db
    rows.append(("fail", "cox home", problem) if problem else ("ok", "cox home", str(home)))
    from cox.config import ConfigError, load_config
    from cox.policy.sanitize import sanitize

    config: Any = None
    try:
        config = load_config(cwd, cox_home=home, env=env)
        files = ", ".join(str(f) for f in config.files) or "defaults only"
        rows.append(("ok", "config", files))
        for w in config.warnings:  # an ignored setting (a project's, or a Claude file cox could not use)
            rows.append(("warn", "config", sanitize(w)))
    except ConfigError as exc:
        rows.append(("fail", "config", str(exc)))
    if config is not None:
        rows.append(_permission_row(config, cwd, env))
    keys = [k for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY") if env.get(k)]
    if keys:
        rows.append(("ok", "model keys", ", ".join(keys) + " set"))
    else:
        rows.append(("warn", "model keys", "none set: set ANTHROPIC_API_KEY or OPENAI_API_KEY (cox demo runs without)"))
    if config is not None:
        from cox.actors.provider.catalog import lookup
        from cox.protocol.record import to_plain

        model = config.core.model
        overrides = {k: to_plain(v) for k, v in config.models.items()}
        info = lookup(model, overrides)
        if info is None or not info.priced:
            rows.append(("warn", "model price", f"{model} has no price in the catalog: its cost shows as $0"))
        else:
            rows.append(("ok", "model price", f"{model} is priced"))
    rows += _sandbox_rows(config, cwd, env)
    from cox.actors.store.checkpoints import Checkpointer

    ok, why = Checkpointer.available()
    rows.append(("ok" if ok else "warn", "checkpoints", why if ok else f"{why}: install git for /rewind of code"))
    if config is not None:
        rows += _mcp_rows(config, cwd, home)
        rows += _lsp_rows(config, env)
    rg = shutil.which("rg")
    rows.append(("ok" if rg else "warn", "ripgrep", rg or "not found: grep uses the slower built-in search"))
    return rows


def _lsp_rows(config: Any, env: dict[str, str]) -> list[tuple[str, str, str]]:
    """One ``lsp <language>`` row per language: the server the tools would start, or what is missing."""
    from cox.actors.lsp.servers import status
    from cox.policy.sanitize import sanitize

    rows = []
    for language, what, found in status(config.lsp.servers, env.get("PATH", os.defpath)):
        if found:
            rows.append(("ok", f"lsp {language}", sanitize(what)))
        else:
            rows.append(("warn", f"lsp {language}", sanitize(f"{what}: diagnostics, definition, references and "
                         f"rename_symbol are unavailable for {language}; install it or set "
                         f"[lsp.servers.{language}] in your config")))
    return rows


def _permission_row(config: Any, cwd: Path, env: dict[str, str]) -> tuple[str, str, str]:
    """The rules compiled exactly as a session compiles them (``wiring.build_engine``): one that
    does not parse stops every session at start-up, so it is a failure here too, with the fix."""
    from .wiring import build_engine

    p = config.permissions
    try:
        build_engine(config, cwd, Path(env.get("HOME") or Path.home()))
    except ValueError as exc:
        return ("fail", "permissions", f"{exc}; no session starts until it is fixed or removed (the grammar is "
                                       "Tool or Tool(specifier), e.g. Bash(npm test:*); `cox policy check -- "
                                       "'CMD'` tries a rule set)")
    return ("ok", "permissions", f"mode {p.mode}; {len(p.allow)} allow, {len(p.ask)} ask, {len(p.deny)} deny rules")


def _sandbox_rows(config: Any, cwd: Path, env: dict[str, str]) -> list[tuple[str, str, str]]:
    """Whether the sandbox works, then what a command of a session here would run with."""
    from cox.actors.tools.shell_env import sandbox_status
    from cox.policy.sandbox import env_keep_of, explain, fail_closed_sentence, read_deny_patterns
    from cox.protocol.types import SandboxMode

    ok, why = sandbox_status()
    mode = SandboxMode(config.sandbox.mode) if config is not None else SandboxMode.WORKSPACE_WRITE
    if mode is SandboxMode.DANGER_FULL_ACCESS:
        first = ("warn", "sandbox", "none: sandbox.mode is danger-full-access, commands run with your own rights")
    elif ok:
        first = ("ok", "sandbox", why)
    else:
        first = ("warn", "sandbox", "shell commands and stdio MCP servers are " + fail_closed_sentence(why))
    home = Path(env.get("HOME") or Path.home())
    deny: list[str] = list(config.permissions.deny) if config is not None else []
    from cox.policy.rules import RuleError, parse_rule

    rules = []
    for text in deny:
        try:
            rules.append(parse_rule(text, "config", home=str(home), roots=[str(cwd)]))
        except RuleError:
            pass  # the permissions row reports a bad rule
    keep, ignored = env_keep_of(config, cwd) if config is not None else ([], None)
    from cox.actors.tools.shell_env import login_environment

    box = config.sandbox if config is not None else None
    described = explain(mode, roots=[cwd], cwd=cwd, home=home, cox_home=cox_home(env),
                        read_deny=read_deny_patterns(rules), env=login_environment()[0], env_keep=keep,
                        writable_roots=[Path(p).expanduser() for p in (box.writable_roots if box else [])],
                        network=bool(box.network) if box else False, working=(ok, why))
    rows = [first] + [("ok", f"sandbox {what}", text) for what, text in described if what != "sandbox"]
    if ignored:
        rows.append(("warn", "sandbox env", ignored))
    return rows


def _mcp_rows(config: Any, cwd: Path, home: Path) -> list[tuple[str, str, str]]:
    """Start each configured MCP server once (as a session would: under its sandbox) and report
    how it came up. A project server whose launch is not trusted is not started: its row says
    so, and what to run."""
    from cox.actors.mcp.config import load_servers

    servers = load_servers(config.mcp, cwd)
    if not servers:
        return []
    from cox.actors.mcp import start_mcp
    from cox.actors.mcp.state import not_trusted_sentence
    from cox.actors.mcp.trust import TRUST_FILE, TrustStore
    from cox.policy.sanitize import sanitize

    from .mcp_cli import session_sandbox
    from .runtime import App

    rows = [("warn", f"mcp {sanitize(spec.name)}", sanitize(w)) for spec in servers.values() for w in spec.warnings]
    app = App(home)
    try:
        manager = start_mcp(app.root, servers, timeout_s=config.mcp.timeout_s,
                            startup_timeout_s=config.mcp.startup_timeout_s, cwd=cwd,
                            sandbox=session_sandbox(config, cwd), trust=TrustStore(home / TRUST_FILE))
        manager.wait_settled()
        tools = manager.tools()
        pending = manager.pending()
        for row in manager.state():
            name = row["name"]
            label = f"mcp {sanitize(name)}"
            if name in manager.untrusted:
                source = sanitize(servers[name].source)
                rows.append(("warn", label, f"{not_trusted_sentence(name)} (from {source}; not started)"))
                continue
            status = sanitize(str(row.get("status", "")))
            count = sum(1 for t in tools if t.startswith(f"mcp__{name}__"))
            ok = status == "ready"
            waiting = len(pending.get(name, {}))
            text = status + (f", {count} tools" if ok else "")
            fix = f"run: cox mcp trust {sanitize(name)} (it shows each tool first)"
            if ok and waiting and waiting >= count:
                text = f"{status}, but none of its {count} tools reaches the model: all are pending trust; {fix}"
            elif ok and waiting:
                text += f" ({waiting} pending trust; {fix})"
            rows.append(("ok" if ok and not waiting else "warn", label, text))
        return rows + _mcp_auth_rows(servers, home, {r["name"]: str(r.get("status", "")) for r in manager.state()})
    finally:
        app.close()


def _mcp_auth_rows(servers: dict[str, Any], home: Path, states: dict[str, str]) -> list[tuple[str, str, str]]:
    """One ``mcp auth <name>`` row per HTTP server: ``ok (expires in 3h)``, ``expired`` or ``none``
    (read after the servers were started above, so a token that could be refreshed was)."""
    from cox.actors.mcp.auth import login_hint
    from cox.actors.mcp.tokens import TokenStore, auth_status

    store = TokenStore(home)
    rows = []
    for name, spec in servers.items():
        if not spec.url:
            continue
        text = auth_status(store.load(name, spec.url))
        wanted = login_hint(name) in states.get(name, "")
        rows.append(("warn" if wanted or text == "expired" else "ok", f"mcp auth {name}", text))
    return rows


def run(args: Any) -> int:
    cwd = Path(getattr(args, "cwd", None) or os.getcwd()).resolve()
    rows = checks(cwd)
    width = max(len(name) for _, name, _ in rows)
    for status, name, text in rows:
        print(f"{status:<4}  {name:<{width}}  {text}")
    from cox import __version__

    print(f"python {sys.version.split()[0]} · cox {__version__}")
    return 1 if any(s == "fail" for s, _, _ in rows) else 0
