"""The trace store behind a small interface, and its SQLAlchemy implementation (SQLite by default,
PostgreSQL in production). No grpc here.

Tables (created by the Alembic migrations in services/trace/migrations):
- trace_records: one row per record, append-only: the canonical body bytes plus indexed columns
  (tenant, created_at, outcome, sequence) and the hash chain (previous_hash, record_hash).
- trace_facets: indexed values derived from the body (part outcomes, failure reasons, cited
  document/version/passage IDs), append-only, written in the same transaction as the record.
- trace_queries: the query text with its commitment nonce; the only row that ever changes, and only
  by a redaction (a trigger enforces that).
- trace_chain_heads: per tenant the last sequence and hash; its row lock serializes appends.
- trace_reviews, trace_version_events, trace_redactions: append-only event tables.
- trace_chain_links: links of the same per-tenant chain that are not an Ask's record (workflow
  actions, reviews, version events, redactions); they take their sequence from the same chain head,
  so records and links form one chain. A review, version event or redaction row is written in the
  transaction of its link; VerifyChain compares each row with its link.
- every record and link stores the trace authority's Ed25519 signature of its hash (key_id,
  signature; migration 0003): the key lives outside the database.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

import sqlalchemy as sa
from citetrace.kit import sql as kit_sql
from citetrace.kit.context import check_deadline
from citetrace.kit.sql import SqliteBegin
from citetrace.kit.timestamps import naive_utc, utc_now
from sqlalchemy.engine import Connection, Engine

from services.trace.canonical import GENESIS_HASH

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

metadata = sa.MetaData()

records = sa.Table(
    "trace_records", metadata,
    sa.Column("tenant_id", sa.String(128), primary_key=True),
    sa.Column("trace_id", sa.String(128), primary_key=True),
    sa.Column("sequence", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("stored_at", sa.DateTime, nullable=False),
    sa.Column("outcome", sa.Integer, nullable=False),
    sa.Column("principal_ref", sa.String(256), nullable=False),
    sa.Column("query_digest", sa.String(64), nullable=False),
    sa.Column("body", sa.LargeBinary, nullable=False),
    sa.Column("previous_hash", sa.String(64), nullable=False),
    sa.Column("record_hash", sa.String(64), nullable=False),
    sa.Column("key_id", sa.String(64), nullable=False, server_default=""),
    sa.Column("signature", sa.String(128), nullable=False, server_default=""),
)
facets = sa.Table(
    "trace_facets", metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("tenant_id", sa.String(128), nullable=False),
    sa.Column("trace_id", sa.String(128), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("value", sa.String(256), nullable=False),
)
queries = sa.Table(
    "trace_queries", metadata,
    sa.Column("tenant_id", sa.String(128), primary_key=True),
    sa.Column("trace_id", sa.String(128), primary_key=True),
    sa.Column("raw", sa.Text, nullable=False),
    sa.Column("normalized", sa.Text, nullable=False),
    sa.Column("nonce", sa.LargeBinary, nullable=True),
    sa.Column("redacted", sa.Boolean, nullable=False),
)
heads = sa.Table(
    "trace_chain_heads", metadata,
    sa.Column("tenant_id", sa.String(128), primary_key=True),
    sa.Column("sequence", sa.BigInteger, nullable=False),
    sa.Column("record_hash", sa.String(64), nullable=False),
)
reviews = sa.Table(
    "trace_reviews", metadata,
    sa.Column("review_id", sa.String(64), primary_key=True),
    sa.Column("tenant_id", sa.String(128), nullable=False),
    sa.Column("trace_id", sa.String(128), nullable=False),
    sa.Column("decision", sa.Integer, nullable=False),
    sa.Column("reviewer_ref", sa.String(256), nullable=False),
    sa.Column("rubric_note", sa.Text, nullable=False),
    sa.Column("answer_record_hash", sa.String(64), nullable=False),
    sa.Column("evidence_version_ids", sa.Text, nullable=False),
    sa.Column("source_policy_version", sa.String(256), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)
version_events = sa.Table(
    "trace_version_events", metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("tenant_id", sa.String(128), nullable=False),
    sa.Column("version_id", sa.String(128), nullable=False),
    sa.Column("kind", sa.Integer, nullable=False),
    sa.Column("replaced_by_version_id", sa.String(128), nullable=False),
    sa.Column("actor_ref", sa.String(256), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)
redactions = sa.Table(
    "trace_redactions", metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("tenant_id", sa.String(128), nullable=False),
    sa.Column("trace_id", sa.String(128), nullable=False),
    sa.Column("redacted_at", sa.DateTime, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("actor_ref", sa.String(256), nullable=False),
)


chain_links = sa.Table(
    "trace_chain_links", metadata,
    sa.Column("tenant_id", sa.String(128), primary_key=True),
    sa.Column("link_id", sa.String(128), primary_key=True),
    sa.Column("sequence", sa.BigInteger, nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("subject_trace_id", sa.String(128), nullable=False),
    sa.Column("subject_ref", sa.String(128), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("body", sa.LargeBinary, nullable=False),
    sa.Column("previous_hash", sa.String(64), nullable=False),
    sa.Column("link_hash", sa.String(64), nullable=False),
    sa.Column("key_id", sa.String(64), nullable=False, server_default=""),
    sa.Column("signature", sa.String(128), nullable=False, server_default=""),
)


# --- domain rows ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class NewRecord:
    tenant_id: str
    trace_id: str
    created_at: dt.datetime  # naive UTC
    outcome: int
    principal_ref: str
    body: bytes
    query_raw: str
    query_normalized: str
    nonce: bytes
    query_digest: str
    facets: frozenset[tuple[str, str]]


@dataclasses.dataclass(frozen=True)
class StoredRecord:
    tenant_id: str
    trace_id: str
    sequence: int
    created_at: dt.datetime
    outcome: int
    principal_ref: str
    body: bytes
    previous_hash: str
    record_hash: str
    query_digest: str
    query_raw: str
    query_normalized: str
    nonce: bytes | None
    redacted: bool
    needs_review: bool = False
    facets: frozenset[tuple[str, str]] = frozenset()
    key_id: str = ""
    signature: str = ""


@dataclasses.dataclass(frozen=True)
class AppendResult:
    created: bool
    record: StoredRecord


@dataclasses.dataclass(frozen=True)
class ReviewRow:
    review_id: str
    tenant_id: str
    trace_id: str
    decision: int
    reviewer_ref: str
    rubric_note: str
    answer_record_hash: str
    evidence_version_ids: tuple[str, ...]
    source_policy_version: str
    created_at: dt.datetime


@dataclasses.dataclass(frozen=True)
class VersionEventRow:
    tenant_id: str
    version_id: str
    kind: int
    replaced_by_version_id: str
    actor_ref: str
    created_at: dt.datetime


@dataclasses.dataclass(frozen=True)
class RedactionRow:
    tenant_id: str
    trace_id: str
    redacted_at: dt.datetime
    reason: str
    actor_ref: str


@dataclasses.dataclass(frozen=True)
class NewLink:
    tenant_id: str
    link_id: str
    kind: str
    subject_trace_id: str  # the Ask's trace the link is about ('' when none)
    subject_ref: str  # e.g. the proposal an action belongs to
    created_at: dt.datetime  # naive UTC
    body: bytes


@dataclasses.dataclass(frozen=True)
class StoredLink:
    tenant_id: str
    link_id: str
    sequence: int
    kind: str
    subject_trace_id: str
    subject_ref: str
    created_at: dt.datetime
    body: bytes
    previous_hash: str
    link_hash: str
    key_id: str = ""
    signature: str = ""


@dataclasses.dataclass(frozen=True)
class ListFilter:
    outcome: int = 0
    failure_reason: int = 0
    created_after: dt.datetime | None = None
    created_before: dt.datetime | None = None
    document_id: str = ""
    version_id: str = ""
    needs_review: bool = False


@dataclasses.dataclass(frozen=True)
class Seal:
    """A chain item's hash and the trace authority's signature of it (base64), made by the core's
    sealer from the item's sequence and the hash before it, inside the append's transaction."""

    hash: str
    key_id: str
    signature: str


# (sequence, previous hash) -> the item's Seal
Sealer = Callable[[int, str], Seal]


@dataclasses.dataclass(frozen=True)
class ChainHead:
    sequence: int
    record_hash: str


@dataclasses.dataclass(frozen=True)
class TenantEvents:
    """Every review, version event and redaction row of a tenant (what VerifyChain compares with
    their chain links)."""

    reviews: list[ReviewRow]
    version_events: list[VersionEventRow]
    redactions: list[RedactionRow]


class TraceStore(Protocol):
    """What the trace core needs from storage. Implementations must make `append` atomic and
    serialized per tenant (no two records of a tenant get the same sequence or previous hash)."""

    def migrate(self) -> None: ...
    def append(self, new: NewRecord, sealer: Sealer) -> AppendResult: ...
    def get(self, tenant_id: str, trace_id: str) -> StoredRecord | None: ...
    def list(self, tenant_id: str, flt: ListFilter, before_sequence: int | None,
             limit: int) -> list[StoredRecord]: ...
    def chain(self, tenant_id: str, batch: int = 500) -> Iterator[StoredRecord]: ...
    def head(self, tenant_id: str) -> ChainHead | None: ...
    def add_review(self, row: ReviewRow, link: NewLink, sealer: Sealer) -> None: ...
    def list_reviews(self, tenant_id: str, trace_id: str, offset: int, limit: int) -> list[ReviewRow]: ...
    def add_version_event(self, row: VersionEventRow, link: NewLink, sealer: Sealer) -> int: ...
    def redact_older_than(self, tenant_id: str, cutoff: dt.datetime, reason: str, actor_ref: str,
                          now: dt.datetime, link_of: Callable[[RedactionRow], NewLink],
                          seal_link: Callable[[NewLink], Sealer]) -> int: ...
    def redactions(self, tenant_id: str, trace_id: str) -> list[RedactionRow]: ...
    def tenant_events(self, tenant_id: str) -> TenantEvents: ...
    def review_backlog(self, cutoff: dt.datetime) -> int: ...
    def signed_key_ids(self) -> set[str]: ...
    def tenants(self) -> list[str]: ...
    def append_link(self, new: NewLink, sealer: Sealer) -> tuple[bool, StoredLink]: ...
    def links(self, tenant_id: str, subject_trace_id: str | None = None, subject_ref: str | None = None,
              after_sequence: int = 0, limit: int = 500) -> list[StoredLink]: ...
    def close(self) -> None: ...


# --- SQLAlchemy implementation ------------------------------------------------------------------

def make_engine(url: str) -> Engine:
    # Every transaction begins IMMEDIATE: one writer at a time, so the per-tenant chain cannot fork.
    return kit_sql.make_engine(url, sqlite_begin=SqliteBegin.IMMEDIATE, sqlite_synchronous="FULL",
                               pool_size=8, max_overflow=8)


def migrate_engine(engine: Engine) -> None:
    kit_sql.alembic_upgrade(engine, "trace", MIGRATIONS_DIR)


_EXISTS_QUERY = sa.select(records.c.sequence).where(
    records.c.tenant_id == sa.bindparam("tenant_id"), records.c.trace_id == sa.bindparam("trace_id"))


def _needs_review_expr(rec):
    """True when a version the record cited had a version event after the record was created and
    no review of this record is newer than that event. Correlation to the outer record row is
    explicit: the review check sits two subqueries deep."""
    newer_review = (
        sa.select(1).select_from(reviews)
        .where(reviews.c.tenant_id == rec.c.tenant_id, reviews.c.trace_id == rec.c.trace_id,
               reviews.c.created_at > version_events.c.created_at)
        .correlate(rec, version_events)
    )
    return (
        sa.select(1)
        .select_from(facets.join(
            version_events,
            sa.and_(version_events.c.tenant_id == facets.c.tenant_id,
                    version_events.c.version_id == facets.c.value)))
        .where(
            facets.c.tenant_id == rec.c.tenant_id,
            facets.c.trace_id == rec.c.trace_id,
            facets.c.kind == "version",
            version_events.c.created_at > rec.c.created_at,
            ~sa.exists(newer_review),
        )
        .correlate(rec)
        .exists()
    )


# The append path's statements, built once: a statement built per call pays SQLAlchemy's
# construction and cache-key work on every evidence record.
_RECORD_INSERT = records.insert()
_QUERY_INSERT = queries.insert()
_LINK_INSERT = chain_links.insert()
_HEAD_MOVE = heads.update().where(heads.c.tenant_id == sa.bindparam("head_tenant")).values(
    sequence=sa.bindparam("new_sequence"), record_hash=sa.bindparam("new_hash"))


class SqlTraceStore:
    def __init__(self, url: str, *, before_commit: Callable[[], None] | None = None) -> None:
        """`before_commit` is a test seam (never a setting): called inside every write's transaction
        just before the deadline check and the commit, so a test can slow the commit down."""
        self.url = url
        self.engine = make_engine(url)
        self.dialect = self.engine.dialect.name
        self._lock = threading.Lock()
        self._hook = before_commit
        self._head_seed = self._insert_ignore(heads)
        self._head_read = sa.select(heads.c.sequence, heads.c.record_hash).where(
            heads.c.tenant_id == sa.bindparam("tenant_id"))
        if self.dialect == "postgresql":
            self._head_read = self._head_read.with_for_update()

    def migrate(self) -> None:
        migrate_engine(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    # -- records --------------------------------------------------------------------------------

    def _insert_ignore(self, table: sa.Table):
        if self.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        elif self.dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:  # pragma: no cover
            raise RuntimeError(f"unsupported database dialect {self.dialect}")
        return insert(table).on_conflict_do_nothing()

    def _lock_head(self, conn: Connection, tenant_id: str) -> ChainHead:
        conn.execute(self._head_seed, {"tenant_id": tenant_id, "sequence": 0, "record_hash": GENESIS_HASH})
        row = conn.execute(self._head_read, {"tenant_id": tenant_id}).one()
        return ChainHead(int(row.sequence), row.record_hash)

    @staticmethod
    def _move_head(conn: Connection, tenant_id: str, sequence: int, record_hash: str) -> None:
        conn.execute(_HEAD_MOVE, {"head_tenant": tenant_id, "new_sequence": sequence, "new_hash": record_hash})

    def _serialized(self, work: Callable[[Connection], object]):
        """Runs `work` in one transaction that holds the tenant's chain head. SQLite has one writer
        anyway: this process's writers queue on a lock instead of in SQLite's busy handler (which
        sleeps in growing steps and makes the tail latency long); BEGIN IMMEDIATE still serializes
        writers of other processes on the same file. PostgreSQL: the head's row lock does."""
        if self.dialect == "sqlite":
            with self._lock, self.engine.begin() as conn:
                return self._before_commit(work(conn))
        with self.engine.begin() as conn:
            return self._before_commit(work(conn))

    def _before_commit(self, result):
        if self._hook is not None:
            self._hook()
        # Inside the transaction: a write whose caller's deadline has passed rolls back (issue 17 §4).
        check_deadline("trace write")
        return result

    def append(self, new: NewRecord, sealer: Sealer) -> AppendResult:
        return self._serialized(lambda conn: self._append(conn, new, sealer))

    def _append(self, conn: Connection, new: NewRecord, sealer: Sealer) -> AppendResult:
        head = self._lock_head(conn, new.tenant_id)
        # A redelivery is rare: a primary-key probe first, the full record only when it exists.
        if conn.execute(_EXISTS_QUERY, {"tenant_id": new.tenant_id, "trace_id": new.trace_id}).first():
            existing = self._get(conn, new.tenant_id, new.trace_id)
            if existing is not None:
                return AppendResult(False, existing)
        sequence = head.sequence + 1
        seal = sealer(sequence, head.record_hash)
        stored_at = naive_utc(utc_now())
        conn.execute(_RECORD_INSERT, dict(
            tenant_id=new.tenant_id, trace_id=new.trace_id, sequence=sequence, created_at=new.created_at,
            stored_at=stored_at, outcome=new.outcome, principal_ref=new.principal_ref,
            query_digest=new.query_digest, body=new.body, previous_hash=head.record_hash,
            record_hash=seal.hash, key_id=seal.key_id, signature=seal.signature))
        if new.facets:
            conn.execute(facets.insert(), [
                {"tenant_id": new.tenant_id, "trace_id": new.trace_id, "kind": kind, "value": value}
                for kind, value in sorted(new.facets)])
        conn.execute(_QUERY_INSERT, dict(
            tenant_id=new.tenant_id, trace_id=new.trace_id, raw=new.query_raw,
            normalized=new.query_normalized, nonce=new.nonce, redacted=False))
        self._move_head(conn, new.tenant_id, sequence, seal.hash)
        stored = StoredRecord(
            tenant_id=new.tenant_id, trace_id=new.trace_id, sequence=sequence, created_at=new.created_at,
            outcome=new.outcome, principal_ref=new.principal_ref, body=new.body,
            previous_hash=head.record_hash, record_hash=seal.hash, query_digest=new.query_digest,
            query_raw=new.query_raw, query_normalized=new.query_normalized, nonce=new.nonce,
            redacted=False, facets=new.facets, key_id=seal.key_id, signature=seal.signature)
        return AppendResult(True, stored)

    # -- chain links ----------------------------------------------------------------------------

    def append_link(self, new: NewLink, sealer: Sealer) -> tuple[bool, StoredLink]:
        """Appends a link at the chain's next sequence; an existing link ID returns the stored one
        (created False) for the caller to compare."""
        return self._serialized(lambda conn: self._append_link(conn, new, sealer))

    def _append_link(self, conn: Connection, new: NewLink, sealer: Sealer) -> tuple[bool, StoredLink]:
        head = self._lock_head(conn, new.tenant_id)
        existing = conn.execute(sa.select(chain_links).where(
            chain_links.c.tenant_id == new.tenant_id, chain_links.c.link_id == new.link_id)).first()
        if existing is not None:
            return False, _link(existing)
        sequence = head.sequence + 1
        seal = sealer(sequence, head.record_hash)
        values = {"tenant_id": new.tenant_id, "link_id": new.link_id, "sequence": sequence, "kind": new.kind,
                  "subject_trace_id": new.subject_trace_id, "subject_ref": new.subject_ref,
                  "created_at": new.created_at, "body": new.body, "previous_hash": head.record_hash,
                  "link_hash": seal.hash, "key_id": seal.key_id, "signature": seal.signature}
        conn.execute(_LINK_INSERT, values)
        self._move_head(conn, new.tenant_id, sequence, seal.hash)
        return True, StoredLink(**values)

    def links(self, tenant_id: str, subject_trace_id: str | None = None, subject_ref: str | None = None,
              after_sequence: int = 0, limit: int = 500) -> list[StoredLink]:
        query = sa.select(chain_links).where(chain_links.c.tenant_id == tenant_id,
                                             chain_links.c.sequence > after_sequence)
        if subject_trace_id is not None:
            query = query.where(chain_links.c.subject_trace_id == subject_trace_id)
        if subject_ref is not None:
            query = query.where(chain_links.c.subject_ref == subject_ref)
        with self.engine.connect() as conn:
            return [_link(r) for r in conn.execute(query.order_by(chain_links.c.sequence).limit(limit))]

    def _select_records(self):
        rec = records
        return (
            sa.select(rec, queries.c.raw, queries.c.normalized, queries.c.nonce, queries.c.redacted,
                      _needs_review_expr(rec).label("needs_review"))
            .select_from(rec.outerjoin(queries, sa.and_(queries.c.tenant_id == rec.c.tenant_id,
                                                         queries.c.trace_id == rec.c.trace_id)))
        )

    def _facets_for(self, conn: Connection, tenant_id: str, trace_ids: Sequence[str]) -> dict[str, set]:
        out: dict[str, set] = {t: set() for t in trace_ids}
        if not trace_ids:
            return out
        rows = conn.execute(sa.select(facets.c.trace_id, facets.c.kind, facets.c.value).where(
            facets.c.tenant_id == tenant_id, facets.c.trace_id.in_(list(trace_ids))))
        for row in rows:
            out[row.trace_id].add((row.kind, row.value))
        return out

    @staticmethod
    def _row(row, facet_rows: set) -> StoredRecord:
        return StoredRecord(
            tenant_id=row.tenant_id, trace_id=row.trace_id, sequence=int(row.sequence), created_at=row.created_at,
            outcome=int(row.outcome), principal_ref=row.principal_ref, body=bytes(row.body),
            previous_hash=row.previous_hash, record_hash=row.record_hash, query_digest=row.query_digest,
            query_raw=row.raw or "", query_normalized=row.normalized or "",
            nonce=bytes(row.nonce) if row.nonce is not None else None, redacted=bool(row.redacted),
            needs_review=bool(row.needs_review), facets=frozenset(facet_rows), key_id=row.key_id or "",
            signature=row.signature or "")

    def _get(self, conn: Connection, tenant_id: str, trace_id: str) -> StoredRecord | None:
        row = conn.execute(self._select_records().where(
            records.c.tenant_id == tenant_id, records.c.trace_id == trace_id)).first()
        if row is None:
            return None
        return self._row(row, self._facets_for(conn, tenant_id, [trace_id])[trace_id])

    def get(self, tenant_id: str, trace_id: str) -> StoredRecord | None:
        with self.engine.connect() as conn:
            return self._get(conn, tenant_id, trace_id)

    def list(self, tenant_id: str, flt: ListFilter, before_sequence: int | None, limit: int) -> list[StoredRecord]:
        query = self._select_records().where(records.c.tenant_id == tenant_id)
        if before_sequence is not None:
            query = query.where(records.c.sequence < before_sequence)

        def has_facet(kind: str, value: str):
            return sa.exists(sa.select(1).where(
                facets.c.tenant_id == records.c.tenant_id, facets.c.trace_id == records.c.trace_id,
                facets.c.kind == kind, facets.c.value == value))

        if flt.outcome:
            query = query.where(sa.or_(records.c.outcome == flt.outcome,
                                       has_facet("part_outcome", str(flt.outcome))))
        if flt.failure_reason:
            query = query.where(has_facet("reason", str(flt.failure_reason)))
        if flt.document_id:
            query = query.where(has_facet("document", flt.document_id))
        if flt.version_id:
            query = query.where(has_facet("version", flt.version_id))
        if flt.created_after is not None:
            query = query.where(records.c.created_at >= flt.created_after)
        if flt.created_before is not None:
            query = query.where(records.c.created_at < flt.created_before)
        if flt.needs_review:
            query = query.where(_needs_review_expr(records))
        query = query.order_by(records.c.sequence.desc()).limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            found = self._facets_for(conn, tenant_id, [r.trace_id for r in rows])
            return [self._row(r, found[r.trace_id]) for r in rows]

    def chain(self, tenant_id: str, batch: int = 500) -> Iterator[StoredRecord]:
        after = 0
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    self._select_records()
                    .where(records.c.tenant_id == tenant_id, records.c.sequence > after)
                    .order_by(records.c.sequence).limit(batch)).all()
                found = self._facets_for(conn, tenant_id, [r.trace_id for r in rows])
            if not rows:
                return
            for row in rows:
                yield self._row(row, found[row.trace_id])
            after = int(rows[-1].sequence)

    def head(self, tenant_id: str) -> ChainHead | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(heads.c.sequence, heads.c.record_hash)
                               .where(heads.c.tenant_id == tenant_id)).first()
        return None if row is None else ChainHead(int(row.sequence), row.record_hash)

    def tenants(self) -> list[str]:
        with self.engine.connect() as conn:
            return [r[0] for r in conn.execute(sa.select(heads.c.tenant_id).order_by(heads.c.tenant_id))]

    # -- reviews, version events, redactions ------------------------------------------------------

    def add_review(self, row: ReviewRow, link: NewLink, sealer: Sealer) -> None:
        """The review row and its chain link, in one transaction."""
        def work(conn: Connection) -> None:
            conn.execute(reviews.insert().values(
                review_id=row.review_id, tenant_id=row.tenant_id, trace_id=row.trace_id, decision=row.decision,
                reviewer_ref=row.reviewer_ref, rubric_note=row.rubric_note,
                answer_record_hash=row.answer_record_hash,
                evidence_version_ids=json.dumps(list(row.evidence_version_ids)),
                source_policy_version=row.source_policy_version, created_at=row.created_at))
            self._append_link(conn, link, sealer)

        self._serialized(work)

    def list_reviews(self, tenant_id: str, trace_id: str, offset: int, limit: int) -> list[ReviewRow]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(reviews).where(reviews.c.tenant_id == tenant_id, reviews.c.trace_id == trace_id)
                .order_by(reviews.c.created_at, reviews.c.review_id).offset(offset).limit(limit)).all()
        return [_review(r) for r in rows]

    def add_version_event(self, row: VersionEventRow, link: NewLink, sealer: Sealer) -> int:
        """Appends the event and its chain link; returns how many of the tenant's records cited the
        version before it.

        Idempotent: the same event again (tenant, version, kind, replaced_by) appends nothing and
        counts against the first one's time. Retrieval delivers its events at least once, and a
        repeated event must not make already re-reviewed answers need review again.

        The chain head is locked BEFORE looking for the first event: two replicas recording the same
        event at once (each retrieval replica's relay delivers the store's queue at least once) would
        otherwise both find none, both insert an event row, and the second row's link would be the
        first's (same link id): an event row that is no link of the chain."""
        def work(conn: Connection) -> int:
            self._lock_head(conn, row.tenant_id)
            first = conn.execute(sa.select(version_events.c.created_at).where(
                version_events.c.tenant_id == row.tenant_id, version_events.c.version_id == row.version_id,
                version_events.c.kind == row.kind,
                version_events.c.replaced_by_version_id == row.replaced_by_version_id)
                .order_by(version_events.c.id).limit(1)).scalar()
            if first is None:
                conn.execute(version_events.insert().values(
                    tenant_id=row.tenant_id, version_id=row.version_id, kind=row.kind,
                    replaced_by_version_id=row.replaced_by_version_id, actor_ref=row.actor_ref,
                    created_at=row.created_at))
                self._append_link(conn, link, sealer)
            created_at = row.created_at if first is None else first
            return int(conn.execute(
                sa.select(sa.func.count()).select_from(records.join(facets, sa.and_(
                    facets.c.tenant_id == records.c.tenant_id, facets.c.trace_id == records.c.trace_id)))
                .where(records.c.tenant_id == row.tenant_id, facets.c.kind == "version",
                       facets.c.value == row.version_id, records.c.created_at < created_at)).scalar_one())

        return self._serialized(work)

    def redact_older_than(self, tenant_id: str, cutoff: dt.datetime, reason: str, actor_ref: str,
                          now: dt.datetime, link_of: Callable[[RedactionRow], NewLink],
                          seal_link: Callable[[NewLink], Sealer]) -> int:
        """One transaction: per record a redaction event and its chain link, then the query text and
        nonce erased (the trigger allows that only where the redaction event is stored)."""
        def work(conn: Connection) -> int:
            targets = [r.trace_id for r in conn.execute(
                sa.select(records.c.trace_id).select_from(records.join(queries, sa.and_(
                    queries.c.tenant_id == records.c.tenant_id, queries.c.trace_id == records.c.trace_id)))
                .where(records.c.tenant_id == tenant_id, records.c.created_at < cutoff,
                       queries.c.redacted.is_(False)).order_by(records.c.sequence))]
            if not targets:
                return 0
            rows = [RedactionRow(tenant_id, t, now, reason, actor_ref) for t in targets]
            conn.execute(redactions.insert(), [dataclasses.asdict(r) for r in rows])
            for r in rows:
                link = link_of(r)
                self._append_link(conn, link, seal_link(link))
            for chunk in _chunks(targets, 500):
                conn.execute(queries.update()
                             .where(queries.c.tenant_id == tenant_id, queries.c.trace_id.in_(chunk))
                             .values(raw="", normalized="", nonce=None, redacted=True))
            return len(targets)

        return self._serialized(work)

    def signed_key_ids(self) -> set[str]:
        """The key IDs that signed stored items (empty before the schema exists)."""
        try:
            with self.engine.connect() as conn:
                found = {r[0] for r in conn.execute(sa.select(records.c.key_id).distinct())}
                found |= {r[0] for r in conn.execute(sa.select(chain_links.c.key_id).distinct())}
        except sa.exc.DBAPIError:  # tables or columns not migrated yet: nothing is signed
            return set()
        return found - {""}

    def review_backlog(self, cutoff: dt.datetime) -> int:
        """Records of every tenant needing re-review because of a version event older than `cutoff`
        (superseded or retired evidence nobody has re-reviewed since)."""
        rec = records
        newer_review = (
            sa.select(1).select_from(reviews)
            .where(reviews.c.tenant_id == rec.c.tenant_id, reviews.c.trace_id == rec.c.trace_id,
                   reviews.c.created_at > version_events.c.created_at)
            .correlate(rec, version_events)
        )
        overdue = (
            sa.select(1)
            .select_from(facets.join(version_events, sa.and_(version_events.c.tenant_id == facets.c.tenant_id,
                                                             version_events.c.version_id == facets.c.value)))
            .where(facets.c.tenant_id == rec.c.tenant_id, facets.c.trace_id == rec.c.trace_id,
                   facets.c.kind == "version", version_events.c.created_at > rec.c.created_at,
                   version_events.c.created_at < cutoff, ~sa.exists(newer_review))
            .correlate(rec)
            .exists()
        )
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(rec).where(overdue)).scalar_one())

    def tenant_events(self, tenant_id: str) -> TenantEvents:
        with self.engine.connect() as conn:
            review_rows = conn.execute(sa.select(reviews).where(reviews.c.tenant_id == tenant_id)).all()
            event_rows = conn.execute(sa.select(version_events).where(version_events.c.tenant_id == tenant_id)
                                      .order_by(version_events.c.id)).all()
            redaction_rows = conn.execute(sa.select(redactions).where(redactions.c.tenant_id == tenant_id)
                                          .order_by(redactions.c.id)).all()
        return TenantEvents(
            reviews=[_review(r) for r in review_rows],
            version_events=[VersionEventRow(r.tenant_id, r.version_id, int(r.kind), r.replaced_by_version_id,
                                            r.actor_ref, r.created_at) for r in event_rows],
            redactions=[RedactionRow(r.tenant_id, r.trace_id, r.redacted_at, r.reason, r.actor_ref)
                        for r in redaction_rows])

    def redactions(self, tenant_id: str, trace_id: str) -> list[RedactionRow]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(redactions).where(
                redactions.c.tenant_id == tenant_id, redactions.c.trace_id == trace_id)
                .order_by(redactions.c.id)).all()
        return [RedactionRow(r.tenant_id, r.trace_id, r.redacted_at, r.reason, r.actor_ref) for r in rows]


def _link(row) -> StoredLink:
    return StoredLink(
        tenant_id=row.tenant_id, link_id=row.link_id, sequence=int(row.sequence), kind=row.kind,
        subject_trace_id=row.subject_trace_id, subject_ref=row.subject_ref, created_at=row.created_at,
        body=bytes(row.body), previous_hash=row.previous_hash, link_hash=row.link_hash,
        key_id=row.key_id or "", signature=row.signature or "")


def _review(r) -> ReviewRow:
    return ReviewRow(
        review_id=r.review_id, tenant_id=r.tenant_id, trace_id=r.trace_id, decision=int(r.decision),
        reviewer_ref=r.reviewer_ref, rubric_note=r.rubric_note, answer_record_hash=r.answer_record_hash,
        evidence_version_ids=tuple(json.loads(r.evidence_version_ids)),
        source_policy_version=r.source_policy_version, created_at=r.created_at)


def _chunks(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def open_store(url: str, migrate: bool = True) -> SqlTraceStore:
    store = SqlTraceStore(url)
    if migrate:
        store.migrate()
    return store
