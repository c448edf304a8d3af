"""One scenario for every table outbox the kit's TableRelay drains (the scheduler-gateway's action
events, retrieval's version events), run against the real store on SQLite and PostgreSQL: a
tenant's rows reach the receiver in the order they were written, even when the first one fails
and waits out a backoff, while another tenant's rows are not held up by it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from citetrace.kit.relay import TableOutbox, TableRelay


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def assert_each_tenant_in_written_order(outbox: TableOutbox, write: Callable[[str], int], now: datetime) -> None:
    """`write(tenant)` appends one pending row (due at `now`) and returns its id."""
    first_a, second_a, first_b = write("tenant-a"), write("tenant-a"), write("tenant-b")
    refused_once: set[int] = set()
    delivered: list[int] = []

    def deliver(row) -> None:
        if row.id == first_a and first_a not in refused_once:
            refused_once.add(first_a)
            raise ConnectionError("trace is down")
        delivered.append(row.id)

    clock = Clock(now)
    relay = TableRelay("order-test", outbox, deliver, backoff_base_seconds=10, backoff_max_seconds=10, clock=clock)
    assert relay.deliver_due() == 1
    assert delivered == [first_b], "a failed row must hold back its tenant's later rows, not another tenant's"
    clock.now = now + timedelta(seconds=5)  # the failed row is still waiting out its backoff
    assert relay.deliver_due() == 0
    assert delivered == [first_b], "a later row must not overtake an earlier one that waits out a backoff"
    clock.now = now + timedelta(seconds=11)
    assert relay.deliver_due() == 2
    assert delivered == [first_b, first_a, second_a]
    assert list(outbox.due(now + timedelta(days=1))) == []
