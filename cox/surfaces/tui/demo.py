"""Open the TUI on a real session driven by a scripted model: what the tmux tests and the
captures under docs/ run. Everything but the model is real (actors, tools, permission engine,
store under $COX_HOME), so the screens are the ones a person sees.

    python -m cox.surfaces.tui.demo --script FILE --cwd DIR [--mode default|acceptEdits|plan] [--resume ID]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cox.actors.session.resume import rebuild
from cox.actors.store.layout import Layout, cox_home
from cox.actors.store.rollout import read_rollout


def main(argv: list[str] | None = None) -> int:
    from cox.actors.provider.scripted import ScriptedProvider
    from cox.actors.session.actor import SessionSettings
    from cox.actors.tools.agent import agent_tools
    from cox.actors.tools.registry import builtin_tools
    from cox.policy.permission import Engine
    from cox.protocol.types import ApprovalPolicy, PermissionMode, new_ulid

    from ..runtime import App
    from .app import run

    ap = argparse.ArgumentParser(prog="cox-tui-demo")
    ap.add_argument("--script", required=True)
    ap.add_argument("--cwd", required=True)
    ap.add_argument("--mode", default="default")
    ap.add_argument("--resume", default=None, help="a stored session id: its rollout is rebuilt and replayed")
    args = ap.parse_args(argv)
    cwd = Path(args.cwd).resolve()
    home = cox_home()
    layout = Layout(home)
    resumed = None
    if args.resume:
        read = read_rollout(layout.rollout(args.resume))
        resumed = rebuild(read.events)
        resumed.notices = read.notices
    provider = ScriptedProvider(args.script)
    engine = Engine.compile([], [], [], home=Path.home(), roots=[cwd])
    settings = SessionSettings(session_id=args.resume or new_ulid(), cwd=cwd, roots=[cwd], model=provider.model,
                               permission_mode=PermissionMode(args.mode), approval_policy=ApprovalPolicy.ON_REQUEST)
    app = App(home)
    try:
        handle = app.open_session(settings, provider, {**builtin_tools(), **agent_tools()}, engine, resumed)
        status = {"model": provider.model, "mode": args.mode, "cwd": str(cwd), "db": str(layout.db)}
        if args.resume:
            status["rollout"] = str(layout.rollout(args.resume))
        return run(handle, resumed=resumed, status=status)
    finally:
        app.close()


if __name__ == "__main__":
    sys.exit(main())
