"""Background delivery of the version-event outbox (superseded / retired versions) to the trace
service, which then lists the answers that cited those versions as needing re-review.

The store writes an event in the same transaction as the change that causes it (Store._add_event),
so an event exists exactly when the change does. This relay sends due events oldest first through
`deliver(event)` (the gRPC adapter lives in services/retrieval/trace_notify.py; this module has no
gRPC), marks each delivered one, and on any failure schedules the next attempt with exponential
backoff (base * 2^attempts, capped). The background thread is the kit's outbox relay. Nothing is dropped: an event stays pending until trace accepts
it. Delivery is at least once; the trace service ignores an identical repeated event."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from citetrace.kit.relay import Relay, backoff_seconds

from services.retrieval.store.records import VersionEvent
from services.retrieval.store.store import Store

log = logging.getLogger("citetrace.retrieval.version_events")


class VersionEventRelay:
    def __init__(self, store: Store, deliver: Callable[[VersionEvent], None], *, poll_seconds: float = 2.0,
                 backoff_base_seconds: float = 0.5, backoff_max_seconds: float = 30.0,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self.deliver = deliver
        self.backoff_base_seconds = backoff_base_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self.clock = clock or (lambda: datetime.now(UTC))
        self._relay = Relay("retrieval-version-events", self._background_pass, poll_seconds=poll_seconds)
        self._pass_lock = threading.Lock()

    def start(self) -> None:
        self._relay.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._relay.stop(timeout)

    def wake(self) -> None:
        """A new event was committed: deliver it now rather than at the next poll."""
        self._relay.wake()

    def deliver_due(self) -> int:
        """One pass over the due events; returns how many were delivered."""
        delivered = 0
        with self._pass_lock:
            for event in self.store.due_version_events(self.clock()):
                if self._relay.stopping:
                    break
                try:
                    self.deliver(event)
                except Exception as exc:  # noqa: BLE001 - any failure means: try again later
                    delay = backoff_seconds(event.attempts + 1, self.backoff_base_seconds, self.backoff_max_seconds)
                    self.store.mark_event_failed(event.id, f"{type(exc).__name__}: {exc}",
                                                 self.clock() + timedelta(seconds=delay))
                    log.warning("retrieval: version event %d (%s %s) not delivered to trace (attempt %d), "
                                "retry in %.1f s: %s", event.id, event.kind, event.version_id,
                                event.attempts + 1, delay, exc)
                    continue
                self.store.mark_event_delivered(event.id, self.clock())
                delivered += 1
        return delivered

    def _background_pass(self) -> float:
        self.deliver_due()
        return self._relay.poll_seconds
