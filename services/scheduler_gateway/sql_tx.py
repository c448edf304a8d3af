"""Write transactions of the scheduling database with an idempotency key and action events.

`idempotent_write` runs one write transaction. With a key it first looks for the key's stored
result (a different request under the key is ALREADY_EXISTS) and otherwise inserts the key as a
placeholder *before* the work: a concurrent call with the same key then waits on that row (the
primary key) and, once the first commits, finds its result instead of doing the work twice. The
result is stored in the same transaction as the change, so "changed" and "result remembered" are
one fact. Errors raised by the work roll everything back (the key too): only completed calls are
remembered.
Just before the commit the caller's deadline is checked: a write past it is rolled back
(DEADLINE_EXCEEDED `DEADLINE_PASSED`), so a retry under the same key does the work once.

`append_event` writes an action event to the outbox in the caller's transaction.

On SQLite, writers of one process queue on an in-process lock before BEGIN IMMEDIATE: SQLite's own
busy handler polls with sleeps of up to 100 ms, which at 8 concurrent writers turned into p95
latencies near a second; the lock hands the database over in order instead. (Writers in other
processes, e.g. `citetrace slots load`, still meet the busy timeout.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import threading
import uuid
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from citetrace.kit.context import check_deadline
from citetrace.kit.errors import AlreadyExists
from sqlalchemy import Connection, Engine, select
from sqlalchemy.exc import IntegrityError

from services.scheduler_gateway import schema as s
from services.scheduler_gateway.domain import Idempotency

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Completed(Generic[T]):
    """The work's result and its JSON form to remember under the key."""

    value: T
    stored: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Unremembered(Generic[T]):
    """A result to commit but not to remember under the key (e.g. an expiry found on the way:
    the expiry is a fact, the call that found it failed)."""

    value: T


def _prior(conn: Connection, tenant_id: str, idem: Idempotency) -> dict[str, Any] | None:
    row = conn.execute(
        select(s.idempotency_keys.c.operation, s.idempotency_keys.c.fingerprint, s.idempotency_keys.c.result)
        .where(s.idempotency_keys.c.tenant_id == tenant_id, s.idempotency_keys.c.idempotency_key == idem.key)
    ).first()
    if row is None:
        return None
    if (row.operation, row.fingerprint) != (idem.operation, idem.fingerprint):
        raise AlreadyExists(
            "IDEMPOTENCY_KEY_REUSED",
            f"idempotency key {idem.key!r} was already used for a different request"
            + (f" ({row.operation})" if row.operation != idem.operation else "")
            + "; use a new key for a new request",
            field="idempotency_key",
        )
    return row.result


_SQLITE_WRITERS: dict[str, threading.Lock] = {}
_SQLITE_WRITERS_LOCK = threading.Lock()


def writer_turn(engine: Engine) -> contextlib.AbstractContextManager:
    """This process's turn to write to a SQLite file (a no-op for PostgreSQL: row locks)."""
    if engine.dialect.name != "sqlite":
        return contextlib.nullcontext()
    key = str(engine.url)
    with _SQLITE_WRITERS_LOCK:
        lock = _SQLITE_WRITERS.setdefault(key, threading.Lock())
    return lock


def idempotent_write(engine: Engine, tenant_id: str, idem: Idempotency | None, now: dt.datetime,
                     work: Callable[[Connection], Completed[T] | Unremembered[T]],
                     decode: Callable[[dict[str, Any]], T], before_commit: Callable[[], None] | None = None) -> T:
    """`before_commit` is a test seam (never a setting): called inside the transaction just before
    the deadline check and the commit, so a test can slow the commit down."""
    try:
        with writer_turn(engine), engine.connect().execution_options(**s.WRITE) as conn, conn.begin():
            if idem is not None:
                prior = _prior(conn, tenant_id, idem)
                if prior is not None:
                    return decode(prior)
                conn.execute(s.idempotency_keys.insert().values(
                    tenant_id=tenant_id, idempotency_key=idem.key, operation=idem.operation,
                    fingerprint=idem.fingerprint, result={}, created_at=now))
            outcome = work(conn)
            if idem is not None:
                keyed = (s.idempotency_keys.c.tenant_id == tenant_id) & (s.idempotency_keys.c.idempotency_key == idem.key)
                if isinstance(outcome, Completed):
                    conn.execute(s.idempotency_keys.update().where(keyed).values(result=outcome.stored))
                else:
                    conn.execute(s.idempotency_keys.delete().where(keyed))
            if before_commit is not None:
                before_commit()
            # A caller that has given up must not find its booking or proposal made later (issue 17 §4):
            # raising here rolls the change, its event and its idempotency key back together.
            check_deadline("scheduling write")
            return outcome.value
    except IntegrityError:
        if idem is None:
            raise
        # A concurrent call with the same key committed first: its result is the answer.
        with engine.connect() as conn:
            prior = _prior(conn, tenant_id, idem)
        if prior is None:
            raise
        return decode(prior)


def append_event(conn: Connection, tenant_id: str, payload: dict[str, Any], now: dt.datetime) -> str:
    event_id = payload.get("event_id") or uuid.uuid4().hex
    conn.execute(s.action_events_outbox.insert().values(
        tenant_id=tenant_id, event_id=event_id, payload={**payload, "event_id": event_id, "tenant_id": tenant_id},
        created_at=now, next_attempt_at=now))
    return event_id
