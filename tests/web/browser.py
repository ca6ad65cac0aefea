"""Debian's chromium, headless, driven by Playwright over the DevTools protocol: never a browser
download, a fresh profile each time, nothing that reaches the network on its own."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        return "Debian's chromium is not installed (scripts/_env installs it: apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


def launch(playwright: Any, profile: Path, **kw: Any) -> Any:
    """A persistent context on a fresh profile folder (local storage survives a reload)."""
    exe = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    return playwright.chromium.launch_persistent_context(str(profile), executable_path=exe, headless=True, args=ARGS,
                                                         **kw)
