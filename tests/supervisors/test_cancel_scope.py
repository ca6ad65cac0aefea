"""CancelScope: one-shot, thread-safe, callbacks exactly once, child scopes."""

from __future__ import annotations

import functools
import logging
import threading

import pytest

from cox.protocol.interfaces import CancelToken
from cox.supervisors import Cancelled, CancelScope

pytestmark = pytest.mark.timeout(300)  # only a hang: waits inside are bounded by BOUND_S


def test_cancel_is_idempotent_and_runs_each_callback_once() -> None:
    scope = CancelScope()
    calls: list[str] = []
    scope.on_cancel(lambda: calls.append("a"))
    scope.on_cancel(lambda: calls.append("b"))
    assert not scope.cancelled
    assert scope.cancel("interrupt") is True
    assert scope.cancel("again") is False
    assert scope.cancelled
    assert scope.reason == "interrupt"
    assert calls == ["a", "b"]


def test_callback_registered_after_cancel_runs_immediately() -> None:
    scope = CancelScope()
    scope.cancel()
    calls: list[int] = []
    unregister = scope.on_cancel(lambda: calls.append(1))
    assert calls == [1]
    unregister()  # harmless
    scope.cancel()
    assert calls == [1]


def test_unregistered_callback_does_not_run() -> None:
    scope = CancelScope()
    calls: list[str] = []
    unregister = scope.on_cancel(lambda: calls.append("gone"))
    scope.on_cancel(lambda: calls.append("kept"))
    unregister()
    unregister()
    scope.cancel()
    assert calls == ["kept"]


def test_child_is_cancelled_with_parent_but_not_the_reverse() -> None:
    parent = CancelScope("turn")
    child = parent.child("tool")
    grandchild = child.child("subprocess")
    sibling = parent.child("other")
    calls: list[str] = []
    grandchild.on_cancel(lambda: calls.append("grandchild"))
    sibling.cancel()
    assert sibling.cancelled and not parent.cancelled and not child.cancelled
    parent.cancel("interrupt")
    assert child.cancelled and grandchild.cancelled
    assert grandchild.reason == "interrupt"
    assert calls == ["grandchild"]


def test_closed_child_is_forgotten_by_its_parent() -> None:
    parent = CancelScope()
    child = parent.child()
    child.close()
    parent.cancel()
    assert not child.cancelled


def test_raising_callback_is_logged_and_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    scope = CancelScope("s")
    calls: list[str] = []

    def broken() -> None:
        raise OSError("socket already closed")

    scope.on_cancel(lambda: calls.append("before"))
    scope.on_cancel(broken)
    scope.on_cancel(lambda: calls.append("after"))
    with caplog.at_level(logging.ERROR, logger="cox.supervisors.cancel"):
        assert scope.cancel() is True
    assert calls == ["before", "after"]
    assert "socket already closed" in caplog.text


def test_wait_times_out_then_wakes_on_cancel() -> None:
    scope = CancelScope()
    assert scope.wait(0.01) is False
    threading.Timer(0.02, scope.cancel).start()
    assert scope.wait(2.0) is True


def test_raise_if_cancelled() -> None:
    scope = CancelScope()
    scope.raise_if_cancelled()
    scope.cancel("timeout")
    with pytest.raises(Cancelled, match="timeout"):
        scope.raise_if_cancelled()


def test_callbacks_may_cancel_and_register_without_deadlock() -> None:
    scope, other = CancelScope(), CancelScope()
    calls: list[str] = []
    scope.on_cancel(other.cancel)
    scope.on_cancel(lambda: scope.on_cancel(lambda: calls.append("late")))
    scope.cancel()
    assert other.cancelled and calls == ["late"]


def test_many_threads_register_and_cancel_concurrently() -> None:
    """Every callback runs exactly once, whether registered before, during or after cancel, and
    exactly one cancel() call wins."""
    scope = CancelScope()
    n_registrars, per_thread, n_cancellers = 16, 200, 4
    counts = [0] * (n_registrars * per_thread)
    lock = threading.Lock()
    wins: list[bool] = []
    start = threading.Barrier(n_registrars + n_cancellers)

    def bump(i: int) -> None:
        with lock:
            counts[i] += 1

    def registrar(t: int) -> None:
        start.wait()
        for k in range(per_thread):
            i = t * per_thread + k
            scope.on_cancel(functools.partial(bump, i))

    def canceller() -> None:
        start.wait()
        won = scope.cancel()
        with lock:
            wins.append(won)

    threads = [threading.Thread(target=registrar, args=(t,)) for t in range(n_registrars)]
    threads += [threading.Thread(target=canceller) for _ in range(n_cancellers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads)
    assert wins.count(True) == 1
    assert set(counts) == {1}


def test_satisfies_the_cancel_token_protocol() -> None:
    def uses(token: CancelToken) -> bool:
        unregister = token.on_cancel(lambda: None)
        unregister()
        return token.cancelled

    assert uses(CancelScope()) is False
