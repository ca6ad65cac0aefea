"""``cox`` as the person can type it: the command cox names in the hints it prints (the demo's
"resume it:", a session's "resume with:").

``cox`` itself only when the ``cox`` on PATH is this installation; else the installation's own
script by its full path (``scripts/demo`` leaves ``.venv/bin`` off the person's PATH); else this
interpreter running the module (a checkout used without installing)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path


def cox_command() -> str:
    script = Path(sys.executable).parent / "cox"
    if script.is_file() and os.access(script, os.X_OK):
        found = shutil.which("cox")
        if found and Path(found).resolve() == script.resolve():
            return "cox"
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m cox.surfaces.cli"
