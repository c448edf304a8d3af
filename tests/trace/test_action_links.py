"""Workflow actions as links of the per-tenant hash chain (issue 18): RecordActionEvent appends an
action at the chain's next sequence (records and links form one chain), idempotent by event ID;
GetTrace of the Ask shows its actions; VerifyChain checks links like records, so an edited or
removed action breaks the chain; only services write, tenants never see each other's links."""

from __future__ import annotations

import datetime as dt

import grpc
import pytest
import sqlalchemy as sa
from citetrace.common.v1 import appointments_pb2 as ap
from citetrace.common.v1 import common_pb2 as c
from citetrace.kit.auth import Principal
from citetrace.kit.testing import service_metadata
from citetrace.trace.v1 import trace_service_pb2 as pb
from test_service import expect_error, record
from test_store import _bypass
from tracefixtures import OTHER_TENANT, TENANT, core_on, make_record, ts

from services.trace.core import link_hash_of
from services.trace.store import open_store

SERVICE = ("service",)
ASK = "4bf92f3577b34da6a3ce929d0e0e4736"


def action(event_id: str, kind=pb.ACTION_EVENT_KIND_PROPOSED, ask=ASK, proposal_id="prop-1") -> pb.ActionEvent:
    return pb.ActionEvent(
        event_id=event_id, kind=kind, ask_trace_id=ask, proposal_id=proposal_id, actor_ref="pat-1",
        occurred_at=ts(dt.datetime(2026, 12, 1, 14, 0)), source_service="scheduler_gateway",
        proposal=ap.Proposal(
            proposal_id=proposal_id, kind=ap.CHANGE_KIND_RESCHEDULE, status=ap.PROPOSAL_STATUS_PENDING,
            appointment=ap.Appointment(appointment_id="acme-appt-0001", version=1),
            options=[c.Slot(slot_id="acme-slot-1", version=1)],
            consequences=[ap.PolicyConsequence(
                kind=ap.CONSEQUENCE_KIND_FEE, text="Follow-up visit: late-cancellation fee $25.",
                citations=[c.Citation(passage_id="p-1", version_id="v-1", document_id="acme-cancellation-policy")],
                support=c.SUPPORT_VERDICT_SUPPORTED)]))


def record_action(stub, md, event):
    return stub.RecordActionEvent(pb.RecordActionEventRequest(event=event), timeout=10, metadata=md)


def test_actions_are_links_of_the_same_chain_shown_with_their_ask(trace, metadata_for):
    _, stub, _ = trace
    md = service_metadata(TENANT, "scheduler_gateway")
    asker = service_metadata(TENANT, "orchestrator")  # only the orchestrator records Asks
    asked = record(stub, asker, make_record(ASK))
    proposed = record_action(stub, md, action("evt-1"))
    assert proposed.created
    assert (proposed.link.sequence, proposed.link.previous_hash) == (2, asked.record_hash)
    assert proposed.link.kind == "action" and proposed.link.subject_trace_id == ASK
    confirmed = record_action(stub, md, action("evt-2", pb.ACTION_EVENT_KIND_CONFIRMED))
    assert confirmed.link.previous_hash == proposed.link.link_hash
    # The next Ask record continues after the links.
    later = stub.RecordTrace(pb.RecordTraceRequest(record=make_record("t-later")), timeout=10, metadata=asker)
    got = stub.GetTrace(pb.GetTraceRequest(trace_id="t-later"), timeout=10,
                        metadata=metadata_for(TENANT, ("auditor",))).record
    assert got.sequence == 4 and got.previous_hash == confirmed.link.link_hash and later.created
    # A redelivery appends nothing; other content under the same event ID is refused.
    again = record_action(stub, md, action("evt-1"))
    assert not again.created and again.link == proposed.link
    changed = action("evt-1")
    changed.actor_ref = "someone-else"
    expect_error(lambda: record_action(stub, md, changed), grpc.StatusCode.ALREADY_EXISTS, "EVENT_ID_CONFLICT")

    reader = metadata_for(TENANT, ("staff",))
    shown = stub.GetTrace(pb.GetTraceRequest(trace_id=ASK), timeout=10, metadata=reader)
    assert [link.action.kind for link in shown.links] == [pb.ACTION_EVENT_KIND_PROPOSED,
                                                           pb.ACTION_EVENT_KIND_CONFIRMED]
    assert shown.links[0].action.proposal.consequences[0].citations[0].version_id == "v-1"
    by_proposal = stub.ListChainLinks(pb.ListChainLinksRequest(proposal_id="prop-1", page_size=1), timeout=10,
                                      metadata=reader)
    rest = stub.ListChainLinks(pb.ListChainLinksRequest(proposal_id="prop-1", page_token=by_proposal.next_page_token),
                               timeout=10, metadata=reader)
    assert [link.link_id for link in [*by_proposal.links, *rest.links]] == ["evt-1", "evt-2"]
    report = stub.VerifyChain(pb.VerifyChainRequest(), timeout=10, metadata=reader)
    assert report.ok and report.records_checked == 4


