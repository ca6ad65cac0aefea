"""The TUI shows the settings the loader ignored as its first notices (they would be lost among
the lines printed to stderr before the screen is drawn)."""

from __future__ import annotations

from pathlib import Path

from tests.tui.tmux import Tmux


def test_the_tui_shows_ignored_project_settings(tmp_path: Path, cox_home: Path) -> None:
    (tmp_path / "ws" / ".cox").mkdir(parents=True)
    (tmp_path / "ws" / ".cox" / "config.toml").write_text('[core]\nprovider = "openai"\n')
    t = Tmux(tmp_path, cox_home, [{"text": "hi"}], cli=True, width=160)
    try:
        screen = t.wait("ignored core.provider")
        assert "config.toml:2: ignored core.provider" in screen.replace("\n", "")
    finally:
        t.close()
