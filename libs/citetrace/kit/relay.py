"""The one background relay for outboxes: a durable table of things to deliver (the orchestrator's
trace records, retrieval's version events) drained by a thread that survives any failure, is woken
when something new is written, waits between passes, and backs off exponentially while delivery
keeps failing. The outbox owns what "due", "delivered" and "failed" mean (its `deliver_pass`); the
relay owns the thread and the timing."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable

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
    raises is logged and retried after `poll_seconds`."""

    def __init__(self, name: str, deliver_pass: Callable[[], float], *, poll_seconds: float) -> None:
        self.name = name
        self.poll_seconds = poll_seconds
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
        while not self._stop.is_set():
            self._wake.clear()  # before the pass: a write during it wakes the next one
            try:
                wait = self._deliver_pass()
            except Exception:  # noqa: BLE001 - the relay must survive anything (a store briefly down)
                log.exception("%s: delivery pass failed", self.name)
                wait = self.poll_seconds
            if wait > 0:
                self._wake.wait(wait)
