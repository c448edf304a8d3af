"""The store on SQLite and PostgreSQL: append-only enforcement by the database, no chain fork under
concurrent writers (also across two store instances = two replicas), tamper detection."""

from __future__ import annotations

import datetime as dt
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sqlalchemy as sa
from citetrace.kit.auth import Principal
from citetrace.trace.v1 import trace_service_pb2 as pb
from tracefixtures import TENANT, core_on, make_record

from services.trace import canonical as C
from services.trace.core import TraceCore, TraceQuery
from services.trace.store import SqlTraceStore, open_store

WRITER = Principal(TENANT, "service:orchestrator", ("service",))
AUDITOR = Principal(TENANT, "auditor-1", ("auditor",))


@pytest.fixture
def store(store_url):
    s = open_store(store_url)
    yield s
    s.close()


def fill(core: TraceCore, n: int, prefix: str = "t") -> None:
    for i in range(n):
        core.record_trace(WRITER, make_record(f"{prefix}-{i:03d}"))


def test_migrations_are_idempotent(store_url):
    first = open_store(store_url)
    first.close()
    again = open_store(store_url)  # a restart runs the migrations again: nothing to do
    assert again.head(TENANT) is None
    again.close()


@pytest.mark.parametrize("statement", [
    "UPDATE trace_records SET outcome = 3",
    "DELETE FROM trace_records",
    "UPDATE trace_facets SET value = 'x'",
    "DELETE FROM trace_reviews",
    "UPDATE trace_queries SET raw = 'rewritten question'",
    "DELETE FROM trace_queries",
])
def test_the_database_rejects_update_and_delete(store, statement):
    core = core_on(store)
    fill(core, 2)
    core.record_review(Principal(TENANT, "rev-1", ("reviewer",)),
                       "t-000", pb.REVIEW_DECISION_ACCEPTED)
    with pytest.raises(sa.exc.DatabaseError) as caught, store.engine.begin() as conn:
        conn.exec_driver_sql(statement)
    assert "append-only" in str(caught.value) or "only allowed as a redaction" in str(caught.value) \
        or "is not allowed" in str(caught.value)
    assert core.verify_tenant(TENANT).ok
    assert core.verify_tenant(TENANT).records_checked == 3  # two records and the review's link


def test_postgres_rejects_truncate(postgres_url):
    store = open_store(postgres_url)
    core = core_on(store)
    fill(core, 1)
    with pytest.raises(sa.exc.DatabaseError), store.engine.begin() as conn:
        conn.exec_driver_sql("TRUNCATE trace_records CASCADE")
    assert core.verify_tenant(TENANT).records_checked == 1
    store.close()


def test_concurrent_writers_do_not_fork_the_chain(store_url):
    # Two store instances (two service replicas) and 8 threads writing to one tenant at once.
    stores = [open_store(store_url), SqlTraceStore(store_url)]
    keys = Path(tempfile.mkdtemp(prefix="citetrace-trace-"))  # one trace key, like two replicas share
    cores = [core_on(s, data_dir=keys) for s in stores]
    sent = [make_record(f"c-{i:03d}") for i in range(60)]

    def write(i: int) -> bool:
        return cores[i % 2].record_trace(WRITER, sent[i]).created

    with ThreadPoolExecutor(8) as pool:
        created = list(pool.map(write, range(60)))
        # Retries racing with each other: exactly one of each pair is the creating write.
        retried = list(pool.map(write, range(0, 60, 3)))
    assert all(created) and not any(retried)
    report = cores[0].verify_tenant(TENANT)
    assert report.ok, report.detail
    assert report.records_checked == 60
    sequences = [r.sequence for r in stores[0].chain(TENANT)]
    assert sequences == list(range(1, 61))
    for s in stores:
        s.close()


def _bypass(conn, dialect: str, table: str) -> None:
    """What an attacker with database access does: switch the guard off."""
    if dialect == "postgresql":
        conn.exec_driver_sql("SET session_replication_role = replica")
    else:
        for action in ("update", "delete"):
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {table}_no_{action}")
        if table == "trace_queries":
            conn.exec_driver_sql("DROP TRIGGER IF EXISTS trace_queries_redaction_only")


