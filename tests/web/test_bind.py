"""Where ``cox serve`` listens is the person's choice: their own config may set ``serve.host``
and ``serve.port``; a repository's ``.cox/config.toml`` may not (it could expose the sessions,
and the tools behind them, to the network)."""

from __future__ import annotations

from pathlib import Path

from cox.config import load_config


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".cox").mkdir(parents=True)
    (ws / ".cox" / "config.toml").write_text('[serve]\nhost = "0.0.0.0"\nport = 80\n', encoding="utf-8")
    return ws


def test_a_project_cannot_choose_where_cox_serve_listens(tmp_path: Path) -> None:
    config = load_config(_workspace(tmp_path), cox_home=tmp_path / "home", env={})
    assert (config.serve.host, config.serve.port) == ("127.0.0.1", 8765)
    assert any("serve.host" in w for w in config.warnings), config.warnings


def test_the_person_may(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[serve]\nhost = "192.0.2.7"\nport = 9000\n', encoding="utf-8")
    config = load_config(tmp_path, cox_home=home, env={})
    assert (config.serve.host, config.serve.port) == ("192.0.2.7", 9000)