def test_only_services_write_actions_and_tenants_stay_apart(trace, metadata_for):
    _, stub, _ = trace
    # A user's direct call is no scheduler-gateway (kit.callers); through the gateway, a patient's
    # token still lacks the role.
    expect_error(lambda: record_action(stub, metadata_for(TENANT, ("patient",)), action("evt-x")),
                 grpc.StatusCode.PERMISSION_DENIED, "CALLER_NOT_ALLOWED")
    via_gateway = (*metadata_for(TENANT, ("patient",)), *service_metadata(TENANT, "scheduler_gateway")[1:])
    expect_error(lambda: record_action(stub, via_gateway, action("evt-x")),
                 grpc.StatusCode.PERMISSION_DENIED, "ROLE_REQUIRED")
    expect_error(lambda: record_action(stub, service_metadata(TENANT, "scheduler_gateway"), pb.ActionEvent(event_id="evt-y")),
                 grpc.StatusCode.INVALID_ARGUMENT, "MISSING_KIND")
    expect_error(lambda: record_action(stub, service_metadata(TENANT, "scheduler_gateway"), action("bad id")),
                 grpc.StatusCode.INVALID_ARGUMENT, "INVALID_EVENT_ID")
    record_action(stub, service_metadata(TENANT, "scheduler_gateway"), action("evt-1"))
    # The same event ID in another tenant is another event, on that tenant's own chain.
    other = record_action(stub, service_metadata(OTHER_TENANT, "scheduler_gateway"), action("evt-1"))
    assert other.created and other.link.sequence == 1
    assert stub.ListChainLinks(pb.ListChainLinksRequest(subject_trace_id=ASK), timeout=10,
                               metadata=metadata_for(OTHER_TENANT, ("staff",))).links == [other.link]


WRITER = Principal(TENANT, "service:scheduler_gateway", ("service",))
AUDITOR = Principal(TENANT, "auditor-1", ("auditor",))


@pytest.mark.parametrize("what", ["edited action", "deleted action", "rehashed action"])
def test_an_edited_or_removed_action_breaks_the_chain(store_url, what):
    store = open_store(store_url)
    try:
        core = core_on(store)
        core.record_trace(WRITER, make_record(ASK))
        core.record_action_event(WRITER, action("evt-1"))
        core.record_action_event(WRITER, action("evt-2", pb.ACTION_EVENT_KIND_CONFIRMED))
        core.record_trace(WRITER, make_record("t-after"))
        assert core.verify_tenant(TENANT).ok
        forged = action("evt-1")
        forged.proposal.consequences[0].text = "No fee applies."
        with store.engine.begin() as conn:
            _bypass(conn, store.dialect, "trace_chain_links")
            if what == "deleted action":
                conn.execute(sa.text("DELETE FROM trace_chain_links WHERE link_id = 'evt-1'"))
            else:
                conn.execute(sa.text("UPDATE trace_chain_links SET body = :b WHERE link_id = 'evt-1'"),
                             {"b": forged.SerializeToString(deterministic=True)})
        if what == "rehashed action":
            (link,) = store.links(TENANT, subject_ref="prop-1", limit=1)
            with store.engine.begin() as conn:
                _bypass(conn, store.dialect, "trace_chain_links")
                conn.execute(sa.text("UPDATE trace_chain_links SET link_hash = :h WHERE link_id = 'evt-1'"),
                             {"h": link_hash_of(link, link.sequence, link.previous_hash)})
        report = core.verify_tenant(TENANT)
        assert not report.ok
        if what == "deleted action":
            assert report.first_broken_sequence == 2 and "sequence gap" in report.detail
        elif what == "edited action":
            assert report.first_broken_sequence == 2 and "link_hash" in report.detail
        else:  # a recomputed hash is not signed by the trace key: reported at the link itself
            assert report.first_broken_sequence == 2 and "signature INVALID" in report.detail
    finally:
        store.close()
