"""Scheduler-gateway servicer: proto <-> domain only. The behaviour is in core.py, the system of
record behind the SlotSource interface (domain.py); the default is the SQL source."""

from __future__ import annotations

import logging

from citetrace.kit.context import current_principal
from citetrace.kit.errors import Unimplemented
from citetrace.kit.timestamps import field_time, to_timestamp
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc

from services.scheduler_gateway.convert import (
    APPOINTMENT_STATUS,
    CHANGE_KIND,
    CONFIRM_PROPOSAL_MESSAGE,
    CONFIRM_PROPOSAL_RESULT,
    PROPOSAL_STATUS,
    appointment_to_proto,
    consequence_from_proto,
    inverse,
    proposal_to_proto,
    slot_to_proto,
)
from services.scheduler_gateway.core import FindSlotsInput, SchedulerCore, is_confirmed
from services.scheduler_gateway.domain import (
    SlotChoice,
)
from services.scheduler_gateway.workflow import ProposeInput, WorkflowCore

log = logging.getLogger("citetrace.scheduler_gateway")

# Enum numbers -> domain names. A number this build does not know is passed on as its number, which
# the workflow core refuses by name (UNKNOWN_APPOINTMENT_STATUS, UNKNOWN_PROPOSAL_STATUS): every check
# of a request's content is the core's.
_APPOINTMENT_STATUS_NAME = inverse(APPOINTMENT_STATUS)
_PROPOSAL_STATUS_NAME = inverse(PROPOSAL_STATUS)
_CHANGE_KIND_NAME = inverse(CHANGE_KIND)


class SchedulerGatewayServicer(pb_grpc.SchedulerGatewayServiceServicer):
    """Translates proto <-> domain; built with its cores by services/scheduler_gateway/bootstrap.py."""

    def __init__(self, core: SchedulerCore, workflow: WorkflowCore | None = None) -> None:
        self.core = core
        self.workflow = workflow

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
        statuses = [_APPOINTMENT_STATUS_NAME.get(v, str(v)) for v in request.statuses]
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
        kind = _CHANGE_KIND_NAME.get(request.kind, "")
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
        statuses = [_PROPOSAL_STATUS_NAME.get(v, str(v)) for v in request.statuses]
        page = self._workflow().list_proposals(current_principal(), statuses, request.review_required_only,
                                               request.patient_ref, request.page_size, request.page_token)
        return pb.ListProposalsResponse(proposals=[proposal_to_proto(p) for p in page.items],
                                        next_page_token=page.next_page_token)

    def ConfirmProposal(self, request, context):
        outcome = self._workflow().confirm(current_principal(), request.proposal_id, request.slot_id, request.note,
                                           request.idempotency_key)
        read_at = to_timestamp(self._workflow().clock())
        return pb.ConfirmProposalResponse(
            result=CONFIRM_PROPOSAL_RESULT[outcome.result], proposal=proposal_to_proto(outcome.proposal),
            appointment=appointment_to_proto(outcome.appointment, read_at) if outcome.appointment else None,
            slot=slot_to_proto(outcome.slot, read_at) if outcome.slot else None,
            message=CONFIRM_PROPOSAL_MESSAGE[outcome.result])

    def RejectProposal(self, request, context):
        record = self._workflow().reject(current_principal(), request.proposal_id, request.note,
                                         request.idempotency_key)
        return pb.RejectProposalResponse(proposal=proposal_to_proto(record))
