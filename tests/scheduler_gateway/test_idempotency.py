"""Idempotency keys and concurrency of the gateway's writes, on SQLite and PostgreSQL.

* A completed ConfirmSlot / ConfirmProposal / RejectProposal repeated with its key returns the
  original result and changes nothing more; another request under the key is ALREADY_EXISTS
  (IDEMPOTENCY_KEY_REUSED); keys are per tenant and per caller.
* 20 concurrent confirmations of 20 proposals for the same slot: exactly one CONFIRMED, the rest
  SLOT_NO_LONGER_AVAILABLE, and the winner's retry is CONFIRMED again.
"""

from __future__ import annotations

import threading

import grpc
import pytest
from citetrace.common.v1 import appointments_pb2 as ap
from citetrace.kit.clients import error_info
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

from services.scheduler_gateway import schema

from .workflow_fixtures import (
    TIMEOUT,
    assistant_for,
    book,
    confirm,
    events,
    patient,
    reject,
    reschedule,
    rows,
    slot_state,
    workflow_gateway,
)


def confirm_slot(stub, md, slot_id="ns-1", version=1, key=""):
    return stub.ConfirmSlot(pb.ConfirmSlotRequest(slot_id=slot_id, expected_version=version, idempotency_key=key),
                            timeout=TIMEOUT, metadata=md)


