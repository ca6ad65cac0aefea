"""Stable names, the handle's API, start-up errors, and shutting a tree down."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pykka
import pytest

from cox.supervisors import (
    AlreadyStarted,
    ChildSpec,
    NameTaken,
    SupervisorNotRunning,
    SupervisorStartError,
    registry,
    shutdown,
    start_supervisor,
    whereis,
)
from tests.waits import BOUND_S

from .helpers import Worker, spec, wait_until

pytestmark = pytest.mark.timeout(300)  # only a hang: waits inside are bounded by BOUND_S


def test_names_are_stable_across_restarts() -> None:
    root = start_supervisor("root")
    mcp = start_supervisor("mcp", parent=root, children=[spec("github")])
    old = mcp.whereis("github")
    assert old is not None and whereis("root/mcp/github") is old
    old.tell("crash")
    assert wait_until(lambda: (r := mcp.whereis("github")) is not None and r is not old)
    new = mcp.whereis("github")
    assert new is not None and whereis("root/mcp/github") is new
    assert new.ask("ping", timeout=BOUND_S) == "pong"
    assert whereis("root/mcp") is mcp.ref


def test_handle_ask_follows_a_child_across_its_restart() -> None:
    root = start_supervisor("root", children=[spec("w")])
    root.tell("w", "crash")
    # The ask is queued behind the crash; it is not processed, so it is retried on the new actor.
    assert root.ask("w", "ping", timeout=BOUND_S) == "pong"


def test_handle_ask_times_out_when_the_child_does_not_come_back() -> None:
    root = start_supervisor("root", children=[spec("w", backoff=(5.0, 5.0))])
    root.tell("w", "crash")
    with pytest.raises(pykka.Timeout):
        root.ask("w", "ping", timeout=0.1)


def test_which_children_reports_each_child() -> None:
    root = start_supervisor("root", children=[spec("a"), spec("b")])
    rows = root.which_children()
    assert rows == [
        {
            "name": n,
            "alive": True,
            "restarts": 0,
            "state": "running",
            "restart": "permanent",
            "last_exit": None,
        }
        for n in ("a", "b")
    ]


def test_start_child_rejects_a_running_name_and_reports_start_errors() -> None:
    root = start_supervisor("root", children=[spec("a")])
    with pytest.raises(AlreadyStarted):
        root.start_child(spec("a"))

    def broken() -> pykka.ActorRef[Any]:
        raise OSError("no such binary")

    with pytest.raises(OSError, match="no such binary"):
        root.start_child(ChildSpec("b", broken))
    assert [c["name"] for c in root.which_children()] == ["a"]
    assert root.terminate_child("a") is True
    assert root.terminate_child("a") is False
    assert root.which_children() == []


def test_a_start_function_that_calls_its_own_supervisor_is_refused_not_deadlocked() -> None:
    root = start_supervisor("root")

    def sneaky() -> pykka.ActorRef[Any]:
        root.start_child(spec("inner"))
        return Worker.start()

    with pytest.raises(RuntimeError, match="deadlock"):
        root.start_child(ChildSpec("outer", sneaky))


def test_root_names_are_unique() -> None:
    start_supervisor("root")
    with pytest.raises(NameTaken):
        start_supervisor("root")


def test_a_supervisor_whose_initial_child_fails_to_start_reports_why() -> None:
    def broken() -> pykka.ActorRef[Any]:
        raise OSError("cannot open cox.db")

    started: Counter[str] = Counter()
    with pytest.raises(SupervisorStartError, match="cannot open cox.db"):
        start_supervisor("root", children=[spec("first", started), ChildSpec("store", broken)])
    assert started["first"] == 1
    assert wait_until(lambda: not pykka.ActorRegistry.get_all())  # "first" was stopped again
    assert registry.supervisor("root") is None


def test_a_stopped_supervisor_refuses_requests() -> None:
    root = start_supervisor("root", children=[spec("a")])
    assert root.stop(timeout=BOUND_S) is True
    assert not root.is_alive() and root.whereis("a") is None and root.which_children() == []
    with pytest.raises(SupervisorNotRunning):
        root.start_child(spec("b"))


def test_stop_all_on_a_live_tree_stops_everything() -> None:
    """pykka's stop_all stops children before their supervisors; the tree must still wind down
    without hanging or leaking (the autouse fixture checks the threads)."""
    root = start_supervisor("root", children=[spec(n) for n in "abcde"])
    start_supervisor("mcp", parent=root, children=[spec(n) for n in "xyz"])
    pykka.ActorRegistry.stop_all(timeout=BOUND_S)
    assert wait_until(lambda: not pykka.ActorRegistry.get_all())


def test_shutdown_stops_the_tree_top_down_without_restarts() -> None:
    starts: Counter[str] = Counter()
    root = start_supervisor("root", children=[spec(n, starts) for n in "abc"])
    start_supervisor("mcp", parent=root, children=[spec("x", starts)])
    shutdown(timeout=BOUND_S)
    assert starts == Counter(a=1, b=1, c=1, x=1)
    assert not pykka.ActorRegistry.get_all()
    assert not root.is_alive()


def test_children_know_their_supervisor_path() -> None:
    seen: list[str | None] = []

    class Child(Worker):
        def on_start(self) -> None:
            seen.append(self.cox_supervisor_path)

    root = start_supervisor("root")
    start_supervisor("lsp", parent=root, children=[ChildSpec("py", Child.start)])
    assert wait_until(lambda: seen == ["root/lsp"])


def test_the_registry_wait_wakes_on_publish() -> None:
    root = start_supervisor("root")
    found: list[pykka.ActorRef[Any] | None] = []
    t = threading.Thread(target=lambda: found.append(root.whereis("late", timeout=BOUND_S)))
    t.start()
    root.start_child(spec("late"))
    t.join(3)
    assert found and found[0] is not None
