"""Proto <-> domain conversion of the scheduler-gateway's records (used by the servicer and by the
action-event delivery to trace)."""

from __future__ import annotations

from citetrace.common.v1 import appointments_pb2 as ap_pb
from citetrace.common.v1 import common_pb2
from citetrace.kit.timestamps import to_timestamp
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from google.protobuf import json_format, timestamp_pb2

from services.scheduler_gateway import domain as d
from services.scheduler_gateway.domain import (
    BUSY,
    BUSY_TENTATIVE,
    BUSY_UNAVAILABLE,
    ENTERED_IN_ERROR,
    FREE,
    AppointmentRecord,
    Consequence,
    ProposalRecord,
    SlotRecord,
)

SLOT_STATUS = {
    FREE: common_pb2.SLOT_STATUS_FREE,
    BUSY: common_pb2.SLOT_STATUS_BUSY,
    BUSY_UNAVAILABLE: common_pb2.SLOT_STATUS_BUSY_UNAVAILABLE,
    BUSY_TENTATIVE: common_pb2.SLOT_STATUS_BUSY_TENTATIVE,
    ENTERED_IN_ERROR: common_pb2.SLOT_STATUS_ENTERED_IN_ERROR,
}


APPOINTMENT_STATUS = {
    d.APPOINTMENT_BOOKED: ap_pb.APPOINTMENT_STATUS_BOOKED,
    d.APPOINTMENT_CANCELLED: ap_pb.APPOINTMENT_STATUS_CANCELLED,
    d.APPOINTMENT_FULFILLED: ap_pb.APPOINTMENT_STATUS_FULFILLED,
    d.APPOINTMENT_NOSHOW: ap_pb.APPOINTMENT_STATUS_NOSHOW,
    d.APPOINTMENT_ENTERED_IN_ERROR: ap_pb.APPOINTMENT_STATUS_ENTERED_IN_ERROR,
}
CHANGE_KIND = {d.BOOK: ap_pb.CHANGE_KIND_BOOK, d.RESCHEDULE: ap_pb.CHANGE_KIND_RESCHEDULE,
                d.CANCEL: ap_pb.CHANGE_KIND_CANCEL}
PROPOSAL_STATUS = {
    d.PENDING: ap_pb.PROPOSAL_STATUS_PENDING, d.PROPOSAL_CONFIRMED: ap_pb.PROPOSAL_STATUS_CONFIRMED,
    d.REJECTED: ap_pb.PROPOSAL_STATUS_REJECTED, d.EXPIRED: ap_pb.PROPOSAL_STATUS_EXPIRED,
    d.FAILED: ap_pb.PROPOSAL_STATUS_FAILED,
}
CONSEQUENCE_KIND = {
    d.FEE: ap_pb.CONSEQUENCE_KIND_FEE, d.REVIEW_REQUIRED: ap_pb.CONSEQUENCE_KIND_REVIEW_REQUIRED,
    d.POLICY_TERM: ap_pb.CONSEQUENCE_KIND_POLICY_TERM, d.TERMS_UNVERIFIED: ap_pb.CONSEQUENCE_KIND_TERMS_UNVERIFIED,
}
CONFIRM_PROPOSAL_RESULT = {
    d.CONFIRMED: pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED,
    d.SLOT_NO_LONGER_AVAILABLE: pb.CONFIRM_PROPOSAL_RESULT_SLOT_NO_LONGER_AVAILABLE,
    d.APPOINTMENT_CHANGED: pb.CONFIRM_PROPOSAL_RESULT_APPOINTMENT_CHANGED,
}
CONFIRM_PROPOSAL_MESSAGE = {
    d.CONFIRMED: "the change is done",
    d.SLOT_NO_LONGER_AVAILABLE: "the chosen slot is no longer available (taken, changed or started)",
    d.APPOINTMENT_CHANGED: "the appointment changed since the proposal was made; nothing was changed",
}


def inverse(mapping: dict) -> dict:
    return {v: k for k, v in mapping.items()}


