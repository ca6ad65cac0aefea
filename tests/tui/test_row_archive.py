"""Every tool result now has an archive id (microcompaction points at small ones too); a tool
row names ``expand #ID`` only when what the model saw was cut, or every row would carry an id."""

from __future__ import annotations

from cox.protocol import messages as m
from cox.protocol.types import ToolCall, ToolResult
from cox.surfaces.tui.model import Model


def test_a_row_names_its_archive_only_when_the_output_was_cut() -> None:
    model = Model()
    model.apply(m.ToolCallRequested(call=ToolCall(id="a", name="bash", input={"command": "ls"}, subject="ls")))
    model.apply(m.ToolCallDone(call_id="a", result=ToolResult(visible="x\ny", archive_id="01SMALL"), duration_ms=100))
    assert model.blocks[-1].detail == "0.1 s · 2 lines"
    model.apply(m.ToolCallRequested(call=ToolCall(id="b", name="bash", input={"command": "seq"}, subject="seq")))
    model.apply(m.ToolCallDone(call_id="b", result=ToolResult(visible="1\n[… cut]\n9", archive_id="01BIG",
                                                              total_bytes=90_000), duration_ms=100))
    assert model.blocks[-1].detail.endswith("· expand #01BIG")
