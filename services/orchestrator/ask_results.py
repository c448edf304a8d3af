"""Idempotent Asks: the answer of a completed Ask kept under its idempotency key (unique per tenant),
in the orchestrator's SQL store so every replica sees it (SQLite under the data dir by default,
PostgreSQL via CITETRACE_ORCHESTRATOR_DATABASE_URL).

A retried Ask with the same key and the same request gets the stored answer: nothing is computed
again, so no second evidence record is written and no second proposal made, whatever traceparent
the retry carries (the stored answer names the original trace). The same key with another request
(another question, caller, location, time or locale) is ALREADY_EXISTS. A key is reserved before
the Ask runs, so two concurrent calls with one key never both answer: the second waits for the
first (up to `wait_seconds`) and then gets its answer, or ABORTED while it is still running. An Ask
that fails gives its key back (a retry runs again); a reservation older than `stale_seconds` (a
replica that died mid-Ask) is taken over. Keys are kept `retention_seconds`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import time
from collections.abc import Callable

import sqlalchemy as sa
from citetrace.kit import sql as kit_sql
from citetrace.kit.errors import Aborted, AlreadyExists, InvalidArgument
from citetrace.kit.validation import pattern
from sqlalchemy.exc import IntegrityError

KEY = pattern("key")  # field_rules.yaml; matched whole
IN_PROGRESS, DONE = "in_progress", "done"
RESERVED, WAIT = "reserved", "wait"

metadata = sa.MetaData()
ask_results = sa.Table(
    "orch_ask_results", metadata,
    sa.Column("tenant_id", sa.String(128), primary_key=True),
    sa.Column("idempotency_key", sa.String(128), primary_key=True),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("trace_id", sa.String(128), nullable=False, server_default=""),
    sa.Column("response", sa.LargeBinary, nullable=True),
    sa.Column("reserved_at", sa.DateTime, nullable=False),
    sa.Column("completed_at", sa.DateTime, nullable=True),
    sa.Index("ix_orch_ask_results_reserved", "reserved_at"),
)


def checked_key(key: str) -> str:
    key = key.strip()
    if key and not KEY.fullmatch(key):
        raise InvalidArgument("INVALID_IDEMPOTENCY_KEY",
                              "idempotency_key must be 1-128 characters of letters, digits and . _ : - (e.g. a UUID)",
                              field="idempotency_key")
    return key


def fingerprint(**fields: object) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class Stored:
    trace_id: str
    response: bytes


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class AskResultStore:
    def __init__(self, url: str, *, wait_seconds: float = 5.0, stale_seconds: float = 120.0,
                 retention_seconds: float = 86400.0, clock: Callable[[], dt.datetime] = _now) -> None:
        self.engine = kit_sql.make_engine(url, sqlite_begin=kit_sql.SqliteBegin.IMMEDIATE)
        self.wait_seconds = wait_seconds
        self.stale_seconds = stale_seconds
        self.retention_seconds = retention_seconds
        self.clock = clock

    def migrate(self) -> None:
        with kit_sql.migration_lock(self.engine, "orchestrator") as conn:
            metadata.create_all(conn)
            conn.commit()

    def close(self) -> None:
        self.engine.dispose()

    def _keyed(self, tenant_id: str, key: str):
        return sa.and_(ask_results.c.tenant_id == tenant_id, ask_results.c.idempotency_key == key)

    def reserve(self, tenant_id: str, key: str, print_: str) -> Stored | None:
        """None: the caller now holds the key and must `complete` or `release` it. A Stored: the
        answer of the completed Ask under this key."""
        deadline = time.monotonic() + self.wait_seconds
        while True:
            state, stored = self._try_reserve(tenant_id, key, print_)
            if state != WAIT:
                return stored
            if time.monotonic() >= deadline:
                raise Aborted("IDEMPOTENCY_KEY_IN_PROGRESS",
                              f"an Ask with idempotency key {key!r} is still being answered; retry shortly",
                              field="idempotency_key")
            time.sleep(0.05)

    def _try_reserve(self, tenant_id: str, key: str, print_: str) -> tuple[str, Stored | None]:
        now = self.clock()
        try:
            with self.engine.begin() as conn:
                row = conn.execute(sa.select(ask_results).where(self._keyed(tenant_id, key))).first()
                if row is None:
                    conn.execute(ask_results.insert().values(
                        tenant_id=tenant_id, idempotency_key=key, fingerprint=print_, state=IN_PROGRESS,
                        reserved_at=now))
                    return RESERVED, None
                if row.fingerprint != print_:
                    raise AlreadyExists(
                        "IDEMPOTENCY_KEY_REUSED",
                        f"idempotency key {key!r} was already used for a different Ask (another question, caller, "
                        "location, time or locale); use a new key for a new question", field="idempotency_key")
                if row.state == DONE:
                    return DONE, Stored(row.trace_id, bytes(row.response))
                if (now - row.reserved_at).total_seconds() > self.stale_seconds:
                    conn.execute(ask_results.update().where(self._keyed(tenant_id, key)).values(reserved_at=now))
                    return RESERVED, None
                return WAIT, None  # another call is answering
        except IntegrityError:  # a concurrent first reservation (PostgreSQL): look again
            return WAIT, None

    def complete(self, tenant_id: str, key: str, trace_id: str, response: bytes) -> None:
        with self.engine.begin() as conn:
            conn.execute(ask_results.update().where(self._keyed(tenant_id, key)).values(
                state=DONE, trace_id=trace_id, response=response, completed_at=self.clock()))

    def release(self, tenant_id: str, key: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(ask_results.delete().where(self._keyed(tenant_id, key), ask_results.c.state == IN_PROGRESS))

    def purge(self) -> int:
        cutoff = self.clock() - dt.timedelta(seconds=self.retention_seconds)
        with self.engine.begin() as conn:
            return conn.execute(ask_results.delete().where(ask_results.c.reserved_at < cutoff)).rowcount


class ProtoAskResults:
    """The core's AskResults port over the store: the AskResponse kept as its serialized bytes."""

    def __init__(self, store: AskResultStore) -> None:
        self.store = store

    def reserve(self, tenant_id: str, key: str, request: dict) -> tuple[object, bool] | None:
        from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb

        stored = self.store.reserve(tenant_id, checked_key(key), fingerprint(**request))
        if stored is None:
            return None
        response = pb.AskResponse.FromString(stored.response)
        response.replayed = True  # told to the retry: the answer of the Ask that completed first
        return response, response.trace_delivered

    def complete(self, tenant_id: str, key: str, trace_id: str, response, delivered: bool) -> None:
        copy = type(response)()
        copy.CopyFrom(response)
        copy.trace_delivered = delivered
        copy.replayed = False
        self.store.complete(tenant_id, checked_key(key), trace_id, copy.SerializeToString())

    def release(self, tenant_id: str, key: str) -> None:
        self.store.release(tenant_id, checked_key(key))