TAMPERING = {
    "outcome column": ("trace_records", "UPDATE trace_records SET outcome = 3 WHERE trace_id = 't-002'",
                       "indexed columns"),
    "body": ("trace_records", "UPDATE trace_records SET body = :body WHERE trace_id = 't-002'", "record_hash"),
    "question": ("trace_queries", "UPDATE trace_queries SET raw = 'a different question' WHERE trace_id = 't-002'",
                 "digest"),
    "facet": ("trace_facets", "UPDATE trace_facets SET value = 'v-forged' WHERE trace_id = 't-002' "
              "AND kind = 'version'", "facets"),
    "deleted record": ("trace_records", None, "sequence gap"),
}


@pytest.mark.parametrize("what", sorted(TAMPERING))
def test_editing_a_row_behind_the_service_is_reported(store, what):
    core = core_on(store)
    fill(core, 4)
    table, statement, expected = TAMPERING[what]
    forged = make_record("t-002", question="x")
    forged.outcome = 7
    with store.engine.begin() as conn:
        _bypass(conn, store.dialect, table)
        if what == "deleted record":
            _bypass(conn, store.dialect, "trace_facets")
            _bypass(conn, store.dialect, "trace_queries")
            for t in ("trace_facets", "trace_queries", "trace_records"):
                conn.execute(sa.text(f"DELETE FROM {t} WHERE trace_id = 't-002'"))
        else:
            conn.execute(sa.text(statement), {"body": C.body_bytes(forged)} if ":body" in statement else {})
    report = core.verify_chain(AUDITOR)
    assert not report.ok
    assert report.first_broken_sequence == 3
    assert report.first_broken_trace_id == ("t-003" if what == "deleted record" else "t-002")
    assert expected in report.detail


def test_rehashing_a_forged_record_still_breaks_the_next_link(store):
    core = core_on(store)
    fill(core, 3)
    target = store.get(TENANT, "t-001")
    forged = make_record("t-001", question="x", created_at=target.created_at)
    forged.outcome = 5
    body = C.body_bytes(forged)
    new_hash = C.record_hash(tenant_id=TENANT, trace_id="t-001", sequence=target.sequence,
                             previous_hash=target.previous_hash, query_digest=target.query_digest, body=body)
    with store.engine.begin() as conn:
        _bypass(conn, store.dialect, "trace_records")
        conn.execute(sa.text("UPDATE trace_records SET body = :b, record_hash = :h, outcome = 5 "
                             "WHERE trace_id = 't-001'"), {"b": body, "h": new_hash})
    report = core.verify_tenant(TENANT)
    # The recomputed hash is not signed by the trace key: reported at the forged record itself.
    assert not report.ok and report.first_broken_trace_id == "t-001" and report.first_broken_sequence == 2
    assert "signature INVALID" in report.detail


def test_truncating_the_tail_is_reported_by_the_chain_head(store):
    core = core_on(store)
    fill(core, 3)
    with store.engine.begin() as conn:
        for t in ("trace_facets", "trace_queries", "trace_records"):
            _bypass(conn, store.dialect, t)
        for t in ("trace_facets", "trace_queries", "trace_records"):
            conn.execute(sa.text(f"DELETE FROM {t} WHERE trace_id = 't-002'"))
    report = core.verify_tenant(TENANT)
    assert not report.ok and "records missing at the end" in report.detail


def test_redaction_keeps_the_chain_verifiable_and_erases_the_nonce(store):
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    core = core_on(store)
    for i in range(3):
        core.record_trace(WRITER, make_record(f"r-{i}", created_at=now - dt.timedelta(days=100 - i)))
    before = [r.record_hash for r in store.chain(TENANT)]
    assert core.apply_retention(AUDITOR, 30) == 3
    rows = list(store.chain(TENANT))
    assert [r.record_hash for r in rows] == before
    assert all(r.redacted and r.nonce is None and r.query_raw == "" for r in rows)
    assert core.verify_tenant(TENANT).ok
    with store.engine.begin() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM trace_redactions")).scalar_one() == 3


