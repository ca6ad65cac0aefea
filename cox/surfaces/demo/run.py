"""Run the demo: a temporary workspace, the bundled script, the real runtime end to end.

Everything real happens — actors, the permission engine, files written, a bash process, the
rollout under ``$COX_HOME`` — only the model is scripted. Its permissions: edits inside the
workspace are accepted (acceptEdits), ``Bash(python3:*)`` is allowed, anything else that would
ask is denied (the headless default), which is how the demo's ``rm -rf`` gets refused.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from cox.actors.store.layout import Layout, cox_home

SCRIPT = Path(__file__).with_name("script.json")
PROMPT = "Read notes.md and todo.txt, then create hello.py as the notes describe and run it."
DEMO_ALLOW = ["Bash(python3:*)"]

FILES = {
    "notes.md": "# Notes\n\n- Greet whoever is named on the command line, or the world.\n- Keep it to one file.\n",
    "todo.txt": "[ ] hello.py\n[ ] tidy build/\n",
    "build/old.txt": "stale build output\n",
}


def make_workspace() -> Path:
    ws = Path(tempfile.mkdtemp(prefix="cox-demo-")).resolve()
    for rel, text in FILES.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return ws


def cmd_demo(args: Any) -> int:
    from cox.actors.provider.scripted import ScriptedProvider
    from cox.actors.tools.registry import builtin_tools
    from cox.config import ConfigError, load_config
    from cox.policy.permission import Engine

    from .. import headless, logs
    from ..runtime import App
    from ..wiring import settings_from

    home = cox_home()
    layout = Layout(home)
    logs.setup(layout.logs)
    ws = make_workspace()
    try:
        config = load_config(ws, cox_home=home, flags={"permissions.mode": "acceptEdits"})
    except ConfigError as exc:
        print(f"cox: config error: {exc}", file=sys.stderr)
        return 2
    p = config.permissions
    engine = Engine.compile([*p.allow, *DEMO_ALLOW], p.ask, p.deny, home=Path.home(), roots=[ws],
                            origins={**p.origins, **{r: "cox demo" for r in DEMO_ALLOW}})
    provider = ScriptedProvider(SCRIPT)
    settings = settings_from(config, ws, model=provider.model, approval_policy="never")
    out = sys.stdout
    if not args.json:
        out.write(f"cox demo — a scripted model, real tools, in {ws}\n")
        out.write("permissions: edits accepted in the workspace, Bash(python3:*) allowed, everything else denied\n")
    app = App(home)
    try:
        handle = app.open_session(settings, provider, builtin_tools(), engine)
        code = headless.run(handle, PROMPT, fmt="stream-json" if args.json else "transcript")
    finally:
        app.close()
    rollout = layout.rollout(settings.session_id)
    print(f"\nworkspace: {ws}", file=sys.stderr if args.json else out)
    print(f"rollout:   {rollout}", file=sys.stderr if args.json else out)
    print(f"resume it: cox run --resume {settings.session_id} -p '…'  (needs a model key)",
          file=sys.stderr if args.json else out)
    # The demo's one denial is part of the show; anything else is a real failure.
    return 0 if code in (0, 2) else code
