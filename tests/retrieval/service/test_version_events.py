"""Supersession and retirement reach the trace service (issue 7: the answers that cited a version
are listed as needing re-review). Real retrieval and real trace services over gRPC; the version
event is queued in retrieval's store of record with the change and delivered in the background,
also after the trace service was down."""

from __future__ import annotations

import contextlib
import socket
import time
from datetime import UTC, datetime

import grpc
import pytest
import sqlalchemy as sa
from citetrace.common.v1 import common_pb2 as c
from citetrace.kit.server import ServiceRunner
from citetrace.kit.settings import ServerSettings
from citetrace.kit.testing import service_metadata, token_metadata
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as rpb_grpc
from citetrace.trace.v1 import trace_service_pb2 as tpb
from citetrace.trace.v1 import trace_service_pb2_grpc as tpb_grpc

from services.retrieval.bootstrap import build_spec as retrieval_spec
from services.retrieval.settings import Settings as RetrievalSettings
from services.trace.bootstrap import build_spec as trace_spec
from services.trace.settings import Settings as TraceSettings

from .conftest import T2024, T2025, Client

TENANT = "cedar-care"
TEXT_A = "# Arrival\n\nArrive 15 minutes before a family medicine visit at Cedar Main Street Clinic (synthetic).\n"
TEXT_B = "# Arrival\n\nArrive 20 minutes before a family medicine visit at Cedar Main Street Clinic (synthetic).\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def trace_at(auth, data_dir, port: int):
    """A trace service on a fixed port (so it can be stopped and started again at the same address)."""
    spec = trace_spec(TraceSettings(port=0, metrics_port=-1, data_dir=data_dir))
    runner = ServiceRunner(spec, ServerSettings(port=port, metrics_port=-1, grace_seconds=0.2), auth)
    runner.start()
    runner.warm_up()
    try:
        yield runner
    finally:
        runner.stop(0.2)


@pytest.fixture
def world(auth, tmp_path):
    port = _free_port()
    settings = RetrievalSettings(port=0, metrics_port=-1, data_dir=tmp_path / "retrieval",
                                 trace_target=f"127.0.0.1:{port}", version_event_poll_seconds=0.2,
                                 version_event_backoff_seconds=0.1, version_event_max_backoff_seconds=0.5)
    spec = retrieval_spec(settings, auth=auth)
    runner = ServiceRunner(spec, ServerSettings(port=0, metrics_port=-1, grace_seconds=0.2), auth)
    runner.start()
    runner.warm_up()
    try:
        with grpc.insecure_channel(runner.address) as channel:
            client = Client(rpb_grpc.RetrievalServiceStub(channel), auth, runner, spec.servicer.core)
            yield client, port, tmp_path / "trace"
    finally:
        runner.stop(0.2)


def _record_citing(auth, trace_stub, trace_id: str, passage) -> None:
    """A trace whose answer cites `passage` (a PassageIdentity from IngestDocument)."""
    i = passage
    citation = c.Citation(label="S1", passage_id=i.passage_id, document_id=i.document_id, version_id=i.version_id,
                          start=i.start, end=i.end, content_sha256=i.content_sha256, source_anchor=i.source_anchor,
                          source_class=i.source_class)
    record = tpb.TraceRecord(trace_id=trace_id, tenant_id=TENANT, outcome=c.PART_OUTCOME_ANSWERED,
                             parts=[tpb.PartRecord(part_id="p1", citations=[citation],
                                                   outcome=c.PART_OUTCOME_ANSWERED)])
    trace_stub.RecordTrace(tpb.RecordTraceRequest(record=record), timeout=10, metadata=service_metadata(TENANT))


def _needing_review(auth, trace_stub) -> list[str]:
    reply = trace_stub.ListTraces(tpb.ListTracesRequest(needs_review=True), timeout=10,
                                  metadata=token_metadata(auth, TENANT, ("auditor",)))
    return sorted(t.trace_id for t in reply.traces)