def test_record_hash_is_deterministic_and_covers_every_input():
    rec = make_record("h-1", created_at=dt.datetime(2026, 1, 2, 3, 4, 5))
    body = C.body_bytes(rec)
    assert body == C.body_bytes(pb.TraceRecord.FromString(rec.SerializeToString()))
    # The body carries no query text.
    assert b"MRI?" not in body and rec.query.raw.encode() not in body
    args = dict(tenant_id=TENANT, trace_id="h-1", sequence=1, previous_hash=C.GENESIS_HASH,
                query_digest="a" * 64, body=body)
    base = C.record_hash(**args)
    assert base == C.record_hash(**args)
    for key, value in [("tenant_id", "cedar-care"), ("trace_id", "h-2"), ("sequence", 2),
                       ("previous_hash", "1" * 64), ("query_digest", "b" * 64), ("body", body + b"\x00")]:
        assert C.record_hash(**{**args, key: value}) != base, key
    nonce = b"n" * 32
    assert C.query_digest("q", "q", nonce) != C.query_digest("q", "q", b"m" * 32)
    assert C.query_digest("ab", "c", nonce) != C.query_digest("a", "bc", nonce)


def _start_replica(url: str) -> bool:
    store = open_store(url)
    store.close()
    return True


@pytest.mark.slow
def test_replicas_migrating_at_once_all_come_up(store_url):
    import multiprocessing

    # Three processes (replicas) and two threads of this one start on an empty database at once.
    with multiprocessing.get_context("spawn").Pool(3) as procs, ThreadPoolExecutor(2) as threads:
        started = procs.map_async(_start_replica, [store_url] * 3)
        assert all(threads.map(_start_replica, [store_url] * 2))
        assert all(started.get(120))
    store = open_store(store_url)
    core = core_on(store)
    fill(core, 1)
    assert core.verify_tenant(TENANT).ok
    store.close()


def test_a_review_clears_re_review_only_for_its_own_trace(store):
    core = core_on(store)
    created = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=1)
    for trace_id in ("rr-1", "rr-2"):
        core.record_trace(WRITER, make_record(trace_id, created_at=created))
    reviewer = Principal(TENANT, "rev-1", ("reviewer",))
    core.record_version_event(Principal(TENANT, "admin", ("policy_admin",)),
        make_record("x").parts[0].citations[0].version_id, pb.VERSION_EVENT_KIND_RETIRED)

    def needing():
        return [t.trace_id for t in core.list_traces(AUDITOR, TraceQuery(needs_review=True)).items]

    assert needing() == ["rr-2", "rr-1"]
    core.record_review(reviewer, "rr-1", pb.REVIEW_DECISION_ACCEPTED)
    assert needing() == ["rr-2"]
    assert store.get(TENANT, "rr-2").needs_review and not store.get(TENANT, "rr-1").needs_review


def test_a_repeated_version_event_is_harmless(store):
    """Retrieval delivers version events at least once: the same event again appends nothing,
    counts the same traces, and does not flag an answer reviewed after the first delivery."""
    core = core_on(store)
    created = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=1)
    core.record_trace(WRITER, make_record("rep-1", created_at=created))
    version_id = make_record("x").parts[0].citations[0].version_id
    retrieval = Principal(TENANT, "service:retrieval", ("service",))
    event = (version_id, pb.VERSION_EVENT_KIND_SUPERSEDED, "v" + "9" * 63)
    assert core.record_version_event(retrieval, *event) == 1

    def needing():
        return [t.trace_id for t in core.list_traces(AUDITOR, TraceQuery(needs_review=True)).items]

    assert needing() == ["rep-1"]
    core.record_review(Principal(TENANT, "rev-1", ("reviewer",)),
                       "rep-1", pb.REVIEW_DECISION_ACCEPTED)
    assert needing() == []
    core.record_trace(WRITER, make_record("rep-2"))  # created after the first delivery
    assert core.record_version_event(retrieval, *event) == 1  # the redelivery: same count, same time
    assert needing() == []
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM trace_version_events")).scalar_one() == 1
    # A different event on the same version (another successor, or retirement) is a new event.
    core.record_version_event(retrieval, version_id, pb.VERSION_EVENT_KIND_RETIRED)
    assert sorted(needing()) == ["rep-1", "rep-2"]


