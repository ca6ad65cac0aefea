"""Property: for any strategy, mix of restart types and sequence of crashes and normal stops, the
supervisor restarts exactly the children OTP's rules say, in place, each exactly once.

Worth hypothesis: the rules interact (a temporary sibling in a one_for_all group is dropped, a
stopped transient child is not part of a rest_for_one group, ...) and hand-picked cases miss
combinations.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cox.supervisors import Restart, Strategy, SupervisorHandle, start_supervisor
from tests.waits import BOUND_S

from .helpers import spec, wait_until

pytestmark = pytest.mark.timeout(300)  # only a hang: waits inside are bounded by BOUND_S


@dataclass
class Model:
    name: str
    restart: Restart
    state: str = "running"


def expected_after_exit(
    strategy: Strategy, children: list[Model], target: Model, abnormal: bool, starts: Counter[str]
) -> list[Model]:
    """OTP's rules, written out plainly."""
    wants = target.restart is Restart.PERMANENT or (target.restart is Restart.TRANSIENT and abnormal)
    if not wants:
        if target.restart is Restart.TEMPORARY:
            return [c for c in children if c is not target]
        target.state = "stopped"
        return children
    if strategy is Strategy.ONE_FOR_ONE:
        group = [target]
    else:
        after = children if strategy is Strategy.ONE_FOR_ALL else children[children.index(target) :]
        group = [c for c in after if c is target or c.state == "running"]
    dropped = [c for c in group if c is not target and c.restart is Restart.TEMPORARY]
    for c in group:
        if c not in dropped:
            starts[c.name] += 1
    return [c for c in children if c not in dropped]


def settled(
    sup: SupervisorHandle, starts: Counter[str], expected: Counter[str], want: list[tuple[str, str]]
) -> bool:
    """The supervisor has done all it should: the right starts, the right table, live refs."""
    rows = sup.which_children()
    return (
        starts == expected
        and [(r["name"], r["state"]) for r in rows] == want
        and all(r["alive"] == (r["state"] == "running") for r in rows)
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    strategy=st.sampled_from(list(Strategy)),
    restarts=st.lists(st.sampled_from(list(Restart)), min_size=1, max_size=4),
    ops=st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=5),
)
def test_restarts_follow_the_otp_rules(
    strategy: Strategy, restarts: list[Restart], ops: list[tuple[int, bool]]
) -> None:
    starts: Counter[str] = Counter()
    model = [Model(f"c{i}", r) for i, r in enumerate(restarts)]
    expected: Counter[str] = Counter({c.name: 1 for c in model})
    sup = start_supervisor(
        "prop",
        strategy,
        max_restarts=1000,
        children=[spec(c.name, starts, c.restart) for c in model],
    )
    try:
        for index, abnormal in ops:
            running = [c for c in model if c.state == "running"]
            if not running:
                break
            target = running[index % len(running)]
            ref = sup.whereis(target.name)
            assert ref is not None
            if abnormal:
                ref.tell("crash")
            else:
                ref.stop(timeout=BOUND_S)
            model = expected_after_exit(strategy, model, target, abnormal, expected)
            want = [(c.name, c.state) for c in model]
            assert wait_until(functools.partial(settled, sup, starts, expected, want), BOUND_S), (
                sup.which_children(),
                starts,
                expected,
            )
    finally:
        assert sup.stop(timeout=BOUND_S)
