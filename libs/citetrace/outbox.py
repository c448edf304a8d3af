"""Durable delivery of trace records: "the answer does not leave without its trace" (DESIGN §4.8).

`TraceOutbox(path, deliver)` is what the orchestrator hands a finished TraceRecord to:

* `enqueue(record)` (the orchestrator's default, off the answer path) only writes the record to the
  local SQLite file and wakes the background deliverer; it raises only if the record cannot be
  written. The write is a single committed INSERT (well under 1 ms; see the SQLite settings below), so
  the answer never waits for the trace service, and the record is durable before the answer leaves.
* `submit(record)` (direct delivery) tries to deliver directly; when the trace service is unavailable (or records of
  the same tenant are already waiting, so order is kept) the record is written to a local SQLite
  file (WAL) and `submit` returns False. It raises only if the record cannot even
  be written to the outbox file.
* SQLite settings: WAL, and `synchronous` NORMAL by default (orchestrator setting
  OUTBOX_SYNCHRONOUS). In WAL mode a committed record survives any crash of the process (kill -9
  included): the commit is in the WAL file, only its fsync is deferred to the checkpoint. FULL
  also survives an OS crash or power loss, at one fsync per enqueue and per delivery; measured on
  this machine that fsync is ~0.2 ms alone but several ms on the answer path when the trace
  service's own commits share the disk, so NORMAL is the default and FULL the choice for hosts
  whose power loss must not lose the last records.
* A background deliverer (`start()`/`stop()`) sends waiting records in order per tenant, oldest
  first, with exponential backoff per tenant while the service keeps failing. `flush()` does one
  pass now, ignoring backoff. Records are deleted from the file only after the trace service
  confirmed them; the service is idempotent by trace ID, so a redelivery after a lost reply is safe.
* A record the service rejects for good (`PermanentDeliveryError`: invalid, conflicting trace ID,
  wrong tenant) is kept in the file as a dead letter (`dead_letters()`), never dropped silently,
  and does not block the records behind it.
* Nothing is lost across process restarts: a new TraceOutbox on the same file continues where the
  old one stopped. One process at a time should own an outbox file.

The background deliverer is the kit's outbox relay (kit.relay.Relay); `trace_deliverer()` builds the
delivery function for the real trace service from the kit's TraceClient. No grpc here.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from citetrace.kit.errors import DomainError
from citetrace.kit.metrics import TRACE_OUTBOX_DEAD_LETTERS, TRACE_OUTBOX_PENDING
from citetrace.kit.relay import Relay, backoff_seconds
from citetrace.trace.v1 import trace_service_pb2 as trace_pb

log = logging.getLogger("citetrace.outbox")

Deliver = Callable[[trace_pb.TraceRecord], None]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    record BLOB NOT NULL,
    enqueued_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL DEFAULT 'pending'
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (state, tenant_id, id);
"""


class PermanentDeliveryError(Exception):
    """The trace service rejected the record for good; retrying cannot help."""


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    id: int
    tenant_id: str
    trace_id: str
    attempts: int
    last_error: str


