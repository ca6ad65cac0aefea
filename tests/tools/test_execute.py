"""The one execution function of a call (``cox.actors.tools.execute``): checkpoint → run → cap
and archive, never raising. A session's ``ToolCallActor`` and ``cox mcp serve`` both go through
it (``test_mcp_serve.py`` proves the second end to end)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cox.actors.store.checkpoints import Checkpointer
from cox.actors.store.layout import Layout, cox_home
from cox.actors.tools.base import BaseTool, ToolEnv, ToolInputError
from cox.actors.tools.execute import execute
from cox.actors.tools.files import WriteTool
from cox.protocol.types import Risk, ToolCall, ToolResult, ToolStatus
from cox.supervisors import CancelScope

LIMITS = {"visible_max_bytes": 4096, "output_head_lines": 5, "output_tail_lines": 5}


class Archive:
    """An archive in memory: what was put, by id."""

    def __init__(self) -> None:
        self.kept: dict[str, bytes] = {}

    def __call__(self, data: bytes) -> str:
        archive_id = f"A{len(self.kept) + 1}"
        self.kept[archive_id] = data
        return archive_id


class Printing(BaseTool):
    """Returns the text it was built with; ``raises``: raises it instead."""

    name = "printing"
    description = "prints"

    def __init__(self, text: str = "", raises: BaseException | None = None) -> None:
        self.text = text
        self.raises = raises

    def risk(self, call_input: dict[str, Any]) -> Risk:
        return Risk.READ_ONLY

    def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
        if self.raises is not None:
            raise self.raises
        return ToolResult(visible=self.text)


def env_in(ws: Path) -> ToolEnv:
    return ToolEnv(roots=[ws], cwd=ws, cancel=CancelScope())


def call_of(tool: BaseTool, **inp: Any) -> ToolCall:
    return ToolCall(id="c1", name=tool.name, input=inp)


BIG = "".join(f"line {i}\n" for i in range(1, 3001))


def test_a_result_over_the_cap_is_archived_whole_and_the_pointer_is_shown(tmp_path: Path) -> None:
    archive = Archive()
    tool = Printing(BIG)
    done = execute(tool, call_of(tool), env_in(tmp_path), archive=archive, limits=LIMITS)
    result = done.result
    assert result.archive_id == "A1" and archive.kept["A1"] == BIG.encode()  # lossless
    assert "expand #A1 lines 6–2996" in result.visible  # the pointer names the hidden range
    assert result.visible.startswith("line 1\n") and result.visible.endswith("line 3000\n")
    assert "line 1500\n" not in result.visible and len(result.visible.encode()) <= LIMITS["visible_max_bytes"]
    assert result.total_bytes == len(BIG.encode()) and done.files == ()


def test_a_small_result_is_archived_too_and_shown_whole(tmp_path: Path) -> None:
    archive = Archive()
    tool = Printing("short")
    result = execute(tool, call_of(tool), env_in(tmp_path), archive=archive, limits=LIMITS).result
    assert result.visible == "short" and result.archive_id == "A1" and archive.kept["A1"] == b"short"


def test_an_archive_that_fails_is_said_not_silently_lost(tmp_path: Path) -> None:
    def broken(data: bytes) -> str:
        raise OSError("disk full")

    tool = Printing(BIG)
    result = execute(tool, call_of(tool), env_in(tmp_path), archive=broken, limits=LIMITS).result
    assert "[archive failed: disk full]" in result.visible and "expand #unavailable" in result.visible
    assert result.archive_id is None


def test_without_an_archive_a_big_result_is_still_capped_with_a_sentence(tmp_path: Path) -> None:
    tool = Printing(BIG)
    result = execute(tool, call_of(tool), env_in(tmp_path), limits=LIMITS).result
    assert "line 1500\n" not in result.visible and "the full output is not kept" in result.visible


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyError("k"), ToolInputError("bad 'x'")])
def test_a_tool_that_raises_is_an_error_result(tmp_path: Path, exc: BaseException) -> None:
    tool = Printing(raises=exc)
    result = execute(tool, call_of(tool), env_in(tmp_path), archive=Archive(), limits=LIMITS).result
    assert result.status is ToolStatus.ERROR and result.archive_id is None  # cox's sentence, not output
    assert ("bad 'x'" if isinstance(exc, ToolInputError) else f"printing failed: {type(exc).__name__}") \
        in result.visible


def test_missing_required_input_is_an_error_result(tmp_path: Path) -> None:
    tool = WriteTool()
    result = execute(tool, call_of(tool, path="a.txt"), env_in(tmp_path), limits=LIMITS).result
    assert result.status is ToolStatus.ERROR and "missing required field 'content'" in result.visible


@pytest.fixture
def checkpointer(tmp_path: Path) -> Iterator[Checkpointer]:
    ws = tmp_path / "ws"
    ws.mkdir()
    cp = Checkpointer(Layout(cox_home()).ensure(), ws, git_timeout=30)
    yield cp
    cp.close()


def test_a_writing_calls_pre_image_is_checkpointed_before_the_tool_runs(checkpointer: Checkpointer) -> None:
    ws = checkpointer.root
    (ws / "a.txt").write_text("before\n")
    seen: list[str] = []

    class Watching(WriteTool):
        def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
            # the pre-image is already recorded when the tool starts: a rewind from here gives it back
            seen.extend(row["files"] for row in checkpointer.timeline("s1"))
            return super().call(call, env)

    tool = Watching()
    env = env_in(ws)
    env.checkpoint = (checkpointer, "s1", 1)
    done = execute(tool, call_of(tool, path="a.txt", content="after\n"), env, archive=Archive(), limits=LIMITS)
    assert done.result.ok and (ws / "a.txt").read_text() == "after\n"
    assert done.files == ("a.txt",) and seen, "no checkpoint row existed when the tool ran"
    restored = checkpointer.restore("s1", to_turn=1, new_turn=2)
    assert list(restored) == ["a.txt"] and (ws / "a.txt").read_text() == "before\n"


def test_a_call_that_cannot_name_its_files_is_snapshotted_around(checkpointer: Checkpointer) -> None:
    ws = checkpointer.root
    (ws / "kept.txt").write_text("old\n")

    class Anything(Printing):
        def risk(self, call_input: dict[str, Any]) -> Risk:
            return Risk.WRITE  # writes(): None, as bash and MCP tools say

        def call(self, call: ToolCall, env: ToolEnv) -> ToolResult:
            (ws / "kept.txt").write_text("changed\n")
            (ws / "new.txt").write_text("new\n")
            return ToolResult(visible="did things")

    tool = Anything()
    env = env_in(ws)
    env.checkpoint = (checkpointer, "s1", 1)
    done = execute(tool, call_of(tool), env, archive=Archive(), limits=LIMITS)
    assert done.result.visible == "did things" and set(done.files) == {"kept.txt", "new.txt"}
    checkpointer.restore("s1", to_turn=1, new_turn=2)
    assert (ws / "kept.txt").read_text() == "old\n" and not (ws / "new.txt").exists()


def test_a_checkpoint_failure_is_a_note_never_a_failed_call(tmp_path: Path) -> None:
    from cox.actors.store.checkpoints import CheckpointError

    class Failing:
        def pre_images(self, *args: Any) -> list[str]:
            raise CheckpointError("the checkpoint store is read-only")

    tool = WriteTool()
    env = env_in(tmp_path)
    env.checkpoint = (Failing(), "s1", 1)  # type: ignore[assignment]
    result = execute(tool, call_of(tool, path="a.txt", content="x\n"), env, limits=LIMITS).result
    assert result.ok and (tmp_path / "a.txt").read_text() == "x\n"
    assert "[no checkpoint for this call: the checkpoint store is read-only]" in result.visible
