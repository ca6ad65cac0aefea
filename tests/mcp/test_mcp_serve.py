"""``cox mcp serve`` as a real subprocess, spoken to by the SDK's own stdio client.

The server is started the way ``cox mcp serve`` starts it (``mcp_serve.main``); every test talks
to it over stdin/stdout only, so a stray byte on its stdout would break the protocol and fail it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cox.actors.tools.registry import builtin_tools

SERVE = "import sys; from cox.surfaces.mcp_serve import main; sys.exit(main())"


@asynccontextmanager
async def served(cwd: Path, *extra: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVE, "--cwd", str(cwd), *extra],
                                   env=dict(os.environ), cwd=str(cwd))
    with open(cwd.parent / "serve-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await asyncio.wait_for(session.initialize(), 30)
                yield session


def run(cwd: Path, body: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        async with served(cwd) as session:
            return await asyncio.wait_for(body(session), 60)

    return asyncio.run(go())


def text(result: mcp_types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello from the workspace\nsecond line\n")
    (tmp_path / "outside.txt").write_text("must not be read\n")
    return ws


def test_lists_the_builtin_tools_with_their_schemas(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    listed = run(ws, lambda s: s.list_tools())
    by_name = {t.name: t for t in listed.tools}
    builtin = builtin_tools()
    assert {"read", "write", "edit", "bash", "grep", "glob", "ls", "apply_patch"} <= set(by_name)
    assert "todo_write" not in by_name and "tool_search" not in by_name  # need a session
    for name, tool in by_name.items():
        assert tool.description == builtin[name].description
        assert dict(tool.input_schema) == builtin[name].input_schema


def test_read_a_file(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    result = run(ws, lambda s: s.call_tool("read", {"path": "hello.txt"}))
    assert not result.is_error
    assert "hello from the workspace" in text(result) and "second line" in text(result)


def test_write_is_refused_under_the_default_mode(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    result = run(ws, lambda s: s.call_tool("write", {"path": "new.txt", "content": "x\n"}))
    assert result.is_error
    said = text(result)
    assert said.startswith("refused:") and "approval policy is never" in said, said
    assert "write would change" in said and str(ws / "new.txt") in said
    assert not (ws / "new.txt").exists()


def test_bash_read_only_allowed_and_a_writing_command_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path)

    async def body(s: ClientSession) -> tuple[Any, Any]:
        return (await s.call_tool("bash", {"command": "cat hello.txt && ls"}),
                await s.call_tool("bash", {"command": "touch made.txt"}))

    ok, refused = run(ws, body)
    assert not ok.is_error, text(ok)
    assert "hello from the workspace" in text(ok) and "hello.txt" in text(ok)
    assert refused.is_error and text(refused).startswith("refused:") and "touch" in text(refused)
    assert not (ws / "made.txt").exists()


def test_a_path_escape_is_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path)

    async def body(s: ClientSession) -> tuple[Any, Any]:
        return (await s.call_tool("read", {"path": "../outside.txt"}),
                await s.call_tool("read", {"path": str(tmp_path / "outside.txt")}))

    for result in run(ws, body):
        assert result.is_error
        assert "must not be read" not in text(result)
        assert "outside" in text(result)


def test_unknown_tool_and_bad_input_are_error_results(tmp_path: Path) -> None:
    ws = workspace(tmp_path)

    async def body(s: ClientSession) -> tuple[Any, Any, Any]:
        return (await s.call_tool("todo_write", {"todos": []}), await s.call_tool("read", {}),
                await s.call_tool("read", {"path": "hello.txt"}))

    unknown, bad, after = run(ws, body)
    assert unknown.is_error and "no tool named 'todo_write'" in text(unknown)
    assert bad.is_error and "path" in text(bad)
    assert not after.is_error  # the server is still there


def expand(archive_id: str, cox_home: Path) -> bytes:
    """``cox expand ID``'s bytes, as the person would get them."""
    import subprocess

    p = subprocess.run([sys.executable, "-m", "cox.surfaces.cli", "expand", archive_id], capture_output=True,
                       timeout=60, env={**os.environ, "COX_HOME": str(cox_home)}, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    return p.stdout


def pointer(shown: str) -> str:
    import re

    found = re.search(r"expand #(\S+) (?:lines|chars) ", shown)
    assert found, f"no archive pointer in {shown[:300]!r}…"
    return found.group(1)


@pytest.mark.parametrize("tool", ["bash", "read"])
def test_a_big_output_is_capped_and_archived_whole_as_in_a_session(tmp_path: Path, cox_home: Path,
                                                                      tool: str) -> None:
    """The choke point a session's calls go through (``tools/execute.py``): the client sees head,
    a pointer and tail; ``cox expand`` gives back every byte (bash archives what it printed itself,
    the others are archived by the choke point)."""
    ws = workspace(tmp_path)
    big = "".join(f"line {i} {'x' * 40}\n" for i in range(1, 20001))
    (ws / "big.txt").write_text(big)
    inputs = {"bash": {"command": "cat big.txt"}, "read": {"path": "big.txt", "limit": 20000}}
    result = run(ws, lambda s: s.call_tool(tool, inputs[tool]))
    assert not result.is_error, text(result)[:500]
    shown = text(result)
    assert "line 1 " in shown and "line 20000 " in shown and "line 10000 " not in shown
    assert len(shown.encode()) <= 16384 + 400
    kept = expand(pointer(shown), cox_home).decode()
    if tool == "bash":
        assert kept == big  # byte for byte what the command printed
    else:
        assert "line 10000 " in kept and len(kept) >= len(big)  # the whole result the tool returned


def test_config_mode_is_honoured_and_bash_output_streams_as_progress(tmp_path: Path, cox_home: Path) -> None:
    ws = workspace(tmp_path)
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text('[permissions]\nmode = "bypassPermissions"\n')
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async def body(s: ClientSession) -> tuple[Any, Any]:
        wrote = await s.call_tool("write", {"path": "new.txt", "content": "made over mcp\n"})
        ran = await s.call_tool("bash", {"command": "for i in 1 2 3; do echo tick$i; sleep 0.3; done"},
                                progress_callback=on_progress)
        return wrote, ran

    wrote, ran = run(ws, body)
    assert not wrote.is_error, text(wrote)
    assert (ws / "new.txt").read_text() == "made over mcp\n"
    assert not ran.is_error and "tick3" in text(ran)
    assert "tick1" in "".join(progress), progress


def test_logs_go_to_cox_home_and_stdout_carries_only_the_protocol(tmp_path: Path, cox_home: Path) -> None:
    ws = workspace(tmp_path)
    result = run(ws, lambda s: s.call_tool("bash", {"command": "echo to-stderr >&2; echo to-stdout"}))
    assert "to-stdout" in text(result)  # the tool's output reached the client inside a result
    assert (cox_home / "logs" / "cox.log").exists()
    assert "mcp serve" in (cox_home / "logs" / "cox.log").read_text()


def test_bad_cwd_is_exit_2_with_nothing_on_stdout(tmp_path: Path) -> None:
    import subprocess

    p = subprocess.run([sys.executable, "-c", SERVE, "--cwd", str(tmp_path / "missing")], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and p.stdout == "" and "not a directory" in p.stderr


def test_cox_mcp_serve_through_the_cli(tmp_path: Path) -> None:
    import shutil

    exe = shutil.which("cox", path=str(Path(sys.executable).parent))
    assert exe, "the cox entry point is installed with the package"
    ws = workspace(tmp_path)

    async def go() -> Any:
        params = StdioServerParameters(command=exe, args=["mcp", "serve", "--cwd", str(ws)], env=dict(os.environ))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), 30)
            return await asyncio.wait_for(session.call_tool("read", {"path": "hello.txt"}), 30)

    result = asyncio.run(go())
    assert not result.is_error and "hello from the workspace" in text(result)


def test_a_cancelled_call_kills_its_command(tmp_path: Path, cox_home: Path) -> None:
    import time

    ws = workspace(tmp_path)
    cox_home.mkdir(parents=True, exist_ok=True)
    (cox_home / "config.toml").write_text('[permissions]\nmode = "bypassPermissions"\n')

    async def body(s: ClientSession) -> Any:
        call = asyncio.ensure_future(s.call_tool("bash", {"command": "touch started.txt; sleep 2; touch late.txt"}))
        for _ in range(200):
            if (ws / "started.txt").exists():
                break
            await asyncio.sleep(0.05)
        started = time.monotonic()
        call.cancel()  # the SDK sends notifications/cancelled
        with contextlib.suppress(asyncio.CancelledError):
            await call
        after = await s.call_tool("read", {"path": "hello.txt"})  # the server still answers
        return started, after

    started, after = run(ws, body)
    assert (ws / "started.txt").exists() and not after.is_error
    time.sleep(max(0.0, started + 3.0 - time.monotonic()))
    assert not (ws / "late.txt").exists(), "the cancelled call's command ran on after the cancel"
