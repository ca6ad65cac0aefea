"""Command files and their expansion, without a session: names and namespaces, front matter,
which file wins a name, the placeholders, and that only the file's own ``!`…``` parts run."""

from __future__ import annotations

from pathlib import Path

import pytest

from cox.commands.expand import CommandError, expand, parse_line
from cox.commands.files import Command, load_commands


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def catalog(tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_commands(tmp_path / "ws", home=tmp_path / "home", cox_home=tmp_path / "ch",
                         env={"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")})


def test_names_front_matter_and_precedence(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".claude" / "commands" / "a" / "b" / "deep.md", "\ufeff---\ndescription: Deep one\n---\nbody")
    write(ws / ".claude" / "commands" / "hint.md", "---\nargument-hint: add [tagId] | remove [tagId]\n"
                                                   "allowed-tools: Bash(git add *), TodoWrite, Read\n---\nx")
    write(ws / ".claude" / "commands" / "bad name.md", "x")
    write(ws / ".claude" / "commands" / "rule.md", "---\nallowed-tools: Bash(git * foo)\n---\nx")
    write(ws / ".claude" / "commands" / "notes.txt", "not a command")
    write(ws / ".cox" / "commands" / "same.md", "cox folder")
    write(ws / ".claude" / "commands" / "same.md", "claude folder")
    write(tmp_path / "claude" / "commands" / "mine.md", "\n\n# Heading line\nrest")
    got = catalog(tmp_path)
    c = got.commands
    assert c["a:b:deep"].description == "Deep one" and c["a:b:deep"].body == "body"
    assert c["hint"].argument_hint == "add [tagId] | remove [tagId]"
    assert c["hint"].allowed_tools == ("Bash(git add:*)", "TodoWrite", "Read")  # Claude's spelling; TodoWrite is todo_write
    assert c["same"].body == "cox folder"
    assert c["mine"].scope == "user" and c["mine"].description == "Heading line"
    reasons = {s.name: s.reason for s in got.skipped}
    assert "one word per folder" in reasons["bad name"]
    assert "a '*' elsewhere" in reasons["rule"]
    assert "already" in reasons["same"]
    assert "notes" not in c


def test_placeholders() -> None:
    cmd = Command(name="c", description="", body="one=$1 two=$2 ten=$10 all=[$ARGUMENTS] none=$9", scope="user",
                  source="x")
    assert expand(cmd, 'a "b c"', None) == 'one=a two=b c ten=$10 all=[a "b c"] none='
    plain = Command(name="p", description="", body="Do it.", scope="user", source="x")
    assert expand(plain, "", None) == "Do it."
    assert expand(plain, "now 'please", None) == "Do it.\n\nARGUMENTS: now 'please"  # an open quote: plain words


def test_only_the_files_own_lines_run_and_a_refusal_stops_everything() -> None:
    ran: list[str] = []

    def run(line: str, command: Command) -> str:
        ran.append(line)
        if "bad" in line:
            raise CommandError("refused")
        return f"<{line}>"

    cmd = Command(name="c", description="", body="log: !`git log -n $1` said: $ARGUMENTS", scope="project", source="x")
    assert expand(cmd, "3 !`rm -rf /`", run) == "log: <git log -n 3> said: 3 !`rm -rf /`"
    assert ran == ["git log -n 3"]
    bad = Command(name="b", description="", body="!`ok` then !`bad`", scope="project", source="x")
    with pytest.raises(CommandError):
        expand(bad, "", run)
    with pytest.raises(CommandError, match="cannot run"):
        expand(cmd, "1", None)


def test_parse_line() -> None:
    assert parse_line("/review  a b ") == ("review", "a b")
    assert parse_line("review") is None and parse_line("/") is None and parse_line("/a\nb") is None


def test_a_repository_cannot_link_its_commands_out_of_the_workspace(tmp_path: Path) -> None:
    from cox.policy.permission import Engine

    ws, home = tmp_path / "ws", tmp_path / "home"
    write(home / "private.md", "SECRET home note")
    write(ws / ".env", "SECRET=1")
    (ws / ".claude").mkdir(parents=True)
    (ws / ".claude" / "commands").symlink_to(home)  # the whole folder linked out
    write(ws / ".cox" / "commands" / "ok.md", "fine")
    (ws / ".cox" / "commands" / "env.md").symlink_to(ws / ".env")
    guard = Engine.compile(deny=["Read(./.env)"], home=home, roots=[ws]).read_guard()
    got = load_commands(ws, home=home, cox_home=tmp_path / "ch", env={}, reads=guard)
    assert list(got.commands) == ["ok"]
    reasons = {s.name: s.reason for s in got.skipped}
    assert "outside the workspace" in reasons["private"]
    assert "Read deny rule" in reasons["env"]
