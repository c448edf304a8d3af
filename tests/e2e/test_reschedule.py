"""Rescheduling end to end over the six processes (issue 18): the patient's question becomes an
appointment part, a slot part, a policy part and a proposal; the patient confirms the proposal at
the scheduler-gateway; the appointment has moved, its old slot is free, the proposal's policy
consequence is cited, and the proposal's actions are links of the tenant's hash chain that name
the Ask and verify. A new phone number is never stored.

A change at a location with its own rule (Harbor Imaging Center's review rule for a rescheduled
MRI) cites that rule, not only the tenant-wide terms, and becomes a staff review task the patient
cannot confirm."""

from __future__ import annotations

import time

import grpc
import pytest
from citetrace.common.v1 import appointments_pb2 as ap
from citetrace.common.v1 import common_pb2 as c
from citetrace.common.v1 import route_pb2 as r
from citetrace.kit.auth import bearer_metadata, mint_token
from citetrace.kit.clients import error_info
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as sched_pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as sched_grpc
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from citetrace.trace.v1 import trace_service_pb2_grpc as trace_grpc

pytestmark = pytest.mark.slow

TENANT = "acme-health"


def patient(stack, ref):
    return bearer_metadata(mint_token(stack.auth, tenant_id=TENANT, subject=ref, roles=["patient"]))


def ask_as(stack, metadata, question):
    with stack.channel("orchestrator") as channel:
        return pb_grpc.OrchestratorServiceStub(channel).Ask(pb.AskRequest(question=question), timeout=60,
                                                            metadata=metadata)


def kinds(response):
    return [r.PartKind.Name(p.kind) for p in response.parts]


def gateway(stack, method, request, metadata):
    with stack.channel("scheduler_gateway") as channel:
        return getattr(sched_grpc.SchedulerGatewayServiceStub(channel), method)(request, timeout=15, metadata=metadata)


def links_of(stack, trace_id, want, wait=20.0):
    """The chain links naming this Ask (the gateway relays action events in the background)."""
    deadline = time.monotonic() + wait
    auditor = bearer_metadata(mint_token(stack.auth, tenant_id=TENANT, subject="e2e-auditor", roles=["auditor"]))
    with stack.channel("trace") as channel:
        stub = trace_grpc.TraceServiceStub(channel)
        while True:
            links = stub.ListChainLinks(trace_pb.ListChainLinksRequest(subject_trace_id=trace_id), timeout=10,
                                        metadata=auditor).links
            if len(links) >= want or time.monotonic() > deadline:
                return list(links), stub.VerifyChain(trace_pb.VerifyChainRequest(), timeout=30, metadata=auditor)
            time.sleep(0.2)


def test_reschedule_question_proposal_confirm_and_evidence(stack):
    me = patient(stack, "acme-patient-0001")
    response = ask_as(stack, me, "Can I move my cardiology appointment to tomorrow?")
    assert kinds(response) == ["PART_KIND_APPOINTMENT", "PART_KIND_LIVE_SLOT", "PART_KIND_CANCELLATION_RESCHEDULING",
                               "PART_KIND_CHANGE_PROPOSAL"], [(p.answer_text, p.next_action) for p in response.parts]
    appointment_part, slot_part, policy_part, proposal_part = response.parts
    (before,) = appointment_part.appointments
    assert before.appointment_id == "acme-appt-0001" and before.location_id == "acme-northside"
    assert slot_part.outcome == c.PART_OUTCOME_ANSWERED and slot_part.slots
    assert all(s.location_id == "acme-northside" and s.specialty == "cardiology" for s in slot_part.slots)
    assert policy_part.outcome == c.PART_OUTCOME_ANSWERED and policy_part.claims
    proposal = proposal_part.proposal
    assert proposal_part.next_action == c.NEXT_ACTION_CONFIRM_CHANGE, [cl.text for cl in policy_part.claims]
    assert list(response.proposal_ids) == [proposal.proposal_id] and proposal.status == ap.PROPOSAL_STATUS_PENDING
    assert proposal.ask_trace_id == response.trace_id and proposal.appointment.version == before.version
    # The policy consequence stands on the validated claim's citation (the cancellation policy).
    assert proposal.consequences, [cl.text for cl in policy_part.claims]
    assert all(q.citations and q.support == c.SUPPORT_VERDICT_SUPPORTED for q in proposal.consequences)
    cited = {cit.document_id for q in proposal.consequences for cit in q.citations}
    assert "acme-cancellation-policy" in cited
    assert set(proposal.policy_version_ids) <= {cit.version_id for cl in policy_part.claims for cit in cl.citations}

    chosen = proposal.options[0]
    confirmed = gateway(stack, "ConfirmProposal", sched_pb.ConfirmProposalRequest(
        proposal_id=proposal.proposal_id, slot_id=chosen.slot_id, idempotency_key="e2e-confirm-1"), me)
    assert confirmed.result == sched_pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED, confirmed.message
    again = gateway(stack, "ConfirmProposal", sched_pb.ConfirmProposalRequest(
        proposal_id=proposal.proposal_id, slot_id=chosen.slot_id, idempotency_key="e2e-confirm-1"), me)
    assert again.result == sched_pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED
    moved = gateway(stack, "GetAppointment", sched_pb.GetAppointmentRequest(appointment_id="acme-appt-0001"),
                    me).appointment
    assert moved.slot_id == chosen.slot_id and moved.version > before.version
    # The old slot is free again: FindSlots on its day offers it.
    day = sched_pb.FindSlotsRequest(specialty="cardiology", location_id="acme-northside", page_size=100)
    day.start_time.CopyFrom(before.start_time)
    day.end_time.FromSeconds(before.end_time.seconds + 1)
    freed = gateway(stack, "FindSlots", day, me).slots
    assert before.slot_id in {s.slot_id for s in freed if s.status == c.SLOT_STATUS_FREE}

    links, report = links_of(stack, response.trace_id, want=2)
    actions = [link.action for link in links]
    assert [a.kind for a in actions][:2] == [trace_pb.ACTION_EVENT_KIND_PROPOSED, trace_pb.ACTION_EVENT_KIND_CONFIRMED]
    assert all(a.proposal_id == proposal.proposal_id and a.ask_trace_id == response.trace_id for a in actions)
    assert actions[1].appointment_after.slot_id == chosen.slot_id
    assert actions[0].proposal.consequences[0].citations
    assert [link.sequence for link in links] == sorted(link.sequence for link in links)
    assert report.ok, report.detail
    record = stack.get_trace(response.trace_id).record
    assert record.parts[3].proposal.proposal_id == proposal.proposal_id
    assert record.parts[0].appointments[0].version == before.version


