"""Scheduler-gateway servicer: proto <-> domain only. The behaviour is in core.py, the system of
record behind the SlotSource interface (domain.py); the default is the SQL source."""

from __future__ import annotations

from citetrace.common.v1 import appointments_pb2 as ap_pb
from citetrace.common.v1 import common_pb2
from citetrace.kit.context import current_principal
from citetrace.kit.errors import InvalidArgument, Unimplemented
from citetrace.kit.server import ServiceSpec
from citetrace.kit.timestamps import field_time, to_timestamp
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc
from google.protobuf import json_format, timestamp_pb2

from services.scheduler_gateway import domain as d
from services.scheduler_gateway.background import Periodic
from services.scheduler_gateway.core import FindSlotsInput, Limits, SchedulerCore, is_confirmed
from services.scheduler_gateway.domain import (
    BUSY,
    BUSY_TENTATIVE,
    BUSY_UNAVAILABLE,
    ENTERED_IN_ERROR,
    FREE,
    AppointmentRecord,
    Consequence,
    ProposalRecord,
    SlotChoice,
    SlotRecord,
    SlotSource,
)
from services.scheduler_gateway.schema import default_database_url
from services.scheduler_gateway.sql_source import SqlSlotSource
from services.scheduler_gateway.sql_workflow import SqlWorkflowStore
from services.scheduler_gateway.workflow import ProposeInput, WorkflowCore, WorkflowLimits

_STATUS = {
    FREE: common_pb2.SLOT_STATUS_FREE,
    BUSY: common_pb2.SLOT_STATUS_BUSY,
    BUSY_UNAVAILABLE: common_pb2.SLOT_STATUS_BUSY_UNAVAILABLE,
    BUSY_TENTATIVE: common_pb2.SLOT_STATUS_BUSY_TENTATIVE,
    ENTERED_IN_ERROR: common_pb2.SLOT_STATUS_ENTERED_IN_ERROR,
}


_APPOINTMENT_STATUS = {
    d.APPOINTMENT_BOOKED: ap_pb.APPOINTMENT_STATUS_BOOKED,
    d.APPOINTMENT_CANCELLED: ap_pb.APPOINTMENT_STATUS_CANCELLED,
    d.APPOINTMENT_FULFILLED: ap_pb.APPOINTMENT_STATUS_FULFILLED,
    d.APPOINTMENT_NOSHOW: ap_pb.APPOINTMENT_STATUS_NOSHOW,
    d.APPOINTMENT_ENTERED_IN_ERROR: ap_pb.APPOINTMENT_STATUS_ENTERED_IN_ERROR,
}
_CHANGE_KIND = {d.BOOK: ap_pb.CHANGE_KIND_BOOK, d.RESCHEDULE: ap_pb.CHANGE_KIND_RESCHEDULE,
                d.CANCEL: ap_pb.CHANGE_KIND_CANCEL}
_PROPOSAL_STATUS = {
    d.PENDING: ap_pb.PROPOSAL_STATUS_PENDING, d.PROPOSAL_CONFIRMED: ap_pb.PROPOSAL_STATUS_CONFIRMED,
    d.REJECTED: ap_pb.PROPOSAL_STATUS_REJECTED, d.EXPIRED: ap_pb.PROPOSAL_STATUS_EXPIRED,
    d.FAILED: ap_pb.PROPOSAL_STATUS_FAILED,
}
_CONSEQUENCE_KIND = {
    d.FEE: ap_pb.CONSEQUENCE_KIND_FEE, d.REVIEW_REQUIRED: ap_pb.CONSEQUENCE_KIND_REVIEW_REQUIRED,
    d.POLICY_TERM: ap_pb.CONSEQUENCE_KIND_POLICY_TERM, d.TERMS_UNVERIFIED: ap_pb.CONSEQUENCE_KIND_TERMS_UNVERIFIED,
}
_CONFIRM_PROPOSAL_RESULT = {
    d.CONFIRMED: pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED,
    d.SLOT_NO_LONGER_AVAILABLE: pb.CONFIRM_PROPOSAL_RESULT_SLOT_NO_LONGER_AVAILABLE,
    d.APPOINTMENT_CHANGED: pb.CONFIRM_PROPOSAL_RESULT_APPOINTMENT_CHANGED,
}
_CONFIRM_PROPOSAL_MESSAGE = {
    d.CONFIRMED: "the change is done",
    d.SLOT_NO_LONGER_AVAILABLE: "the chosen slot is no longer available (taken, changed or started)",
    d.APPOINTMENT_CHANGED: "the appointment changed since the proposal was made; nothing was changed",
}


def _inverse(mapping: dict) -> dict:
    return {v: k for k, v in mapping.items()}


