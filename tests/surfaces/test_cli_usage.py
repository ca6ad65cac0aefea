"""The command line a newcomer reads: a usage error names every sub-command, and every flag and
argument of every (sub-)command has a help text."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from cox.surfaces import cli

COMMANDS = ["run", "demo", "sessions", "doctor", "stats", "acp", "expand", "config", "policy", "apply-patch", "mcp",
            "hooks", "ext", "exec", "serve"]


def test_a_usage_error_names_every_command(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "frob"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == cli.EXIT_USAGE
    usage = p.stderr.split("cox: error:")[0]
    assert "{" + ",".join(COMMANDS) + "}" in usage.replace("\n", "").replace(" ", "")
    error = p.stderr.split("cox: error:")[1]
    assert all(f"'{name}'" in error for name in COMMANDS), error


def test_a_bad_flag_lists_them_too(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "--bogus"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == cli.EXIT_USAGE and "apply-patch,mcp" in p.stderr.replace("\n", "").replace(" ", "")


def test_the_bare_names_never_run() -> None:
    """Without the word on the command line the extra commands are bare names; with it, the real
    parsers are built (the bare ones cannot be reached)."""
    for name in ("config", "policy", "apply-patch", "mcp"):
        parser = cli._parser([name, "--help"])
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        assert sub.choices[name].add_help, name


def test_every_flag_and_argument_has_a_help_text() -> None:
    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction) and not (action.help or "").strip():
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(cli._parser(["--help"]), "cox")
    assert missing == []
