"""Make docs/web-light.png and docs/web-dark.png: the page of a real ``cox serve`` (scripted model)
in Debian's headless chromium, one finished agent turn with a tool row and one waiting for an
approval, in both themes.

    .venv/bin/python scripts/web_screenshots.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.web.browser import launch, missing  # noqa: E402
from tests.web.served import Served  # noqa: E402

FIRST = "What does this project do, in two sentences?"
SECOND = "Run the test suite."
AGENTS = {FIRST: [
    {"thinking": "The README should say. Let me read it before answering.", "signature": "s1",
     "tool_calls": [{"name": "read", "input": {"path": "README.md"}}]},
    {"text": "It is a tiny command-line tool that turns Markdown notes into a static site. The README calls it "
             "\"a weekend project\", and its tests cover the parser and the page templates.", "chunk": 12}]}
AGENTS[FIRST].append({"tool_calls": [{"name": "bash", "input": {"command": "python -m pytest -q"}}]})


def main() -> int:
    why = missing()
    if why:
        print(f"web_screenshots: {why}", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = root / "notes2site"
        ws.mkdir()
        (ws / "README.md").write_text("# notes2site\n\nA weekend project: Markdown notes in, a static site out.\n")
        path = root / "script.json"
        path.write_text(json.dumps({"model": "scripted", "replies": [], "agents": AGENTS}))
        served = Served(ws, path, root)
        try:
            with sync_playwright() as p:
                ctx = launch(p, root / "profile", color_scheme="light", viewport={"width": 1180, "height": 760},
                             device_scale_factor=1)
                page = ctx.new_page()
                page.goto(served.url + "/", wait_until="domcontentloaded")
                page.wait_for_selector("#model option", state="attached")
                page.fill("#prompt", FIRST)
                page.press("#prompt", "Enter")
                page.wait_for_selector(".usage")
                page.fill("#prompt", SECOND)
                page.press("#prompt", "Enter")
                page.wait_for_selector(".approval button")
                page.evaluate("document.activeElement.blur()")
                for theme in ("light", "dark"):
                    if page.evaluate("document.documentElement.dataset.theme") != theme:
                        page.click("#theme")
                    page.screenshot(path=str(ROOT / "docs" / f"web-{theme}.png"))
                page.click(".approval button[data-answer='no']")
                page.wait_for_selector(".usage >> nth=1")
                ctx.close()
        finally:
            served.stop()
    print("wrote docs/web-light.png and docs/web-dark.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