def appointment_to_proto(appointment: AppointmentRecord, as_of: timestamp_pb2.Timestamp) -> ap_pb.Appointment:
    slot = appointment.slot
    return ap_pb.Appointment(
        appointment_id=appointment.appointment_id, patient_ref=appointment.patient_ref,
        status=APPOINTMENT_STATUS.get(appointment.status, ap_pb.APPOINTMENT_STATUS_UNSPECIFIED),
        version=appointment.version, slot_id=slot.slot_id, location_id=slot.location_id,
        location_name=slot.location_name, clinic_name=slot.clinic_name, time_zone=slot.time_zone,
        provider_id=slot.provider_id, provider_name=slot.provider_name, specialty=slot.specialty,
        appointment_type=slot.appointment_type, start_time=to_timestamp(slot.start), end_time=to_timestamp(slot.end),
        updated_at=to_timestamp(appointment.updated_at), as_of=as_of,
    )


def consequence_from_proto(message: ap_pb.PolicyConsequence) -> Consequence:
    return Consequence(
        kind=inverse(CONSEQUENCE_KIND).get(message.kind, ""), text=message.text,
        citations=tuple(json_format.MessageToDict(c, preserving_proto_field_name=True) for c in message.citations),
        support=common_pb2.SupportVerdict.Name(message.support).removeprefix("SUPPORT_VERDICT_"),
        explanation=message.explanation, part_id=message.part_id,
    )


def consequence_to_proto(consequence: Consequence) -> ap_pb.PolicyConsequence:
    return ap_pb.PolicyConsequence(
        kind=CONSEQUENCE_KIND.get(consequence.kind, ap_pb.CONSEQUENCE_KIND_UNSPECIFIED), text=consequence.text,
        citations=[json_format.ParseDict(c, common_pb2.Citation(), ignore_unknown_fields=True)
                   for c in consequence.citations],
        support=common_pb2.SupportVerdict.Value(f"SUPPORT_VERDICT_{consequence.support or 'UNSPECIFIED'}"),
        explanation=consequence.explanation, part_id=consequence.part_id,
    )


def proposal_to_proto(proposal: ProposalRecord) -> ap_pb.Proposal:
    created = to_timestamp(proposal.created_at)
    return ap_pb.Proposal(
        proposal_id=proposal.proposal_id, kind=CHANGE_KIND[proposal.kind], status=PROPOSAL_STATUS[proposal.status],
        patient_ref=proposal.patient_ref,
        appointment=appointment_to_proto(proposal.appointment, created) if proposal.appointment else None,
        options=[slot_to_proto(o, created) for o in proposal.options],
        consequences=[consequence_to_proto(c) for c in proposal.consequences],
        review_required=proposal.review_required, review_reason=proposal.review_reason, created_at=created,
        expires_at=to_timestamp(proposal.expires_at),
        decided_at=to_timestamp(proposal.decided_at) if proposal.decided_at else None,
        created_by_ref=proposal.created_by_ref, decided_by_ref=proposal.decided_by_ref,
        ask_trace_id=proposal.ask_trace_id, chosen_slot_id=proposal.chosen_slot_id,
        result_appointment_id=proposal.result_appointment_id, outcome_reason=proposal.outcome_reason,
        decision_note=proposal.decision_note, consequence_rules_version=proposal.consequence_rules_version,
        policy_version_ids=list(proposal.policy_version_ids), version=proposal.version,
    )


def slot_to_proto(slot: SlotRecord, as_of: timestamp_pb2.Timestamp) -> common_pb2.Slot:
    return common_pb2.Slot(
        slot_id=slot.slot_id,
        version=slot.version,
        location_id=slot.location_id,
        location_name=slot.location_name,
        clinic_name=slot.clinic_name,
        time_zone=slot.time_zone,
        provider_id=slot.provider_id,
        provider_name=slot.provider_name,
        specialty=slot.specialty,
        appointment_type=slot.appointment_type,
        start_time=to_timestamp(slot.start),
        end_time=to_timestamp(slot.end),
        status=SLOT_STATUS.get(slot.status, common_pb2.SLOT_STATUS_UNSPECIFIED),
        as_of=as_of,
    )
