"""``cox mcp list`` through its own parser, against real files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from cox.surfaces import mcp_cli


def test_mcp_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"p": {"command": "srv", "args": ["-a"]}}}))
    parser = argparse.ArgumentParser()
    mcp_cli.add_parser(parser.add_subparsers(dest="cmd"))
    assert mcp_cli.run(parser.parse_args(["mcp", "list"])) == 0
    assert capsys.readouterr().out == "p\tproject\tstdio\tsrv -a\n"
