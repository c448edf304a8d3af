"""Proposals over real gRPC on SQLite and PostgreSQL: made by the assistant acting for the patient
(or by staff), confirmed by the patient in one transaction (slot claimed at its version, the
appointment's version checked), rejected, expired; review tasks only staff may confirm; another
patient's or tenant's proposal is NOT_FOUND; every step leaves an action event in the outbox."""

from __future__ import annotations

import datetime as dt

import grpc
import pytest
import sqlalchemy as sa
from citetrace.common.v1 import appointments_pb2 as ap
from citetrace.kit.clients import error_info
from citetrace.kit.context import call_context
from citetrace.kit.errors import DeadlineExceeded
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

from services.scheduler_gateway import schema
from services.scheduler_gateway.domain import Idempotency
from services.scheduler_gateway.sql_tx import Completed, append_event, idempotent_write

from .conftest import NOW, UTC
from .workflow_fixtures import (
    TIMEOUT,
    appointment,
    assistant_for,
    book,
    cancel,
    confirm,
    events,
    fee,
    needs_review,
    patient,
    reject,
    reschedule,
    rows,
    slot_state,
    staff,
    workflow_gateway,
)


def _code(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.code(), error_info(caught.value).reason


def test_reschedule_confirmed_by_the_patient_moves_the_appointment_and_frees_the_old_slot(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        proposal = reschedule(stub, assistant_for(auth, "pat-1"), consequences=[fee()])
        assert proposal.status == ap.PROPOSAL_STATUS_PENDING
        assert proposal.kind == ap.CHANGE_KIND_RESCHEDULE and proposal.patient_ref == "pat-1"
        assert not proposal.review_required
        assert proposal.appointment.appointment_id == "appt-1" and proposal.appointment.version == 1
        assert [(o.slot_id, o.version) for o in proposal.options] == [("ns-2", 1)]
        assert proposal.expires_at.ToDatetime(tzinfo=UTC) == NOW + dt.timedelta(seconds=900)
        assert proposal.consequences[0].citations[0].version_id == "v-cancel-1"
        assert list(proposal.policy_version_ids) == ["v-cancel-1"]
        assert proposal.created_by_ref == "pat-1 via service:orchestrator"
        assert proposal.ask_trace_id == "0af7651916cd43dd8448eb211c80319c"

        done = confirm(stub, patient(auth, "pat-1"), proposal.proposal_id, note="yes please")
        assert done.result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED
        assert done.proposal.status == ap.PROPOSAL_STATUS_CONFIRMED
        assert (done.proposal.chosen_slot_id, done.proposal.result_appointment_id) == ("ns-2", "appt-1")
        assert done.proposal.decided_by_ref == "pat-1" and done.proposal.decision_note == "yes please"
        assert (done.appointment.slot_id, done.appointment.version) == ("ns-2", 2)
        assert done.slot.slot_id == "ns-2" and done.slot.version == 2
        assert slot_state(db_url, "ns-2") == ("busy", 2)
        assert slot_state(db_url, "ns-appt-1") == ("free", 2)  # the old slot is offered again
        moved = appointment(stub, patient(auth, "pat-1"), "appt-1")
        assert (moved.slot_id, moved.version, moved.status) == ("ns-2", 2, ap.APPOINTMENT_STATUS_BOOKED)

        kinds = [(e["kind"], e["proposal_id"]) for e in events(db_url)]
        assert kinds == [("proposed", proposal.proposal_id), ("confirmed", proposal.proposal_id)]
        confirmed = events(db_url)[1]
        assert confirmed["ask_trace_id"] == proposal.ask_trace_id and confirmed["actor_ref"] == "pat-1"
        assert confirmed["appointment_before"]["slot"]["slot_id"] == "ns-appt-1"
        assert confirmed["appointment_after"]["version"] == 2
        assert confirmed["slot"]["version"] == 2
        assert confirmed["proposal"]["consequences"][0]["citations"][0]["passage_id"] == "p-fee-1"


def test_booking_and_cancelling_go_through_proposals_too(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        booked = confirm(stub, patient(auth, "pat-3"), book(stub, assistant_for(auth, "pat-3")).proposal_id)
        assert booked.result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED
        new_id = booked.proposal.result_appointment_id
        assert appointment(stub, patient(auth, "pat-3"), new_id).slot_id == "ns-1"
        assert slot_state(db_url, "ns-1") == ("busy", 2)

        proposal = cancel(stub, assistant_for(auth, "pat-3"), new_id)
        assert proposal.options == [] and proposal.appointment.appointment_id == new_id
        done = confirm(stub, patient(auth, "pat-3"), proposal.proposal_id)
        assert done.result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED
        assert done.appointment.status == ap.APPOINTMENT_STATUS_CANCELLED and done.appointment.version == 2
        assert slot_state(db_url, "ns-1") == ("free", 3)
        # Staff book for a patient they name.
        proposal = book(stub, staff(auth), slots=[("ns-1", 3)], patient_ref="pat-4")
        assert proposal.patient_ref == "pat-4" and proposal.created_by_ref == "desk-1"
        assert confirm(stub, staff(auth), proposal.proposal_id).result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED


def test_only_the_assistant_or_staff_propose_and_only_people_decide(auth, sqlite_url):
    with workflow_gateway(auth, sqlite_url) as (stub, _):
        assert _code(lambda: reschedule(stub, patient(auth, "pat-1"))) == (
            grpc.StatusCode.PERMISSION_DENIED, "PROPOSALS_COME_FROM_THE_ASSISTANT_OR_STAFF")
        proposal = reschedule(stub, assistant_for(auth, "pat-1"))
        assert _code(lambda: confirm(stub, assistant_for(auth, "pat-1"), proposal.proposal_id)) == (
            grpc.StatusCode.PERMISSION_DENIED, "DECIDED_BY_PATIENT_OR_STAFF")
        assert _code(lambda: reject(stub, assistant_for(auth, "pat-1"), proposal.proposal_id)) == (
            grpc.StatusCode.PERMISSION_DENIED, "DECIDED_BY_PATIENT_OR_STAFF")
        assert slot_state(sqlite_url, "ns-2") == ("free", 1)


def test_a_cited_review_rule_makes_a_staff_review_task(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        task = reschedule(stub, assistant_for(auth, "pat-1"), consequences=[fee(), needs_review()])
        assert task.review_required
        assert task.review_reason == "Rescheduling within 48 hours needs a coordinator review."
        # A review task waits for staff longer, but never past the appointment or the offered slot.
        assert task.expires_at.ToDatetime(tzinfo=UTC) == dt.datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
        assert _code(lambda: confirm(stub, patient(auth, "pat-1"), task.proposal_id)) == (
            grpc.StatusCode.PERMISSION_DENIED, "REVIEW_BY_STAFF_REQUIRED")
        # Staff of another location do not see it at all.
        northgate = staff(auth, locations=("acme-northgate",))
        assert _code(lambda: confirm(stub, northgate, task.proposal_id)) == (
            grpc.StatusCode.NOT_FOUND, "PROPOSAL_NOT_FOUND")
        queue = stub.ListProposals(pb.ListProposalsRequest(review_required_only=True), timeout=TIMEOUT,
                                   metadata=staff(auth, locations=("acme-northside",))).proposals
        assert [p.proposal_id for p in queue] == [task.proposal_id]
        assert stub.ListProposals(pb.ListProposalsRequest(review_required_only=True), timeout=TIMEOUT,
                                  metadata=northgate).proposals == []
        done = confirm(stub, staff(auth, locations=("acme-northside",)), task.proposal_id, note="checked")
        assert done.result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED
        assert done.proposal.decided_by_ref == "desk-1"
        # The patient may still withdraw a review task of their own (before it is decided).
        other = reschedule(stub, assistant_for(auth, "pat-2"), appointment_id="appt-2", slots=[("ng-3", 1)],
                           consequences=[needs_review()])
        assert reject(stub, patient(auth, "pat-2"), other.proposal_id).status == ap.PROPOSAL_STATUS_REJECTED


def test_another_patients_or_tenants_proposal_is_not_found(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        proposal = reschedule(stub, assistant_for(auth, "pat-1"))
        pid = proposal.proposal_id
        errors = []
        for md, proposal_id in [
            (patient(auth, "pat-2"), pid),
            (patient(auth, "pat-1", tenant="borealis-clinics"), pid),
            (staff(auth, tenant="borealis-clinics"), pid),
            (patient(auth, "pat-1"), "prop-none"),
        ]:
            for call in (
                lambda md=md, proposal_id=proposal_id: stub.GetProposal(
                    pb.GetProposalRequest(proposal_id=proposal_id), timeout=TIMEOUT, metadata=md),
                lambda md=md, proposal_id=proposal_id: confirm(stub, md, proposal_id),
                lambda md=md, proposal_id=proposal_id: reject(stub, md, proposal_id),
            ):
                with pytest.raises(grpc.RpcError) as caught:
                    call()
                errors.append((caught.value, proposal_id))
        assert {e.code() for e, _ in errors} == {grpc.StatusCode.NOT_FOUND}
        assert {error_info(e).reason for e, _ in errors} == {"PROPOSAL_NOT_FOUND"}
        assert len({e.details().replace(i, "X") for e, i in errors}) == 1
        # Nor may another patient propose a change to pat-1's appointment.
        assert _code(lambda: reschedule(stub, assistant_for(auth, "pat-2"))) == (
            grpc.StatusCode.NOT_FOUND, "APPOINTMENT_NOT_FOUND")
        assert stub.ListProposals(pb.ListProposalsRequest(), timeout=TIMEOUT,
                                  metadata=patient(auth, "pat-2")).proposals == []
        assert [p.proposal_id for p in stub.ListProposals(pb.ListProposalsRequest(), timeout=TIMEOUT,
                                                          metadata=patient(auth, "pat-1")).proposals] == [pid]
        assert stub.GetProposal(pb.GetProposalRequest(proposal_id=pid), timeout=TIMEOUT,
                                metadata=patient(auth, "pat-1")).proposal.status == ap.PROPOSAL_STATUS_PENDING
        assert slot_state(db_url, "ns-2") == ("free", 1)


def test_an_expired_proposal_cannot_be_confirmed(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, clock):
        first = reschedule(stub, assistant_for(auth, "pat-1"))
        second = book(stub, assistant_for(auth, "pat-3"))
        clock.now = NOW + dt.timedelta(seconds=901)
        read = stub.GetProposal(pb.GetProposalRequest(proposal_id=first.proposal_id), timeout=TIMEOUT,
                                metadata=patient(auth, "pat-1")).proposal
        assert read.status == ap.PROPOSAL_STATUS_EXPIRED  # reads show it before the sweeper records it
        for _ in range(2):  # found expired by the call, then stored as expired
            assert _code(lambda: confirm(stub, patient(auth, "pat-1"), first.proposal_id)) == (
                grpc.StatusCode.FAILED_PRECONDITION, "PROPOSAL_EXPIRED")
        assert slot_state(db_url, "ns-2") == ("free", 1)
        assert appointment(stub, patient(auth, "pat-1"), "appt-1").version == 1
        # The sweeper records the other one.
        (stored,) = rows(db_url, schema.proposals, schema.proposals.c.proposal_id == second.proposal_id)
        assert stored.status == "pending"
        assert _sweep(db_url, clock.now) == 1
        (stored,) = rows(db_url, schema.proposals, schema.proposals.c.proposal_id == second.proposal_id)
        assert (stored.status, stored.outcome_reason) == ("expired", "PROPOSAL_EXPIRED")
        assert [e["kind"] for e in events(db_url)] == ["proposed", "proposed", "expired", "expired"]
        assert _code(lambda: reject(stub, patient(auth, "pat-3"), second.proposal_id)) == (
            grpc.StatusCode.FAILED_PRECONDITION, "PROPOSAL_EXPIRED")


def _sweep(url: str, now: dt.datetime) -> int:
    from services.scheduler_gateway.sql_source import SqlSlotSource
    from services.scheduler_gateway.sql_workflow import SqlWorkflowStore

    source = SqlSlotSource(url)
    source.warm_up()
    try:
        return SqlWorkflowStore(source).expire_due(now)
    finally:
        source.close()


def test_a_changed_appointment_makes_the_proposal_fail_and_changes_nothing(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        move = reschedule(stub, assistant_for(auth, "pat-1"))
        drop = cancel(stub, assistant_for(auth, "pat-1"))
        assert confirm(stub, patient(auth, "pat-1"), drop.proposal_id).result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED
        failed = confirm(stub, patient(auth, "pat-1"), move.proposal_id)
        assert failed.result == pb.CONFIRM_PROPOSAL_RESULT_APPOINTMENT_CHANGED
        assert failed.proposal.status == ap.PROPOSAL_STATUS_FAILED
        assert failed.proposal.outcome_reason == "APPOINTMENT_CHANGED"
        assert failed.appointment.status == ap.APPOINTMENT_STATUS_CANCELLED and failed.appointment.version == 2
        assert "changed since the proposal" in failed.message
        assert slot_state(db_url, "ns-2") == ("free", 1)  # the offered slot was not taken
        assert [e["kind"] for e in events(db_url)][-1] == "failed"
        assert _code(lambda: confirm(stub, patient(auth, "pat-1"), move.proposal_id)) == (
            grpc.StatusCode.FAILED_PRECONDITION, "PROPOSAL_FAILED")
        # Proposing from a stale read is refused up front.
        assert _code(lambda: reschedule(stub, assistant_for(auth, "pat-2"), appointment_id="appt-2",
                                        slots=[("ng-3", 1)], version=7)) == (
            grpc.StatusCode.FAILED_PRECONDITION, "APPOINTMENT_CHANGED")


def test_a_vanished_slot_keeps_the_proposal_while_other_options_remain(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        proposal = reschedule(stub, assistant_for(auth, "pat-2"), appointment_id="appt-2",
                              slots=[("ng-2", 1), ("ng-3", 1)])
        assert _code(lambda: confirm(stub, patient(auth, "pat-2"), proposal.proposal_id)) == (
            grpc.StatusCode.INVALID_ARGUMENT, "SLOT_CHOICE_REQUIRED")
        assert _code(lambda: confirm(stub, patient(auth, "pat-2"), proposal.proposal_id, slot_id="ns-1")) == (
            grpc.StatusCode.INVALID_ARGUMENT, "SLOT_NOT_OFFERED")
        # Someone else books ng-2 first.
        other = book(stub, assistant_for(auth, "pat-3"), slots=[("ng-2", 1)])
        assert confirm(stub, patient(auth, "pat-3"), other.proposal_id).result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED
        lost = confirm(stub, patient(auth, "pat-2"), proposal.proposal_id, slot_id="ng-2")
        assert lost.result == pb.CONFIRM_PROPOSAL_RESULT_SLOT_NO_LONGER_AVAILABLE
        assert lost.proposal.status == ap.PROPOSAL_STATUS_PENDING  # ng-3 is still on offer
        assert lost.slot.slot_id == "ng-2" and lost.slot.version == 2
        assert appointment(stub, patient(auth, "pat-2"), "appt-2").slot_id == "ng-appt-2"
        won = confirm(stub, patient(auth, "pat-2"), proposal.proposal_id, slot_id="ng-3")
        assert won.result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED and won.appointment.slot_id == "ng-3"


def test_a_rejected_proposal_is_over(auth, sqlite_url):
    with workflow_gateway(auth, sqlite_url) as (stub, _):
        proposal = reschedule(stub, assistant_for(auth, "pat-1"))
        ended = reject(stub, patient(auth, "pat-1"), proposal.proposal_id, note="not tomorrow")
        assert (ended.status, ended.decision_note, ended.decided_by_ref) == (
            ap.PROPOSAL_STATUS_REJECTED, "not tomorrow", "pat-1")
        assert _code(lambda: confirm(stub, patient(auth, "pat-1"), proposal.proposal_id)) == (
            grpc.StatusCode.FAILED_PRECONDITION, "PROPOSAL_REJECTED")
        assert [e["kind"] for e in events(sqlite_url)] == ["proposed", "rejected"]


@pytest.mark.parametrize(("make", "reason", "code"), [
    (lambda s, md: reschedule(s, md, consequences=[_uncited()]), "UNCITED_CONSEQUENCE", "INVALID_ARGUMENT"),
    (lambda s, md: reschedule(s, md, consequences=[_unsupported()]), "UNSUPPORTED_CONSEQUENCE", "INVALID_ARGUMENT"),
    (lambda s, md: reschedule(s, md, consequences=[ap.PolicyConsequence(text="x")]), "UNKNOWN_CONSEQUENCE_KIND",
     "INVALID_ARGUMENT"),
    (lambda s, md: reschedule(s, md, slots=()), "MISSING_SLOTS", "INVALID_ARGUMENT"),
    (lambda s, md: reschedule(s, md, slots=[("ns-2", 1), ("ns-2", 1)]), "DUPLICATE_SLOT", "INVALID_ARGUMENT"),
    (lambda s, md: reschedule(s, md, slots=[("ns-2", 5)]), "SLOT_NO_LONGER_AVAILABLE", "FAILED_PRECONDITION"),
    (lambda s, md: reschedule(s, md, slots=[("bor-2", 1)]), "SLOT_NOT_FOUND", "NOT_FOUND"),
    (lambda s, md: reschedule(s, md, appointment_id="appt-cx"), "APPOINTMENT_NOT_BOOKED", "FAILED_PRECONDITION"),
    (lambda s, md: reschedule(s, md, appointment_id="appt-old"), "APPOINTMENT_STARTED", "FAILED_PRECONDITION"),
    (lambda s, md: reschedule(s, md, appointment_id=""), "MISSING_APPOINTMENT_ID", "INVALID_ARGUMENT"),
    (lambda s, md: reschedule(s, md, version=0), "MISSING_EXPECTED_VERSION", "INVALID_ARGUMENT"),
    (lambda s, md: reschedule(s, md, idempotency_key="a b"), "INVALID_IDEMPOTENCY_KEY", "INVALID_ARGUMENT"),
    (lambda s, md: s.ProposeChange(pb.ProposeChangeRequest(kind=ap.CHANGE_KIND_CANCEL, appointment_id="appt-1",
                                                            expected_appointment_version=1,
                                                            slots=[pb.SlotChoice(slot_id="ns-2", expected_version=1)]),
                                   timeout=TIMEOUT, metadata=md), "UNEXPECTED_SLOTS", "INVALID_ARGUMENT"),
    (lambda s, md: s.ProposeChange(pb.ProposeChangeRequest(appointment_id="appt-1"), timeout=TIMEOUT, metadata=md),
     "MISSING_CHANGE_KIND", "INVALID_ARGUMENT"),
])
def test_bad_proposals_are_refused_with_a_reason_and_store_nothing(auth, sqlite_url, make, reason, code):
    with workflow_gateway(auth, sqlite_url) as (stub, _):
        with pytest.raises(grpc.RpcError) as caught:
            make(stub, assistant_for(auth, "pat-1"))
        assert (caught.value.code().name, error_info(caught.value).reason) == (code, reason)
        assert rows(sqlite_url, schema.proposals) == [] and events(sqlite_url) == []


def test_a_reschedule_keeps_to_the_appointments_specialty(auth, sqlite_url):
    with workflow_gateway(auth, sqlite_url) as (stub, _):
        assert _code(lambda: reschedule(stub, assistant_for(auth, "pat-1"), slots=[("ns-derm-1", 1)])) == (
            grpc.StatusCode.INVALID_ARGUMENT, "SLOT_NOT_COMPATIBLE")


def _uncited() -> ap.PolicyConsequence:
    c = fee()
    del c.citations[:]
    return c


def _unsupported() -> ap.PolicyConsequence:
    c = fee()
    c.support = 0
    return c


def test_a_scheduling_write_past_its_callers_deadline_commits_nothing(sqlite_url):
    """Issue 17 §4: every scheduling write (bookings, proposals, decisions) goes through
    `idempotent_write`; with the caller's deadline passed it rolls back the change, its outbox event
    and its idempotency key, and a retry under the same key then does the work once."""
    engine = schema.make_engine(sqlite_url)
    schema.ensure_schema(engine)
    now = dt.datetime(2026, 12, 2, 9, tzinfo=dt.UTC)
    idem = Idempotency(key="k-deadline-1", operation="probe", fingerprint="f1")

    def work(conn):
        return Completed(append_event(conn, "t-deadline", {"kind": "probe"}, now), {"done": True})

    def counts() -> tuple[int, int]:
        with engine.connect() as conn:
            return (conn.execute(sa.select(sa.func.count()).select_from(schema.action_events_outbox)).scalar(),
                    conn.execute(sa.select(sa.func.count()).select_from(schema.idempotency_keys)).scalar())

    with call_context(None, None, timeout=-1.0), pytest.raises(DeadlineExceeded) as refused:
        idempotent_write(engine, "t-deadline", idem, now, work, lambda stored: stored)
    assert refused.value.reason == "DEADLINE_PASSED"
    assert counts() == (0, 0)
    with call_context(None, None, timeout=30.0):
        idempotent_write(engine, "t-deadline", idem, now, work, lambda stored: stored)
    assert counts() == (1, 1)
    engine.dispose()


def test_a_booking_whose_commit_outlives_the_callers_deadline_is_not_made_over_grpc(auth, sqlite_url):
    """Issue 17 §4 over real gRPC: a ConfirmSlot whose commit is slowed (the bootstrap's before_commit
    test seam) past its caller's deadline is DEADLINE_EXCEEDED and books nothing (no appointment, no
    outbox event, no idempotency key, the slot still free); the retry under the same key books once."""
    import threading
    import time

    from citetrace.kit.context import remaining_seconds
    from citetrace.kit.testing import serving
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc

    from services.scheduler_gateway.bootstrap import build_spec
    from services.scheduler_gateway.settings import Settings

    from .conftest import FixedClock, load, world

    slow, slept = threading.Event(), threading.Event()

    def before_commit():
        if slow.is_set():  # hold the commit until the caller's deadline has passed
            time.sleep(max(remaining_seconds() or 0.0, 0.0) + 0.3)
            slept.set()

    def counts() -> tuple[int, int, int]:
        return (len(rows(sqlite_url, schema.appointments)), len(rows(sqlite_url, schema.action_events_outbox)),
                len(rows(sqlite_url, schema.idempotency_keys)))

    load(sqlite_url, world())
    spec = build_spec(Settings(port=0, metrics_port=-1, database_url=sqlite_url, expiry_sweep_seconds=0),
                      clock=FixedClock(NOW), before_commit=before_commit)
    request = pb.ConfirmSlotRequest(slot_id="ns-1", expected_version=1, idempotency_key="k-late-booking")
    md = patient(auth, "pat-1")
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        stub = pb_grpc.SchedulerGatewayServiceStub(channel)
        before = counts()
        slow.set()
        with pytest.raises(grpc.RpcError) as caught:
            stub.ConfirmSlot(request, timeout=1.0, metadata=md)
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert slept.wait(5)
        slow.clear()
        time.sleep(0.3)  # the handler runs on past the client's deadline; let it end
        assert counts() == before
        assert slot_state(sqlite_url, "ns-1")[0] == "free"

        booked = stub.ConfirmSlot(request, timeout=TIMEOUT, metadata=md)
        again = stub.ConfirmSlot(request, timeout=TIMEOUT, metadata=md)
        assert booked.appointment_id and again.appointment_id == booked.appointment_id
        assert counts() == (before[0] + 1, before[1] + 1, before[2] + 1)
