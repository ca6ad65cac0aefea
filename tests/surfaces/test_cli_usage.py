"""The command line a newcomer reads: a usage error names every sub-command, and every flag and
argument of every (sub-)command has a help text."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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


# `cox run -p` builds the parser of `run` alone (cli.Commands), and its argument checks make no
# help formatter that asks the terminal for its width (cli.Parser): what a person reads must be
# what argparse prints with every parser built up front and its own formatters.

SAME_WORDS = [["--help"], ["run", "--help"], ["frob"], ["--bogus"], ["--mode", "x"], ["run", "--bogus"],
              ["run", "--max-turns", "0"], ["run", "--output-format", "x"], ["stats", "--day", "--month"], ["expand"],
              ["sessions", "--limit", "x"], ["doctor", "-x"], ["acp", "--bogus"], ["demo", "--help"], ["config", "--bogus"]]


def _said(words: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[object, str, str]:
    with pytest.raises(SystemExit) as info:
        cli.main(words)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def test_help_and_usage_errors_read_as_with_every_parser_built(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "70")
    lazy = [_said(words, capsys) for words in SAME_WORDS]

    def eager(self: cli.Commands, name: str, build: Any, **kwargs: Any) -> None:
        build(self.add_parser(name, **kwargs))

    plain_subparsers = argparse.ArgumentParser.add_subparsers

    def add_subparsers(self: argparse.ArgumentParser, **kwargs: Any) -> Any:
        kwargs.pop("prog", None)  # argparse computes it
        return plain_subparsers(self, **kwargs)

    monkeypatch.setattr(cli.Commands, "later", eager)
    monkeypatch.setattr(cli.Parser, "_get_formatter", argparse.ArgumentParser._get_formatter)
    monkeypatch.setattr(cli.Parser, "add_subparsers", add_subparsers)
    for words, said in zip(SAME_WORDS, lazy, strict=True):
        assert _said(words, capsys) == said, words
    assert lazy[0][0] == 0 and "run one session headless" in lazy[0][1] and "--output-format" in lazy[1][1]
    assert all(code == cli.EXIT_USAGE for code, _, _ in lazy[2:] if code), lazy


def test_a_command_line_builds_the_parser_of_its_command_alone() -> None:
    words = ["--cwd", "run", "run", "-p", "hi", "--max-turns", "3"]
    parser = cli._parser(words)
    args = parser.parse_args(words)
    assert (args.command, args.prompt, args.max_turns) == ("run", "hi", 3)
    sub = next(a for a in parser._actions if isinstance(a, cli.Commands))
    assert list(sub.choices) == COMMANDS
    assert [name for name, child in sub.choices.items() if child is not None] == ["run"]


def test_parsing_a_command_line_imports_no_shutil() -> None:
    """argparse's help formatter imports shutil (zlib, bz2, lzma) to ask the terminal's width;
    only help and usage text need one (shutil is off `cox run -p`'s path once nothing else on it
    imports it)."""
    code = ("import sys\nfrom cox.surfaces import cli\nwords = ['run', '-p', 'x', '--max-turns', '2']\n"
            "cli._parser(words).parse_args(words)\n"
            "print(sorted(m for m in ('shutil', 'zlib', 'bz2', 'lzma') if m in sys.modules))\n"
            "cli._parser(['run']).format_usage()\nprint('shutil' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True"], out.stdout  # usage text asks it, as argparse does