def _reason(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.code(), error_info(caught.value).reason


def test_a_repeated_confirm_slot_returns_the_original_booking(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        md = patient(auth, "pat-5")
        first = confirm_slot(stub, md, key="k-1")
        again = confirm_slot(stub, md, key="k-1")  # the reply was lost; the client retries
        assert first.result == again.result == pb.CONFIRM_RESULT_CONFIRMED
        assert first.appointment_id == again.appointment_id
        assert again.slot == first.slot
        assert slot_state(db_url, "ns-1") == ("busy", 2)
        assert len(rows(db_url, schema.appointments, schema.appointments.c.slot_id == "ns-1")) == 1
        assert [e["kind"] for e in events(db_url)] == ["slot_confirmed"]
        # Another request under the same key, by the same caller or anyone else of the tenant.
        assert _reason(lambda: confirm_slot(stub, md, slot_id="ng-1", key="k-1")) == (
            grpc.StatusCode.ALREADY_EXISTS, "IDEMPOTENCY_KEY_REUSED")
        assert _reason(lambda: confirm_slot(stub, patient(auth, "pat-6"), key="k-1")) == (
            grpc.StatusCode.ALREADY_EXISTS, "IDEMPOTENCY_KEY_REUSED")
        # Keys are unique per tenant: the same key elsewhere is another key.
        other = confirm_slot(stub, patient(auth, "pat-5", tenant="borealis-clinics"), slot_id="bor-2", key="k-1")
        assert other.result == pb.CONFIRM_RESULT_CONFIRMED
        # A lost race is remembered too: its retry does not turn into a booking later.
        lost = confirm_slot(stub, patient(auth, "pat-7"), key="k-2")
        assert lost.result == pb.CONFIRM_RESULT_SLOT_NO_LONGER_AVAILABLE
        assert confirm_slot(stub, patient(auth, "pat-7"), key="k-2").result == pb.CONFIRM_RESULT_SLOT_NO_LONGER_AVAILABLE


def test_repeated_confirm_and_reject_proposal_return_the_original_result(auth, db_url):
    with workflow_gateway(auth, db_url) as (stub, _):
        md = patient(auth, "pat-1")
        proposal = reschedule(stub, assistant_for(auth, "pat-1"))
        first = confirm(stub, md, proposal.proposal_id, key="c-1")
        again = confirm(stub, md, proposal.proposal_id, key="c-1")
        assert first.result == again.result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED
        assert again.proposal == first.proposal and again.appointment == first.appointment
        assert [e["kind"] for e in events(db_url)] == ["proposed", "confirmed"]  # no second event
        # Without the key a second confirmation is refused: the proposal is no longer pending.
        assert _reason(lambda: confirm(stub, md, proposal.proposal_id)) == (
            grpc.StatusCode.FAILED_PRECONDITION, "PROPOSAL_CONFIRMED")
        # A different request under the same key.
        assert _reason(lambda: reject(stub, md, proposal.proposal_id, key="c-1")) == (
            grpc.StatusCode.ALREADY_EXISTS, "IDEMPOTENCY_KEY_REUSED")
        second = reschedule(stub, assistant_for(auth, "pat-2"), appointment_id="appt-2", slots=[("ng-3", 1)])
        ended = reject(stub, patient(auth, "pat-2"), second.proposal_id, key="r-1", note="no")
        assert reject(stub, patient(auth, "pat-2"), second.proposal_id, key="r-1", note="no") == ended
        assert _reason(lambda: reject(stub, patient(auth, "pat-2"), second.proposal_id, key="r-1", note="other")) == (
            grpc.StatusCode.ALREADY_EXISTS, "IDEMPOTENCY_KEY_REUSED")
        # ProposeChange takes a key too: the retry returns the same proposal, not a second one.
        a = book(stub, assistant_for(auth, "pat-8"), idempotency_key="p-1")
        b = book(stub, assistant_for(auth, "pat-8"), idempotency_key="p-1")
        assert a.proposal_id == b.proposal_id
        assert len(rows(db_url, schema.proposals, schema.proposals.c.patient_ref == "pat-8")) == 1


def test_concurrent_retries_with_one_key_confirm_once(auth, db_url):
    """The key row is written before the work: a concurrent call with the same key waits for the
    first and returns its result (on PostgreSQL the second insert blocks on the primary key)."""
    with workflow_gateway(auth, db_url) as (stub, _):
        proposal = reschedule(stub, assistant_for(auth, "pat-1"))
        results, failures = _race(6, lambda i: confirm(stub, patient(auth, "pat-1"), proposal.proposal_id, key="same"))
        assert not failures, failures
        assert {r.result for _, r in results} == {pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED}
        assert len({r.appointment.version for _, r in results}) == 1
        assert [e["kind"] for e in events(db_url)] == ["proposed", "confirmed"]


@pytest.mark.slow
def test_twenty_concurrent_confirmations_for_one_slot_have_one_winner(auth, db_url):
    contenders = 20
    with workflow_gateway(auth, db_url) as (stub, _):
        proposals = [book(stub, assistant_for(auth, f"pat-{i}"), slots=[("ns-1", 1)]) for i in range(contenders)]
        assert len({p.proposal_id for p in proposals}) == contenders

        def attempt(i: int):
            return confirm(stub, patient(auth, f"pat-{i}"), proposals[i].proposal_id, key=f"confirm-{i}")

        results, failures = _race(contenders, attempt)
        assert not failures, failures
        by_result = {}
        for i, reply in results:
            by_result.setdefault(reply.result, []).append(i)
        assert sorted(by_result) == [pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED,
                                     pb.CONFIRM_PROPOSAL_RESULT_SLOT_NO_LONGER_AVAILABLE]
        (winner,) = by_result[pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED]
        assert len(by_result[pb.CONFIRM_PROPOSAL_RESULT_SLOT_NO_LONGER_AVAILABLE]) == contenders - 1
        losers = [reply for i, reply in results if i != winner]
        assert all(r.proposal.status == ap.PROPOSAL_STATUS_FAILED for r in losers)
        assert all(r.proposal.outcome_reason == "SLOT_NO_LONGER_AVAILABLE" for r in losers)
        assert all("no longer available" in r.message for r in losers)
        assert slot_state(db_url, "ns-1") == ("busy", 2)
        booked = rows(db_url, schema.appointments, schema.appointments.c.slot_id == "ns-1",
                      schema.appointments.c.status == "booked")
        assert [r.patient_ref for r in booked] == [f"pat-{winner}"]
        # The winner's retry (its reply was lost) is CONFIRMED again, with the same appointment.
        retry = attempt(winner)
        first = dict(results)[winner]
        assert retry.result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED
        assert retry.proposal.result_appointment_id == first.proposal.result_appointment_id
        kinds = [e["kind"] for e in events(db_url)]
        assert kinds.count("confirmed") == 1 and kinds.count("failed") == contenders - 1


def _race(n: int, call):
    barrier = threading.Barrier(n)
    lock = threading.Lock()
    results, failures = [], []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=20)
            reply = call(i)
            with lock:
                results.append((i, reply))
        except BaseException as exc:  # reported by the caller
            with lock:
                failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results, failures
