"""Background delivery of the version-event outbox (superseded / retired versions) to the trace
service, which then lists the answers that cited those versions as needing re-review.

The store writes an event in the same transaction as the change that causes it (Store._add_event),
so an event exists exactly when the change does. This relay sends due events oldest first through
`deliver(event)` (the gRPC adapter lives in services/retrieval/trace_notify.py; this module has no
gRPC), marks each delivered one, and on any failure schedules the next attempt with exponential
backoff (base * 2^attempts, capped). The background thread is the kit's outbox relay. Nothing is dropped: an event stays pending until trace accepts
it. Delivery is at least once; the trace service ignores an identical repeated event."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from citetrace.kit.relay import TableRelay

from services.retrieval.store.records import VersionEvent
from services.retrieval.store.store import Store


class _VersionEventTable:
    """The store's version-event outbox as a kit TableOutbox."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def due(self, now: datetime) -> Sequence[VersionEvent]:
        return self.store.due_version_events(now)

    def mark_delivered(self, row_id: int, now: datetime) -> None:
        self.store.mark_event_delivered(row_id, now)

    def mark_failed(self, row_id: int, error: str, next_attempt_at: datetime) -> None:
        self.store.mark_event_failed(row_id, error, next_attempt_at)


class VersionEventRelay(TableRelay):
    def __init__(self, store: Store, deliver: Callable[[VersionEvent], None], *, poll_seconds: float = 2.0,
                 backoff_base_seconds: float = 0.5, backoff_max_seconds: float = 30.0,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        super().__init__("retrieval-version-events", _VersionEventTable(store), deliver, poll_seconds=poll_seconds,
                         backoff_base_seconds=backoff_base_seconds, backoff_max_seconds=backoff_max_seconds,
                         clock=clock, describe=lambda e: f"version event {e.id} ({e.kind} {e.version_id})")
