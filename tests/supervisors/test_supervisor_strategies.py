"""Restart strategies and restart types."""

from __future__ import annotations

from collections import Counter

import pytest

from cox.supervisors import Restart, SupervisorHandle, start_supervisor
from tests.waits import BOUND_S

from .helpers import spec, wait_until

pytestmark = pytest.mark.timeout(300)  # only a hang: waits inside are bounded by BOUND_S


def urns(sup: SupervisorHandle, *names: str) -> dict[str, str | None]:
    refs = {name: sup.whereis(name) for name in names}
    return {name: (ref.actor_urn if ref is not None else None) for name, ref in refs.items()}


def crash_and_wait(sup: SupervisorHandle, name: str, restarted: tuple[str, ...]) -> None:
    """Crash ``name`` and wait until every child in ``restarted`` runs a new incarnation."""
    before = urns(sup, *restarted)
    ref = sup.whereis(name)
    assert ref is not None
    ref.tell("crash")
    assert wait_until(
        lambda: all((new := sup.whereis(n)) is not None and new.actor_urn != before[n] for n in restarted)
    )


def test_one_for_one_restarts_only_the_child_that_crashed() -> None:
    starts: Counter[str] = Counter()
    sup = start_supervisor("root", "one_for_one", children=[spec(n, starts) for n in "abc"])
    before = urns(sup, "a", "b", "c")
    crash_and_wait(sup, "b", ("b",))
    after = urns(sup, "a", "b", "c")
    assert after["a"] == before["a"] and after["c"] == before["c"]
    assert starts == Counter(a=1, b=2, c=1)
    assert [c["restarts"] for c in sup.which_children()] == [0, 1, 0]


def test_one_for_all_restarts_every_child_in_start_order() -> None:
    starts: Counter[str] = Counter()
    sup = start_supervisor("root", "one_for_all", children=[spec(n, starts) for n in "abc"])
    crash_and_wait(sup, "b", ("a", "b", "c"))
    assert starts == Counter(a=2, b=2, c=2)
    assert [c["name"] for c in sup.which_children()] == ["a", "b", "c"]
    assert all(sup.whereis(n).ask("ping", timeout=BOUND_S) == "pong" for n in "abc")  # type: ignore[union-attr]


def test_rest_for_one_restarts_the_child_and_those_started_after_it() -> None:
    starts: Counter[str] = Counter()
    sup = start_supervisor("root", "rest_for_one", children=[spec(n, starts) for n in "abcd"])
    before = urns(sup, "a")
    crash_and_wait(sup, "b", ("b", "c", "d"))
    assert urns(sup, "a") == before
    assert starts == Counter(a=1, b=2, c=2, d=2)


def test_one_for_all_drops_temporary_siblings_instead_of_restarting_them() -> None:
    starts: Counter[str] = Counter()
    sup = start_supervisor(
        "root",
        "one_for_all",
        children=[spec("a", starts), spec("tmp", starts, Restart.TEMPORARY)],
    )
    crash_and_wait(sup, "a", ("a",))
    assert wait_until(lambda: [c["name"] for c in sup.which_children()] == ["a"])
    assert starts == Counter(a=2, tmp=1)


def test_permanent_child_is_restarted_even_after_a_normal_stop() -> None:
    starts: Counter[str] = Counter()
    sup = start_supervisor("root", children=[spec("p", starts, Restart.PERMANENT)])
    old = sup.whereis("p")
    assert old is not None
    old.stop(timeout=BOUND_S)
    assert wait_until(lambda: starts["p"] == 2 and sup.whereis("p") is not None)


def test_transient_child_is_restarted_only_after_an_abnormal_exit() -> None:
    starts: Counter[str] = Counter()
    sup = start_supervisor("root", children=[spec("t", starts, Restart.TRANSIENT)])
    crash_and_wait(sup, "t", ("t",))
    assert starts["t"] == 2
    ref = sup.whereis("t")
    assert ref is not None
    ref.stop(timeout=BOUND_S)
    assert wait_until(lambda: sup.which_children()[0]["state"] == "stopped")
    assert starts["t"] == 2
    assert sup.whereis("t") is None
    assert sup.which_children()[0] | {"alive": False} == sup.which_children()[0]
    # A stopped transient child can be started again under its name (an LSP server on demand).
    sup.start_child(spec("t", starts, Restart.TRANSIENT))
    assert starts["t"] == 3 and sup.whereis("t") is not None


@pytest.mark.parametrize("how", ["crash", "stop"])
def test_temporary_child_is_never_restarted_and_is_forgotten(how: str) -> None:
    starts: Counter[str] = Counter()
    sup = start_supervisor("root", children=[spec("tmp", starts, Restart.TEMPORARY), spec("other")])
    ref = sup.whereis("tmp")
    assert ref is not None
    if how == "crash":
        ref.tell("crash")
    else:
        ref.stop(timeout=BOUND_S)
    assert wait_until(lambda: [c["name"] for c in sup.which_children()] == ["other"])
    assert starts["tmp"] == 1
    assert sup.whereis("tmp") is None