class SchedulerGatewayServicer(pb_grpc.SchedulerGatewayServiceServicer):
    def __init__(self, core: SchedulerCore, workflow: WorkflowCore | None = None, background=()) -> None:
        self.core = core
        self.workflow = workflow
        # Started after warm-up, stopped before the source closes (expiry sweeper, event relay).
        self.background = tuple(background)

    def warm_up(self) -> None:
        self.core.source.warm_up()
        for task in self.background:
            task.start()

    def close(self) -> None:
        for task in self.background:
            task.stop()
        self.core.source.close()

    def _workflow(self) -> WorkflowCore:
        if self.workflow is None:
            raise Unimplemented("WORKFLOW_NEEDS_SQL_SOURCE",
                                "appointments and proposals need the SQL system of record; this gateway runs "
                                "another slot source")
        return self.workflow

    def FindSlots(self, request, context):
        result = self.core.find_slots(
            current_principal(),
            FindSlotsInput(
                specialty=request.specialty,
                location_id=request.location_id,
                provider_id=request.provider_id,
                appointment_type=request.appointment_type,
                start=field_time(request, "start_time"),
                end=field_time(request, "end_time"),
                page_size=request.page_size,
                page_token=request.page_token,
                as_of=field_time(request, "as_of"),
            ),
        )
        as_of = to_timestamp(result.as_of)
        return pb.FindSlotsResponse(
            slots=[slot_to_proto(slot, as_of) for slot in result.slots],
            next_page_token=result.next_page_token,
            as_of=as_of,
        )

    def ConfirmSlot(self, request, context):
        outcome = self.core.confirm_slot(
            current_principal(), request.slot_id, request.expected_version, request.patient_ref,
            request.idempotency_key,
        )
        read_at = to_timestamp(self.core.clock())
        if is_confirmed(outcome):
            return pb.ConfirmSlotResponse(
                result=pb.CONFIRM_RESULT_CONFIRMED,
                appointment_id=outcome.appointment_id,
                slot=slot_to_proto(outcome.slot, read_at),
                message="the slot is booked",
            )
        return pb.ConfirmSlotResponse(
            result=pb.CONFIRM_RESULT_SLOT_NO_LONGER_AVAILABLE,
            slot=slot_to_proto(outcome.slot, read_at) if outcome.slot else None,
            message="the slot is no longer available (taken, changed or already started); search again",
        )

    def ListLocations(self, request, context):
        page = self.core.list_locations(current_principal(), request.page_size, request.page_token)
        return pb.ListLocationsResponse(
            locations=[
                pb.Location(
                    location_id=loc.location_id, name=loc.name, clinic_name=loc.clinic_name,
                    time_zone=loc.time_zone, specialties=list(loc.specialties),
                    appointment_types=list(loc.appointment_types), aliases=list(loc.aliases),
                )
                for loc in page.locations
            ],
            next_page_token=page.next_page_token,
        )


    # -- appointments and proposals --------------------------------------------------------------

    def ListAppointments(self, request, context):
        statuses = [_inverse(_APPOINTMENT_STATUS).get(v) for v in request.statuses]
        if None in statuses:
            raise InvalidArgument("UNKNOWN_APPOINTMENT_STATUS", "statuses holds an unknown value", field="statuses")
        page = self._workflow().list_appointments(
            current_principal(), request.patient_ref, statuses, request.include_past, request.specialty,
            request.page_size, request.page_token)
        as_of = to_timestamp(self._workflow().clock())
        return pb.ListAppointmentsResponse(
            appointments=[appointment_to_proto(a, as_of) for a in page.items],
            next_page_token=page.next_page_token, as_of=as_of)

    def GetAppointment(self, request, context):
        found = self._workflow().get_appointment(current_principal(), request.appointment_id)
        return pb.GetAppointmentResponse(appointment=appointment_to_proto(found, to_timestamp(self._workflow().clock())))

    def ProposeChange(self, request, context):
        kind = _inverse(_CHANGE_KIND).get(request.kind, "")
        record = self._workflow().propose(current_principal(), ProposeInput(
            kind=kind, appointment_id=request.appointment_id,
            expected_appointment_version=request.expected_appointment_version,
            slots=tuple(SlotChoice(c.slot_id, c.expected_version) for c in request.slots),
            consequences=tuple(consequence_from_proto(c) for c in request.consequences),
            ask_trace_id=request.ask_trace_id, patient_ref=request.patient_ref,
            consequence_rules_version=request.consequence_rules_version, idempotency_key=request.idempotency_key))
        return pb.ProposeChangeResponse(proposal=proposal_to_proto(record))

    def GetProposal(self, request, context):
        return pb.GetProposalResponse(proposal=proposal_to_proto(
            self._workflow().get_proposal(current_principal(), request.proposal_id)))

    def ListProposals(self, request, context):
        statuses = [_inverse(_PROPOSAL_STATUS).get(v) for v in request.statuses]
        if None in statuses:
            raise InvalidArgument("UNKNOWN_PROPOSAL_STATUS", "statuses holds an unknown value", field="statuses")
        page = self._workflow().list_proposals(current_principal(), statuses, request.review_required_only,
                                               request.patient_ref, request.page_size, request.page_token)
        return pb.ListProposalsResponse(proposals=[proposal_to_proto(p) for p in page.items],
                                        next_page_token=page.next_page_token)

    def ConfirmProposal(self, request, context):
        outcome = self._workflow().confirm(current_principal(), request.proposal_id, request.slot_id, request.note,
                                           request.idempotency_key)
        read_at = to_timestamp(self._workflow().clock())
        return pb.ConfirmProposalResponse(
            result=_CONFIRM_PROPOSAL_RESULT[outcome.result], proposal=proposal_to_proto(outcome.proposal),
            appointment=appointment_to_proto(outcome.appointment, read_at) if outcome.appointment else None,
            slot=slot_to_proto(outcome.slot, read_at) if outcome.slot else None,
            message=_CONFIRM_PROPOSAL_MESSAGE[outcome.result])

    def RejectProposal(self, request, context):
        record = self._workflow().reject(current_principal(), request.proposal_id, request.note,
                                         request.idempotency_key)
        return pb.RejectProposalResponse(proposal=proposal_to_proto(record))