def _append_from_replica(url: str, keys: str, prefix: str, count: int) -> int:
    """One trace replica (its own process and engine): `count` records from 4 threads at once."""
    store = open_store(url)
    core = core_on(store, data_dir=Path(keys))
    with ThreadPoolExecutor(4) as pool:
        created = sum(pool.map(lambda i: core.record_trace(WRITER, make_record(f"{prefix}-{i:03d}")).created,
                               range(count)))
    store.close()
    return created


@pytest.mark.slow
def test_two_replica_processes_appending_to_one_chain_serialize(postgres_url):
    """Issue 21 point 3: two processes append to one tenant's chain on PostgreSQL at once; the
    chain-head row lock (SELECT ... FOR UPDATE) makes it one linear chain: sequences 1..N with no
    gap or duplicate, each record's previous hash the one before it, and VerifyChain passes."""
    import multiprocessing

    keys = tempfile.mkdtemp(prefix="citetrace-trace-")
    store = open_store(postgres_url)
    core = core_on(store, data_dir=Path(keys))  # creates the one signing key both replicas share
    count = 80
    with multiprocessing.get_context("spawn").Pool(2) as procs:
        results = procs.starmap_async(_append_from_replica,
                                      [(postgres_url, keys, "ra", count), (postgres_url, keys, "rb", count)])
        created = results.get(240)
    assert created == [count, count]
    chain = list(store.chain(TENANT))
    assert [r.sequence for r in chain] == list(range(1, 2 * count + 1))
    assert len({r.trace_id for r in chain}) == 2 * count
    assert {r.trace_id[:2] for r in chain} == {"ra", "rb"}
    for before, after in zip(chain, chain[1:], strict=False):
        assert after.previous_hash == before.record_hash, after.sequence
    report = core.verify_tenant(TENANT)
    assert report.ok, report.detail
    assert report.records_checked == 2 * count
    store.close()


def test_a_write_past_its_callers_deadline_leaves_no_row(store):
    # Issue 17 point 4: the check runs inside the transaction, so the append rolls back.
    from citetrace.kit.context import call_context
    from citetrace.kit.errors import DeadlineExceeded

    core = core_on(store)
    with call_context(WRITER, None, timeout=-1.0), pytest.raises(DeadlineExceeded):
        core.record_trace(WRITER, make_record("t-late"))
    with sa.create_engine(store.engine.url).connect() as conn:
        assert conn.execute(sa.text("SELECT COUNT(*) FROM trace_records")).scalar() == 0


def test_the_same_version_event_from_two_replicas_at_once_is_one_event_and_one_link(postgres_url):
    """Issue 21 point 3: every retrieval replica's relay delivers the store's version-event queue at
    least once, so two trace replicas can record one event at the same moment. The head lock is taken
    before the event is looked for: one event row, one chain link, and the chain verifies (before the
    fix both found none, both stored a row, and VerifyChain reported the second row as no link)."""
    import threading

    keys = Path(tempfile.mkdtemp(prefix="citetrace-trace-"))
    stores = [open_store(postgres_url) for _ in range(2)]
    cores = [core_on(s, data_dir=keys) for s in stores]  # two replicas: own engines, one key
    core_on(stores[0], data_dir=keys).record_trace(WRITER, make_record("t-cites"))
    start = threading.Barrier(8)

    def record(n: int) -> None:
        start.wait()
        cores[n % 2].record_version_event(WRITER, "v" + "1" * 63, pb.VERSION_EVENT_KIND_SUPERSEDED, "v" + "3" * 63)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(record, range(8)))
    with stores[0].engine.connect() as conn:
        events = conn.execute(sa.text("SELECT COUNT(*) FROM trace_version_events")).scalar()
        links = conn.execute(sa.text("SELECT COUNT(*) FROM trace_chain_links")).scalar()
    assert (events, links) == (1, 1)
    report = cores[1].verify_tenant(TENANT)
    assert report.ok, report.detail
    assert report.records_checked == 2
    for s in stores:
        s.close()
