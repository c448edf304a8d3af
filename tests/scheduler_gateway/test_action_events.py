"""Action events reach the trace service as links of the tenant's hash chain (real gRPC between a
gateway and a trace service, SQLite and PostgreSQL for the scheduling database): every proposal,
confirmation, rejection, failure and expiry, linked to the Ask trace that produced it; nothing is
lost while trace is down (the outbox keeps the events and the relay delivers them later)."""

from __future__ import annotations

import contextlib
import time

import grpc
from citetrace.kit.server import ServiceRunner
from citetrace.kit.settings import ServerSettings
from citetrace.kit.testing import serving
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc
from citetrace.trace.v1 import trace_service_pb2 as tpb
from citetrace.trace.v1 import trace_service_pb2_grpc as tpb_grpc
from sqlalchemy import select

from services.scheduler_gateway import schema
from services.scheduler_gateway.bootstrap import build_spec
from services.scheduler_gateway.settings import Settings
from services.trace.bootstrap import build_spec as trace_spec
from services.trace.settings import Settings as TraceSettings

from .conftest import NOW, FixedClock, load, world
from .workflow_fixtures import assistant_for, book, confirm, patient, reject, reschedule, rows, staff

ASK = "0af7651916cd43dd8448eb211c80319c"


@contextlib.contextmanager
def trace_running(auth, tmp_path, port: int = 0):
    spec = trace_spec(TraceSettings(port=port, metrics_port=-1, data_dir=tmp_path / "trace"))
    runner = ServiceRunner(spec, ServerSettings(port=port, metrics_port=-1, grace_seconds=0.5), auth)
    runner.start()
    try:
        runner.warm_up()
        with grpc.insecure_channel(runner.address) as channel:
            yield runner, tpb_grpc.TraceServiceStub(channel)
    finally:
        runner.stop(0.5)


@contextlib.contextmanager
def gateway_to(auth, url: str, trace_target: str):
    load(url, world())
    spec = build_spec(Settings(port=0, metrics_port=-1, database_url=url, expiry_sweep_seconds=0,
                               trace_target=trace_target, action_event_poll_seconds=0.2,
                               action_event_backoff_seconds=0.1, action_event_max_backoff_seconds=0.5),
                      clock=FixedClock(NOW), auth=auth)
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        yield pb_grpc.SchedulerGatewayServiceStub(channel)


def links_of(trace_stub, md, proposal_id: str, want: int, timeout: float = 15.0) -> list:
    deadline = time.monotonic() + timeout
    while True:
        found = list(trace_stub.ListChainLinks(tpb.ListChainLinksRequest(proposal_id=proposal_id), timeout=10,
                                               metadata=md).links)
        if len(found) >= want or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_every_workflow_step_is_a_chain_link_of_its_ask(auth, tmp_path, db_url):
    with trace_running(auth, tmp_path) as (runner, trace_stub), gateway_to(auth, db_url, runner.address) as stub:
        reader = staff(auth)
        moved = reschedule(stub, assistant_for(auth, "pat-1"))
        confirm(stub, patient(auth, "pat-1"), moved.proposal_id)
        declined = reschedule(stub, assistant_for(auth, "pat-2"), appointment_id="appt-2", slots=[("ng-3", 1)])
        reject(stub, patient(auth, "pat-2"), declined.proposal_id, note="no")
        first = links_of(trace_stub, reader, moved.proposal_id, 2)
        assert [link.action.kind for link in first] == [tpb.ACTION_EVENT_KIND_PROPOSED, tpb.ACTION_EVENT_KIND_CONFIRMED]
        proposed, confirmed = (link.action for link in first)
        assert proposed.ask_trace_id == ASK and first[0].subject_trace_id == ASK
        assert proposed.actor_ref == "pat-1 via service:orchestrator" and confirmed.actor_ref == "pat-1"
        assert confirmed.appointment_before.version == 1 and confirmed.appointment_after.version == 2
        assert confirmed.appointment_after.slot_id == "ns-2" and confirmed.slot.version == 2
        assert confirmed.proposal.status == 2 and confirmed.source_service == "scheduler_gateway"
        assert first[1].previous_hash == first[0].link_hash
        second = links_of(trace_stub, reader, declined.proposal_id, 2)
        assert second[1].action.kind == tpb.ACTION_EVENT_KIND_REJECTED
        assert second[1].action.proposal.decision_note == "no"
        report = trace_stub.VerifyChain(tpb.VerifyChainRequest(), timeout=10, metadata=reader)
        assert report.ok and report.records_checked == 4
        # A direct booking is evidence too.
        stub.ConfirmSlot(pb.ConfirmSlotRequest(slot_id="ng-1", expected_version=1), timeout=10,
                         metadata=patient(auth, "pat-9"))
        deadline, direct = time.monotonic() + 15, []
        while time.monotonic() < deadline:
            direct = [link for link in trace_stub.ListChainLinks(tpb.ListChainLinksRequest(), timeout=10,
                                                                 metadata=reader).links
                      if link.action.kind == tpb.ACTION_EVENT_KIND_SLOT_CONFIRMED]
            if direct:
                break
            time.sleep(0.1)
        assert direct[0].action.appointment_after.patient_ref == "pat-9"
        assert direct[0].action.slot.slot_id == "ng-1"


def test_events_wait_in_the_outbox_while_trace_is_down(auth, tmp_path, sqlite_url):
    with socket_port() as port:
        target = f"127.0.0.1:{port}"
        with gateway_to(auth, sqlite_url, target) as stub:
            proposal = book(stub, assistant_for(auth, "pat-3"))
            confirm(stub, patient(auth, "pat-3"), proposal.proposal_id)
            time.sleep(0.8)  # several failed attempts with backoff
            outbox = schema.action_events_outbox
            pending = rows(sqlite_url, outbox, outbox.c.delivered_at.is_(None))
            assert len(pending) == 2
            first, second = sorted(pending, key=lambda r: r.id)
            assert first.attempts >= 1 and first.last_error
            # The confirmation waits behind its proposal: it is never sent ahead of it.
            assert second.attempts == 0 and not second.last_error
            with trace_running(auth, tmp_path, port=port) as (_, trace_stub):
                found = links_of(trace_stub, staff(auth), proposal.proposal_id, 2)
                assert [link.action.kind for link in found] == [tpb.ACTION_EVENT_KIND_PROPOSED,
                                                                 tpb.ACTION_EVENT_KIND_CONFIRMED]


@contextlib.contextmanager
def socket_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield port


def test_a_tenants_events_are_delivered_in_the_order_written(db_url):
    """A confirmation must not become a chain link before its proposal: while the proposal's event
    waits out a backoff, the tenant's later events wait behind it (another tenant's do not)."""
    import datetime as dt

    from outbox_order import assert_each_tenant_in_written_order

    from services.scheduler_gateway.sql_source import SqlSlotSource
    from services.scheduler_gateway.sql_tx import append_event
    from services.scheduler_gateway.sql_workflow import SqlWorkflowStore

    source = SqlSlotSource(db_url)
    source.warm_up()
    store = SqlWorkflowStore(source)
    now = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)

    def write(tenant: str) -> int:
        with store.engine.begin() as conn:
            event_id = append_event(conn, tenant, {"kind": "proposed"}, now)
            return conn.execute(select(schema.action_events_outbox.c.id).where(
                schema.action_events_outbox.c.event_id == event_id)).scalar_one()

    try:
        assert_each_tenant_in_written_order(store, write, now)
    finally:
        source.close()