class TraceOutbox:
    def __init__(self, path: str | Path, deliver: Deliver, *, min_backoff: float = 0.2, max_backoff: float = 30.0,
                 poll_interval: float = 1.0, service: str = "orchestrator", turn: int = 64,
                 synchronous: str = "NORMAL") -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError("synchronous must be NORMAL or FULL")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._deliver = deliver
        self._min_backoff = min_backoff
        self._max_backoff = max_backoff
        self._poll_interval = poll_interval
        self._service = service
        self._turn = max(1, turn)
        self._db_lock = threading.Lock()
        self._drain_lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.executescript(_SCHEMA)
        # tenant -> (monotonic time before which not to retry, consecutive failures)
        self._backoff: dict[str, tuple[float, int]] = {}
        self._relay = Relay("trace-outbox", self._background_pass, poll_seconds=poll_interval)
        self._update_gauge()

    # -- the orchestrator's side ------------------------------------------------------------------

    def submit(self, record: trace_pb.TraceRecord) -> bool:
        """True when the trace service stored the record now; False when it waits in the outbox."""
        if self.pending_count(record.tenant_id):
            self._enqueue(record, "queued behind earlier records of the tenant")
            return False
        try:
            self._deliver(record)
            return True
        except PermanentDeliveryError as exc:
            log.error("trace %s rejected by the trace service, kept as dead letter: %s", record.trace_id, exc)
            self._enqueue(record, str(exc), state="dead", attempts=1)
            return False
        except Exception as exc:  # noqa: BLE001 - any failure to deliver means: keep it durably
            log.warning("trace service unavailable for trace %s, kept in the outbox: %s", record.trace_id, exc)
            self._enqueue(record, str(exc), attempts=1)
            self._note_failure(record.tenant_id)
            return False

    def enqueue(self, record: trace_pb.TraceRecord) -> None:
        """Keeps the record durably for the background deliverer (started with `start()`)."""
        self._enqueue(record, "")

    def _enqueue(self, record: trace_pb.TraceRecord, error: str, state: str = "pending", attempts: int = 0) -> None:
        blob = record.SerializeToString(deterministic=True)
        with self._db_lock:
            self._db.execute(
                "INSERT INTO outbox (tenant_id, trace_id, record, enqueued_at, attempts, last_error, state) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (record.tenant_id, record.trace_id, blob, time.time(), attempts, error[:2000], state))
        self._update_gauge()
        self._relay.wake()

    # -- inspection -----------------------------------------------------------------------------

    def pending_count(self, tenant_id: str | None = None) -> int:
        with self._db_lock:
            if tenant_id is None:
                row = self._db.execute("SELECT count(*) FROM outbox WHERE state = 'pending'").fetchone()
            else:
                row = self._db.execute("SELECT count(*) FROM outbox WHERE state = 'pending' AND tenant_id = ?",
                                       (tenant_id,)).fetchone()
        return int(row[0])

    def dead_letters(self) -> list[DeadLetter]:
        with self._db_lock:
            rows = self._db.execute("SELECT id, tenant_id, trace_id, attempts, last_error FROM outbox "
                                    "WHERE state = 'dead' ORDER BY id").fetchall()
        return [DeadLetter(*row) for row in rows]

    def requeue_dead(self) -> int:
        """Moves dead letters back to pending (after the cause was fixed); returns how many."""
        with self._db_lock:
            moved = self._db.execute("UPDATE outbox SET state = 'pending' WHERE state = 'dead'").rowcount
        self._update_gauge()
        self._relay.wake()
        return int(moved)

    def _update_gauge(self) -> None:
        TRACE_OUTBOX_PENDING.labels(service=self._service).set(self.pending_count())
        with self._db_lock:
            dead = self._db.execute("SELECT count(*) FROM outbox WHERE state = 'dead'").fetchone()[0]
        TRACE_OUTBOX_DEAD_LETTERS.labels(service=self._service).set(dead)

    # -- delivery -------------------------------------------------------------------------------

    def _note_failure(self, tenant_id: str) -> None:
        _, failures = self._backoff.get(tenant_id, (0.0, 0))
        failures += 1
        delay = backoff_seconds(failures, self._min_backoff, self._max_backoff, jitter=0.2)
        self._backoff[tenant_id] = (time.monotonic() + delay, failures)

    def _next_row(self, tenant_id: str):
        with self._db_lock:
            return self._db.execute(
                "SELECT id, record, attempts FROM outbox WHERE state = 'pending' AND tenant_id = ? "
                "ORDER BY id LIMIT 1", (tenant_id,)).fetchone()

    def _drain(self, force: bool) -> int:
        """One pass over every tenant with waiting records; returns how many were delivered."""
        delivered = 0
        with self._drain_lock:
            with self._db_lock:
                tenants = [r[0] for r in self._db.execute(
                    "SELECT tenant_id FROM outbox WHERE state = 'pending' GROUP BY tenant_id ORDER BY min(id)")]
            for tenant in tenants:
                due, _ = self._backoff.get(tenant, (0.0, 0))
                if not force and due > time.monotonic():
                    continue
                taken = 0
                # A bounded turn per tenant (unless flushing): one busy tenant does not starve the others.
                while (not self._relay.stopping and taken < self._turn) or force:
                    taken += 1
                    row = self._next_row(tenant)
                    if row is None:
                        break
                    row_id, blob, attempts = row
                    record = trace_pb.TraceRecord.FromString(blob)
                    try:
                        self._deliver(record)
                    except PermanentDeliveryError as exc:
                        log.error("trace %s rejected by the trace service, kept as dead letter: %s",
                                  record.trace_id, exc)
                        self._mark(row_id, "dead", attempts + 1, str(exc))
                        continue
                    except Exception as exc:  # noqa: BLE001
                        self._mark(row_id, "pending", attempts + 1, str(exc))
                        self._note_failure(tenant)
                        break
                    with self._db_lock:
                        self._db.execute("DELETE FROM outbox WHERE id = ?", (row_id,))
                    self._backoff.pop(tenant, None)
                    delivered += 1
        self._update_gauge()
        return delivered

    def _mark(self, row_id: int, state: str, attempts: int, error: str) -> None:
        with self._db_lock:
            self._db.execute("UPDATE outbox SET state = ?, attempts = ?, last_error = ? WHERE id = ?",
                             (state, attempts, error[:2000], row_id))

    def flush(self) -> int:
        """Tries every waiting record now (ignoring backoff); returns how many are still waiting."""
        self._drain(force=True)
        return self.pending_count()

    def wait_empty(self, timeout: float) -> bool:
        """Blocks until nothing is pending (the background deliverer must be running)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.pending_count() == 0:
                return True
            self._relay.wake()
            time.sleep(0.05)
        return self.pending_count() == 0

    def _background_pass(self) -> float:
        """One relay pass; the wait before the next: none while records were delivered (more may be
        waiting behind bounded turns), else the poll interval or the earliest backoff expiry."""
        if self._drain(force=False):
            return 0.0
        now = time.monotonic()
        dues = [due - now for due, _ in self._backoff.values() if due > now]
        return max(min([self._poll_interval, *dues]), 0.01)

    def start(self) -> None:
        self._relay.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._relay.stop(timeout)

    def close(self) -> None:
        self.stop()
        with self._db_lock:
            self._db.close()


# Rejections by the trace service after which a retry cannot succeed.
PERMANENT_CODES = frozenset({"INVALID_ARGUMENT", "ALREADY_EXISTS", "PERMISSION_DENIED", "FAILED_PRECONDITION"})


def trace_deliverer(client) -> Deliver:
    """The delivery function for the real trace service (a kit.trace_client.TraceClient, which signs
    each RecordTrace with a service token of the record's tenant). A rejection by the trace service
    that a retry cannot fix raises PermanentDeliveryError; anything else (unreachable, or no key to
    sign with yet) stays a retryable failure."""

    def deliver(record: trace_pb.TraceRecord) -> None:
        try:
            client.record_trace(record)
        except DomainError as err:
            if err.code.value in PERMANENT_CODES and err.metadata.get("service") == "trace":
                raise PermanentDeliveryError(f"{err.code.value} {err.reason}: {err.message}") from err
            raise

    return deliver
