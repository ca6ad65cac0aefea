"""A resumed session's history holds the input the person edited at approval (what ran and
what the model was told), not the one the model first asked for."""

from __future__ import annotations

from cox.actors.session.resume import rebuild
from cox.protocol import messages as m
from cox.protocol.types import ToolCall, ToolResult


def test_rebuild_applies_an_edit_made_at_approval() -> None:
    asked = ToolCall(id="b1", name="bash", input={"command": "touch original.txt"}, subject="touch original.txt")
    ran = ToolCall(id="b1", name="bash", input={"command": "touch edited.txt"}, subject="touch edited.txt")
    events = [m.TurnStarted(turn=1), m.UserMessage(turn=1, text="touch"),
              m.AssistantMessage(turn=1, content=[{"type": "tool_use", "id": "b1", "name": "bash",
                                                   "input": dict(asked.input)}]),
              m.ToolCallRequested(call=asked), m.ToolCallEdited(call=ran),
              m.ToolCallDone(call_id="b1", result=ToolResult(visible="")),
              m.TurnDone(turn=1, stop="end_turn")]  # type: ignore[arg-type]
    history = rebuild([m.to_dict(e) for e in events]).history
    uses = [b for msg in history if msg["role"] == "assistant" for b in msg["content"] if b.get("type") == "tool_use"]
    assert [u["input"] for u in uses] == [{"command": "touch edited.txt"}]


def test_an_edit_of_a_claude_code_call_is_rebuilt_in_the_models_spelling() -> None:
    """The model called ``Bash`` (timeout in ms); the events carry cox's ``bash`` (seconds): the
    rebuilt history shows the edit as the model spelled its call, so it reads its own words."""
    asked = ToolCall(id="b1", name="bash", input={"command": "sleep 1", "timeout": 2})
    ran = ToolCall(id="b1", name="bash", input={"command": "sleep 2", "timeout": 3})
    events = [m.TurnStarted(turn=1), m.UserMessage(turn=1, text="sleep"),
              m.AssistantMessage(turn=1, content=[{"type": "tool_use", "id": "b1", "name": "Bash",
                                                   "input": {"command": "sleep 1", "timeout": 2000}}]),
              m.ToolCallRequested(call=asked), m.ToolCallEdited(call=ran),
              m.ToolCallDone(call_id="b1", result=ToolResult(visible="")),
              m.TurnDone(turn=1, stop="end_turn")]  # type: ignore[arg-type]
    history = rebuild([m.to_dict(e) for e in events]).history
    uses = [b for msg in history if msg["role"] == "assistant" for b in msg["content"] if b.get("type") == "tool_use"]
    assert [(u["name"], u["input"]) for u in uses] == [("Bash", {"command": "sleep 2", "timeout": 3000})]
