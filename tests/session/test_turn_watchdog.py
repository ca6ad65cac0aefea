"""The turn's child watchdog (``turn_runtime.TurnRuntime.vanished``): a child found dead on one
tick is only suspected, found dead on the next it has vanished; one alive again in between is
not. The watchdog itself is made only when a tick first finds a child dead."""

from __future__ import annotations

from typing import Any

from cox.actors.session.turn_runtime import TurnRuntime


class Me:
    def tell(self, message: Any) -> None:
        pass


def test_a_child_found_dead_on_two_ticks_in_a_row_has_vanished() -> None:
    rt = TurnRuntime(Me(), 1)  # type: ignore[arg-type]
    try:
        dead: set[str] = set()
        watched = [("agent", "a"), ("agent", "b")]

        def alive(kind: str, ident: Any) -> bool | None:
            return ident not in dead

        assert rt.vanished(watched, alive) == []
        assert rt.watchdog is None  # all alive: nothing to remember
        dead.add("a")
        assert rt.vanished(watched, alive) == []  # suspected only: its last messages may be queued
        dead.discard("a")
        assert rt.vanished(watched, alive) == []  # alive again: no longer suspected
        dead.add("a")
        assert rt.vanished(watched, alive) == []
        dead.add("b")
        assert rt.vanished(watched, alive) == [("agent", "a")]
        assert sorted(rt.vanished(watched, alive)) == [("agent", "a"), ("agent", "b")]
    finally:
        rt.end(Me())  # type: ignore[arg-type]