def appointment_to_proto(appointment: AppointmentRecord, as_of: timestamp_pb2.Timestamp) -> ap_pb.Appointment:
    slot = appointment.slot
    return ap_pb.Appointment(
        appointment_id=appointment.appointment_id, patient_ref=appointment.patient_ref,
        status=_APPOINTMENT_STATUS.get(appointment.status, ap_pb.APPOINTMENT_STATUS_UNSPECIFIED),
        version=appointment.version, slot_id=slot.slot_id, location_id=slot.location_id,
        location_name=slot.location_name, clinic_name=slot.clinic_name, time_zone=slot.time_zone,
        provider_id=slot.provider_id, provider_name=slot.provider_name, specialty=slot.specialty,
        appointment_type=slot.appointment_type, start_time=to_timestamp(slot.start), end_time=to_timestamp(slot.end),
        updated_at=to_timestamp(appointment.updated_at), as_of=as_of,
    )


def consequence_from_proto(message: ap_pb.PolicyConsequence) -> Consequence:
    return Consequence(
        kind=_inverse(_CONSEQUENCE_KIND).get(message.kind, ""), text=message.text,
        citations=tuple(json_format.MessageToDict(c, preserving_proto_field_name=True) for c in message.citations),
        support=common_pb2.SupportVerdict.Name(message.support).removeprefix("SUPPORT_VERDICT_"),
        explanation=message.explanation, part_id=message.part_id,
    )


def consequence_to_proto(consequence: Consequence) -> ap_pb.PolicyConsequence:
    return ap_pb.PolicyConsequence(
        kind=_CONSEQUENCE_KIND.get(consequence.kind, ap_pb.CONSEQUENCE_KIND_UNSPECIFIED), text=consequence.text,
        citations=[json_format.ParseDict(c, common_pb2.Citation(), ignore_unknown_fields=True)
                   for c in consequence.citations],
        support=common_pb2.SupportVerdict.Value(f"SUPPORT_VERDICT_{consequence.support or 'UNSPECIFIED'}"),
        explanation=consequence.explanation, part_id=consequence.part_id,
    )


def proposal_to_proto(proposal: ProposalRecord) -> ap_pb.Proposal:
    created = to_timestamp(proposal.created_at)
    return ap_pb.Proposal(
        proposal_id=proposal.proposal_id, kind=_CHANGE_KIND[proposal.kind], status=_PROPOSAL_STATUS[proposal.status],
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
        status=_STATUS.get(slot.status, common_pb2.SLOT_STATUS_UNSPECIFIED),
        as_of=as_of,
    )


def build_spec(settings, source: SlotSource | None = None, clock=None) -> ServiceSpec:
    """The service; `source` replaces the SQL system of record (e.g. another adapter) and `clock`
    the wall clock (tests), without any change here. Appointments and proposals need the SQL
    source (a confirmation changes slots and appointments in one transaction); with another
    source their RPCs are UNIMPLEMENTED."""
    if source is None:
        source = SqlSlotSource(settings.database_url or default_database_url(settings.data_dir))
    limits = Limits(
        max_range_days=settings.max_range_days,
        default_range_days=settings.default_range_days,
        default_page_size=settings.default_page_size,
    )
    clock_kw = {} if clock is None else {"clock": clock}
    core = SchedulerCore(source, limits, **clock_kw)
    workflow, background = None, []
    if isinstance(source, SqlSlotSource):
        workflow = WorkflowCore(SqlWorkflowStore(source), WorkflowLimits(
            proposal_ttl_seconds=settings.proposal_ttl_seconds,
            review_task_ttl_seconds=settings.review_task_ttl_seconds,
            default_page_size=settings.default_page_size), **clock_kw)
        if settings.expiry_sweep_seconds > 0:
            background.append(Periodic("scheduler-proposal-expiry", settings.expiry_sweep_seconds, workflow.expire_due))
    return ServiceSpec(
        name="scheduler_gateway",
        full_name=pb.DESCRIPTOR.services_by_name["SchedulerGatewayService"].full_name,
        servicer=SchedulerGatewayServicer(core, workflow, background),
        register=pb_grpc.add_SchedulerGatewayServiceServicer_to_server,
    )
