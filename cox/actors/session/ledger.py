"""A session's spending: what each request cost, the session's total, the caps it must stay under.

Every request's usage is priced from the model catalog when it ends; the next request is judged
before it is sent, by the last one's cost (the best guess there is), against the session cap
(``budget.session_usd``) and the month's (``budget.monthly_usd``, with what earlier sessions spent
this month as the store counted it when the session opened). Pure: the machine records and asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cox.protocol.types import Usage
from cox.slim import dataclass

if TYPE_CHECKING:
    from cox.protocol.model import UsageDelta


def period_start(period: str, now: float | None = None) -> float:
    """The local midnight that starts today (``day``) or this calendar month (``month``), as a
    timestamp: where the monthly cap and ``cox stats`` begin counting."""
    import datetime
    import time

    today = datetime.datetime.fromtimestamp(now if now is not None else time.time()).date()
    start = today.replace(day=1) if period == "month" else today
    return datetime.datetime.combine(start, datetime.time()).timestamp()


class Purse:
    """What a tree of sessions — a parent and its subagents — spent together. Shared by their
    ledgers across threads; each judges its next request by the tree's spend."""

    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()
        self._spent = 0.0

    def add(self, usd: float) -> None:
        with self._lock:
            self._spent += usd

    @property
    def spent(self) -> float:
        with self._lock:
            return self._spent


class Ledger:
    def __init__(self, model: str, session_cap: float | None, monthly_cap: float | None,
                 overrides: dict[str, Any], purse: Purse | None = None) -> None:
        self.purse = purse or Purse()
        self.total = Usage(model=model)
        self.session_cap = session_cap
        self.monthly_cap = monthly_cap
        self.overrides = overrides
        self.month_spent = 0.0
        """What other sessions spent this month (the store's sum when this one opened)."""
        self.last_request_cost = 0.0
        self.last_context_tokens = 0
        """The last main request's prompt size: how full the context window is."""

    def record(self, reported: UsageDelta, model: str, main: bool) -> Usage:
        """Price one request's usage (``main``: a turn's request, not a summary's) and add it."""
        from cox.actors.provider.catalog import describe

        usage = Usage(model=model, input_tokens=reported.input_tokens, output_tokens=reported.output_tokens,
                      cache_read_tokens=reported.cache_read_tokens, cache_write_tokens=reported.cache_write_tokens)
        usage.cost_usd = describe(model, self.overrides).cost(usage)
        self.total = self.total + usage
        self.purse.add(usage.cost_usd)
        self.last_request_cost = usage.cost_usd
        if main:
            self.last_context_tokens = (reported.input_tokens + reported.cache_read_tokens
                                        + reported.cache_write_tokens)
        return usage

    def stop_reason(self) -> str | None:
        """Why the next request must not be sent: it would pass the session or monthly cap
        (judged by what the whole tree of sessions spent)."""
        spent = self.purse.spent
        next_cost = self.last_request_cost
        cap, monthly = self.session_cap, self.monthly_cap
        if monthly is not None and self.month_spent >= monthly:
            return (f"the monthly budget of ${monthly:.2f} is spent (${self.month_spent:.4f} this month); "
                    "raise budget.monthly_usd to go on")
        if spent <= 0:
            return None
        if cap is not None and spent + next_cost > cap:
            return (f"the session budget of ${cap:.2f} is spent (${spent:.4f} so far, the next request would "
                    f"cost about ${next_cost:.4f}); raise budget.session_usd (or --max-budget-usd) to go on")
        if monthly is not None and self.month_spent + spent + next_cost > monthly:
            return (f"the monthly budget of ${monthly:.2f} is spent (${self.month_spent + spent:.4f} this month); "
                    "raise budget.monthly_usd to go on")
        return None


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where a session stands in its tree: its depth (0: the person's own), the tree's purse,
    and for a child its parent's id and its agent id."""

    depth: int
    purse: Purse
    parent_id: str = ""
    agent_id: str = ""
