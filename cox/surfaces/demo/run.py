"""Run the demo: one reused workspace, the bundled script, the real runtime end to end.

Everything real happens — actors, the permission engine, files written, a bash process, the
rollout under ``$COX_HOME`` — only the model is scripted. Its permissions: edits inside the
workspace are accepted (acceptEdits), ``Bash(python3:*)`` is allowed, anything else that would
ask is denied (the headless default), which is how the demo's ``rm -rf`` gets refused.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import stat
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


def workspace_path(home: Path) -> Path:
    """One folder per person and cox home, reused by every run: ``$TMPDIR/cox-demo-<uid>-<hash>``
    (the hash keeps two homes — two test runs — apart)."""
    tag = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()).resolve() / f"cox-demo-{os.getuid()}-{tag}"


def _ours(path: Path) -> bool:
    """A real folder of ours, not a link or another user's folder planted under the known name."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def make_workspace(home: Path) -> Path:
    """The demo's workspace, emptied: the same folder each run, so runs leave one folder behind,
    not one each. If the name is taken by something not ours, a fresh private folder instead."""
    ws = workspace_path(home)
    try:
        os.mkdir(ws, 0o700)
    except FileExistsError:
        if not _ours(ws):
            ws = Path(tempfile.mkdtemp(prefix="cox-demo-")).resolve()
        else:
            os.chmod(ws, 0o700)
            for child in ws.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
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
    from ..invocation import cox_command
    from ..runtime import App
    from ..wiring import settings_from

    home = cox_home()
    layout = Layout(home)
    logs.setup(layout.logs)
    ws = make_workspace(home)
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
    where = sys.stderr if args.json else out
    print(f"\nworkspace: {ws}  (the next cox demo empties and reuses it)", file=where)
    print(f"rollout:   {rollout}", file=where)
    print(f"resume it: {cox_command()} run --cwd {shlex.quote(str(ws))} --resume {settings.session_id} -p '…'  "
          "(needs a model key)", file=where)
    # The demo's one denial is part of the show; anything else is a real failure.
    return 0 if code in (0, 2) else code