def test_a_rescheduled_mri_at_harbor_cites_harbors_review_rule_and_is_a_staff_review_task(stack):
    me = patient(stack, "acme-patient-0002")
    response = ask_as(stack, me, "Can I move my MRI at Harbor Imaging Center to another day next week?")
    assert kinds(response) == ["PART_KIND_APPOINTMENT", "PART_KIND_LIVE_SLOT", "PART_KIND_CANCELLATION_RESCHEDULING",
                               "PART_KIND_CHANGE_PROPOSAL"], [(p.answer_text, p.next_action) for p in response.parts]
    appointment_part, _, policy_part, proposal_part = response.parts
    (before,) = appointment_part.appointments
    assert before.appointment_id == "acme-appt-0002" and before.location_id == "acme-harbor"
    # Harbor's own rule leads the policy part, cited and validated.
    shown = [(cl.text, {cit.document_id for cit in cl.citations}, cl.support) for cl in policy_part.claims]
    assert shown and "acme-imaging-changes" in shown[0][1], shown
    assert shown[0][2] == c.SUPPORT_VERDICT_SUPPORTED and "coordinator review" in shown[0][0]
    proposal = proposal_part.proposal
    assert proposal_part.next_action == c.NEXT_ACTION_PREPARE_REVIEW_TASK, (proposal_part.answer_text, shown)
    assert response.next_action == c.NEXT_ACTION_PREPARE_REVIEW_TASK
    assert proposal.review_required and list(response.proposal_ids) == [proposal.proposal_id]
    review = [q for q in proposal.consequences if q.kind == ap.CONSEQUENCE_KIND_REVIEW_REQUIRED]
    assert review and all(q.citations and q.support == c.SUPPORT_VERDICT_SUPPORTED for q in review)
    assert {cit.document_id for q in review for cit in q.citations} == {"acme-imaging-changes"}
    assert set(proposal.policy_version_ids) <= {cit.version_id for cl in policy_part.claims for cit in cl.citations}
    # The validator's verdict on that claim is in the record (the part's claims, shown).
    record = stack.get_trace(response.trace_id).record
    assert any(cr.shown and cr.validation.support == c.SUPPORT_VERDICT_SUPPORTED
               and "acme-imaging-changes" in {cit.document_id for cit in cr.validation.citations}
               for cr in record.parts[2].claims)
    # Not patient-confirmable: staff review it.
    with pytest.raises(grpc.RpcError) as refused:
        gateway(stack, "ConfirmProposal", sched_pb.ConfirmProposalRequest(
            proposal_id=proposal.proposal_id, slot_id=proposal.options[0].slot_id,
            idempotency_key="e2e-confirm-review-1"), me)
    assert (refused.value.code(), error_info(refused.value).reason) == (grpc.StatusCode.PERMISSION_DENIED,
                                                                         "REVIEW_BY_STAFF_REQUIRED")
    still = gateway(stack, "GetAppointment", sched_pb.GetAppointmentRequest(appointment_id="acme-appt-0002"),
                    me).appointment
    assert still.slot_id == before.slot_id and still.version == before.version


def test_a_new_phone_number_is_a_verification_next_action(stack):
    response = stack.ask("Please use my new phone number 555 0100 from now on", tenant=TENANT)
    assert kinds(response) == ["PART_KIND_CONTACT_DETAILS"]
    assert response.next_action == c.NEXT_ACTION_VERIFY_CONTACT_DETAILS
    record = stack.get_trace(response.trace_id).record
    assert record.parts[0].next_action == c.NEXT_ACTION_VERIFY_CONTACT_DETAILS


def test_a_retried_ask_with_its_idempotency_key_gets_the_original_answer(stack):
    me = patient(stack, "acme-patient-0001")
    question = "When should I arrive for my appointment at Northside Family Clinic?"
    with stack.channel("orchestrator") as channel:
        ask = pb_grpc.OrchestratorServiceStub(channel).Ask
        first = ask(pb.AskRequest(question=question, idempotency_key="e2e-ask-retry-1"), timeout=60, metadata=me)
        again = ask(pb.AskRequest(question=question, idempotency_key="e2e-ask-retry-1"), timeout=60, metadata=me)
        assert again.trace_id == first.trace_id and list(again.parts) == list(first.parts)
        with pytest.raises(grpc.RpcError) as reused:
            ask(pb.AskRequest(question="Where do I park?", idempotency_key="e2e-ask-retry-1"), timeout=60,
                metadata=me)
        assert reused.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert stack.get_trace(first.trace_id).record.trace_id == first.trace_id