def _wait(predicate, seconds: float = 20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return predicate()


def test_supersession_and_retirement_flag_the_citing_answers_for_re_review(world, auth):
    client, port, trace_dir = world
    with trace_at(auth, trace_dir, port), grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        trace_stub = tpb_grpc.TraceServiceStub(ch)
        a = client.ingest(TENANT, "cedar-arrival", TEXT_A, valid_from=T2024)
        _record_citing(auth, trace_stub, "tr-cites-a", a.passages[0])
        assert _needing_review(auth, trace_stub) == []

        b = client.ingest(TENANT, "cedar-arrival", TEXT_B, valid_from=T2025)
        assert list(b.superseded_version_ids) == [a.version.version_id]
        assert _wait(lambda: _needing_review(auth, trace_stub)) == ["tr-cites-a"]
        events = client.core.store.version_events(TENANT)
        assert [(e.version_id, e.kind, e.replaced_by_version_id) for e in events] == [
            (a.version.version_id, "superseded", b.version.version_id)]
        assert _wait(lambda: client.core.store.version_events(TENANT)[0].delivered_at is not None)

        _record_citing(auth, trace_stub, "tr-cites-b", b.passages[0])
        client.set_status(TENANT, b.version.version_id, "retired")
        assert _wait(lambda: "tr-cites-b" in _needing_review(auth, trace_stub))
        events = client.core.store.version_events(TENANT)
        assert [(e.version_id, e.kind, e.replaced_by_version_id) for e in events][-1] == (
            b.version.version_id, "retired", "")
        assert _wait(lambda: client.core.store.pending_version_event_count() == 0)


def test_events_wait_in_the_store_while_trace_is_down_and_are_delivered_when_it_returns(world, auth):
    client, port, trace_dir = world
    with trace_at(auth, trace_dir, port), grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        a = client.ingest(TENANT, "cedar-arrival", TEXT_A, valid_from=T2024)
        _record_citing(auth, tpb_grpc.TraceServiceStub(ch), "tr-down", a.passages[0])
    # Trace is down now: the supersession commits and its event waits, retried with backoff.
    client.ingest(TENANT, "cedar-arrival", TEXT_B, valid_from=T2025)
    store = client.core.store
    assert _wait(lambda: store.version_events(TENANT)[0].attempts >= 2)
    pending = store.version_events(TENANT)[0]
    assert pending.delivered_at is None and pending.last_error
    with trace_at(auth, trace_dir, port), grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        trace_stub = tpb_grpc.TraceServiceStub(ch)
        assert _wait(lambda: store.pending_version_event_count() == 0, 30)
        assert _needing_review(auth, trace_stub) == ["tr-down"]
    # Exactly one event on the trace side, however many attempts it took.
    with sa.create_engine(f"sqlite:///{trace_dir / 'trace.db'}").connect() as conn:
        kinds = conn.execute(sa.text("SELECT kind, replaced_by_version_id FROM trace_version_events")).all()
    assert len(kinds) == 1 and kinds[0][0] == tpb.VERSION_EVENT_KIND_SUPERSEDED


def test_the_event_is_written_with_the_change_or_not_at_all(world, auth):
    """No event without its change: an illegal transition commits neither; a draft approved behind
    nothing supersedes nothing."""
    client, _, _ = world
    d = client.ingest(TENANT, "cedar-draft", TEXT_A, status="draft", valid_from=T2024)
    client.set_status(TENANT, d.version.version_id, "approved")
    assert client.core.store.version_events(TENANT) == []
    with pytest.raises(grpc.RpcError) as caught:
        client.set_status(TENANT, d.version.version_id, "draft")
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert client.core.store.version_events(TENANT) == []
    stamp = datetime.now(UTC)
    client.set_status(TENANT, d.version.version_id, "retired")
    (event,) = client.core.store.version_events(TENANT)
    assert event.kind == "retired" and event.created_at >= stamp.replace(microsecond=0)


def test_citetrace_up_tells_retrieval_where_trace_listens(tmp_path):
    from citetrace.kit.stack import SERVICES

    from apps.cli import stack

    info = next(i for i in SERVICES if i.name == "retrieval")
    env = stack._service_env(info, tmp_path, 100)
    assert env["CITETRACE_RETRIEVAL_TRACE_TARGET"] == "127.0.0.1:50156"
    assert not any(k.startswith("CITETRACE_RETRIEVAL_") and k.endswith("_TARGET") and "TRACE" not in k for k in env)


def test_the_outbox_on_postgresql(auth, tmp_path, postgres_url):
    """The same events on PostgreSQL (migration 0002, BigInteger identity), queued while no relay runs."""
    from .conftest import running_service

    # A dead trace target: even with CITETRACE_AUTH_* in the environment nothing is delivered.
    with running_service(auth, tmp_path, database_url=postgres_url, trace_target="127.0.0.1:9") as svc:
        a = svc.ingest(TENANT, "cedar-arrival", TEXT_A, valid_from=T2024)
        b = svc.ingest(TENANT, "cedar-arrival", TEXT_B, valid_from=T2025)
        svc.set_status(TENANT, b.version.version_id, "retired")
        events = svc.core.store.version_events(TENANT)
        assert [(e.version_id, e.kind, e.replaced_by_version_id) for e in events] == [
            (a.version.version_id, "superseded", b.version.version_id), (b.version.version_id, "retired", "")]
        assert events[0].id < events[1].id and svc.core.store.pending_version_event_count() == 2


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_tenants_version_events_are_delivered_in_the_order_written(request, tmp_path, backend):
    """A retirement must not reach trace before the supersession written ahead of it: while one
    event waits out a backoff, its tenant's later events wait behind it (another tenant's do not)."""
    from outbox_order import assert_each_tenant_in_written_order
    from sqlalchemy.orm import Session

    from services.retrieval.store.models import VersionEventOutboxRow
    from services.retrieval.store.store import Store
    from services.retrieval.version_events import VersionEventRelay

    url = f"sqlite:///{tmp_path / 'retrieval.db'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    store = Store(url)
    store.migrate()
    now = datetime(2026, 1, 5, 9, tzinfo=UTC)

    def write(tenant: str) -> int:
        with Session(store.engine) as s, s.begin():
            row = VersionEventOutboxRow(tenant_id=tenant, version_id="v", kind="retired", replaced_by_version_id="",
                                        created_at=now, attempts=0, next_attempt_at=now, delivered_at=None,
                                        last_error="")
            s.add(row)
            s.flush()
            return row.id

    try:
        outbox = VersionEventRelay(store, lambda event: None).outbox
        assert_each_tenant_in_written_order(outbox, write, now)
    finally:
        store.close()
