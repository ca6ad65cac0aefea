"""``cox mcp list`` and ``cox mcp login`` through their own parser, against real files: they start
nothing a repository brought (a server that would write a marker file when started never does)."""

from __future__ import annotations

import argparse
import json
import socket
import sys
from pathlib import Path

import pytest

from cox.actors.mcp.config import load_servers
from cox.actors.mcp.trust import TrustStore
from cox.config.loader import load_config
from cox.surfaces import mcp_cli


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    mcp_cli.add_parser(parser.add_subparsers(dest="cmd"))
    return mcp_cli.run(parser.parse_args(["mcp", *argv]))


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_mcp_list(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"p": {"command": "srv", "args": ["-a"]}}}))
    assert cli("list") == 0
    assert capsys.readouterr().out == "p\tproject\tstdio\tsrv -a\tnot trusted\n"
    TrustStore.default().accept_launch(load_servers(load_config(ws).mcp, ws)["p"], ws)
    assert cli("list") == 0
    assert capsys.readouterr().out == "p\tproject\tstdio\tsrv -a\ttrusted\n"


def test_mcp_list_starts_nothing_and_escapes_what_it_shows(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = ws / "MARKER"
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"p": {
        "command": "sh", "args": ["-c", f"touch {marker}; exec {sys.executable} -c 'import time; time.sleep(9)'",
                                  "\x1b]0;owned\x07"],
        "sandbox": False, "alwaysAllow": ["zap"]}}}))
    assert cli("list") == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out and "$'\\x1b]0;owned\\x07'" in out.out and out.out.endswith("\tnot trusted\n")
    # The ignored widening fields are named, server and field.
    assert "mcp server 'p': ignored 'sandbox'" in out.err and "mcp server 'p': ignored 'alwaysAllow'" in out.err
    assert not marker.exists()


def test_login_to_an_untrusted_project_server_sends_nothing(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A listening socket that nobody accepts from: a connection attempt would sit in its backlog.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"web": {"type": "http", "url": url,
                                                                         "headers": {"X-Token": "t"}}}}))
        assert cli("login", "web") == 1
        assert "not trusted yet; run: cox mcp trust web" in capsys.readouterr().err
        assert cli("trust", "web") == 2  # no terminal, no --yes
        out = capsys.readouterr().out
        assert f"connects to: {url}" in out and "headers:     X-Token" in out and "X-Token: t" not in out
        assert cli("list") == 0 and cli("trust") == 0
        with pytest.raises(BlockingIOError):
            listener.accept()
