"""The one background relay for outboxes: a durable table of things to deliver (the orchestrator's
trace records, retrieval's version events) drained by a thread that survives any failure, is woken
when something new is written, waits between passes, and backs off exponentially while delivery
keeps failing. The outbox owns what "due", "delivered" and "failed" mean (its `deliver_pass`); the
relay owns the thread and the timing."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

log = logging.getLogger("citetrace.relay")


def backoff_seconds(failures: int, base: float, cap: float, *, jitter: float = 0.0) -> float:
    """The delay before the next attempt after `failures` consecutive failed ones: base * 2^(failures-1),
    capped, optionally spread by +-jitter (a fraction) so many senders do not retry in step."""
    delay = min(cap, base * (2 ** min(max(failures - 1, 0), 30)))
    if jitter:
        delay *= random.uniform(1 - jitter, 1 + jitter)  # noqa: S311 - spreading retries, not cryptography
    return delay


class Relay:
    """Runs `deliver_pass()` on a daemon thread until stopped. The pass returns how long to wait before
    the next one (0: run again at once, e.g. more is waiting); `wake()` cuts a wait short. A pass that
    raises is logged and retried after `poll_seconds`. `first_wait` delays the first pass."""

    def __init__(self, name: str, deliver_pass: Callable[[], float], *, poll_seconds: float,
                 first_wait: float = 0.0) -> None:
        self.name = name
        self.poll_seconds = poll_seconds
        self.first_wait = first_wait
        self._deliver_pass = deliver_pass
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def wake(self) -> None:
        """Something new was written: deliver it now rather than at the next poll."""
        self._wake.set()

    def _run(self) -> None:
        if self.first_wait > 0:
            self._wake.wait(self.first_wait)
        while not self._stop.is_set():
            self._wake.clear()  # before the pass: a write during it wakes the next one
            try:
                wait = self._deliver_pass()
            except Exception:  # noqa: BLE001 - the relay must survive anything (a store briefly down)
                log.exception("%s: delivery pass failed", self.name)
                wait = self.poll_seconds
            if wait > 0:
                self._wake.wait(wait)


class Periodic:
    """A housekeeping task (expiring proposals, retention) every `interval_seconds`, the first run one
    interval after start, on the relay's thread: a failure is logged and the next tick tries again."""

    def __init__(self, name: str, interval_seconds: float, task: Callable[[], object]) -> None:
        self.name = name
        self.interval_seconds = interval_seconds
        self.task = task
        self._relay = Relay(name, self._tick, poll_seconds=interval_seconds, first_wait=interval_seconds)

    def _tick(self) -> float:
        self.task()
        return self.interval_seconds

    def start(self) -> None:
        self._relay.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._relay.stop(timeout)


class PendingRow(Protocol):
    """A row of a table outbox: its key, its tenant and how many deliveries of it failed so far.
    A tenant's rows are delivered in the order they were written: they become links of that
    tenant's hash chain, and a later event (a confirmation) must not be linked before the one it
    follows (its proposal)."""

    id: int
    tenant_id: str
    attempts: int


class TableOutbox(Protocol):
    """A table of events written in the transaction of the change that caused them (retrieval's
    version events, the scheduler-gateway's action events). `due` returns pending rows oldest first
    and, for each tenant, only those before its first pending row that is not due yet: a row
    waiting out its backoff holds back the tenant's later rows, so they cannot overtake it."""

    def due(self, now: datetime) -> Sequence[PendingRow]: ...
    def mark_delivered(self, row_id: int, now: datetime) -> None: ...
    def mark_failed(self, row_id: int, error: str, next_attempt_at: datetime) -> None: ...


class TableRelay:
    """Delivers a table outbox's due rows oldest first through `deliver(row)`, marks each delivered
    one, and on any failure schedules that row's next attempt with exponential backoff (capped).
    A failed row holds back its tenant's later rows for the rest of the pass (and, through `due`,
    until it is delivered), so each tenant's rows arrive in the order written. Nothing is dropped:
    a row stays pending until delivered. Delivery is at least once, so the receiver must ignore an
    identical repeat."""

    def __init__(self, name: str, outbox: TableOutbox, deliver: Callable[[Any], None], *, poll_seconds: float = 2.0,
                 backoff_base_seconds: float = 0.5, backoff_max_seconds: float = 30.0,
                 clock: Callable[[], datetime] | None = None, describe: Callable[[Any], str] = repr) -> None:
        self.name = name
        self.outbox = outbox
        self.deliver = deliver
        self.backoff_base_seconds = backoff_base_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self.clock = clock or (lambda: datetime.now(UTC))
        self.describe = describe
        self._relay = Relay(name, self._background_pass, poll_seconds=poll_seconds)
        self._pass_lock = threading.Lock()

    def start(self) -> None:
        self._relay.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._relay.stop(timeout)

    def wake(self) -> None:
        """A new row was committed: deliver it now rather than at the next poll."""
        self._relay.wake()

    def deliver_due(self) -> int:
        """One pass over the due rows; returns how many were delivered."""
        delivered = 0
        held: set[str] = set()  # tenants whose earlier row failed in this pass
        with self._pass_lock:
            for row in self.outbox.due(self.clock()):
                if self._relay.stopping:
                    break
                if row.tenant_id in held:
                    continue
                try:
                    self.deliver(row)
                except Exception as exc:  # noqa: BLE001 - any failure means: try again later
                    delay = backoff_seconds(row.attempts + 1, self.backoff_base_seconds, self.backoff_max_seconds)
                    self.outbox.mark_failed(row.id, f"{type(exc).__name__}: {exc}",
                                            self.clock() + timedelta(seconds=delay))
                    log.warning("%s: %s not delivered (attempt %d), retry in %.1f s: %s", self.name,
                                self.describe(row), row.attempts + 1, delay, exc)
                    held.add(row.tenant_id)
                    continue
                self.outbox.mark_delivered(row.id, self.clock())
                delivered += 1
        return delivered

    def _background_pass(self) -> float:
        self.deliver_due()
        return self._relay.poll_seconds
