"""Scheduler-gateway servicer: proto <-> domain only. The behaviour is in core.py, the system of
record behind the SlotSource interface (domain.py); the default is the SQL source."""

from __future__ import annotations

import datetime as dt

from citetrace.common.v1 import common_pb2
from citetrace.kit.context import current_principal
from citetrace.kit.errors import InvalidArgument
from citetrace.kit.server import ServiceSpec
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc
from google.protobuf import timestamp_pb2

from services.scheduler_gateway.core import FindSlotsInput, Limits, SchedulerCore, is_confirmed
from services.scheduler_gateway.domain import (
    BUSY,
    BUSY_TENTATIVE,
    BUSY_UNAVAILABLE,
    ENTERED_IN_ERROR,
    FREE,
    UTC,
    SlotRecord,
    SlotSource,
)
from services.scheduler_gateway.schema import default_database_url
from services.scheduler_gateway.sql_source import SqlSlotSource

_STATUS = {
    FREE: common_pb2.SLOT_STATUS_FREE,
    BUSY: common_pb2.SLOT_STATUS_BUSY,
    BUSY_UNAVAILABLE: common_pb2.SLOT_STATUS_BUSY_UNAVAILABLE,
    BUSY_TENTATIVE: common_pb2.SLOT_STATUS_BUSY_TENTATIVE,
    ENTERED_IN_ERROR: common_pb2.SLOT_STATUS_ENTERED_IN_ERROR,
}


class SchedulerGatewayServicer(pb_grpc.SchedulerGatewayServiceServicer):
    def __init__(self, core: SchedulerCore) -> None:
        self.core = core

    def warm_up(self) -> None:
        self.core.source.warm_up()

    def close(self) -> None:
        self.core.source.close()

    def FindSlots(self, request, context):
        result = self.core.find_slots(
            current_principal(),
            FindSlotsInput(
                specialty=request.specialty,
                location_id=request.location_id,
                provider_id=request.provider_id,
                appointment_type=request.appointment_type,
                start=_time(request, "start_time"),
                end=_time(request, "end_time"),
                page_size=request.page_size,
                page_token=request.page_token,
                as_of=_time(request, "as_of"),
            ),
        )
        as_of = _timestamp(result.as_of)
        return pb.FindSlotsResponse(
            slots=[slot_to_proto(slot, as_of) for slot in result.slots],
            next_page_token=result.next_page_token,
            as_of=as_of,
        )

    def ConfirmSlot(self, request, context):
        outcome = self.core.confirm_slot(
            current_principal(), request.slot_id, request.expected_version, request.patient_ref
        )
        read_at = _timestamp(self.core.clock())
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
        start_time=_timestamp(slot.start),
        end_time=_timestamp(slot.end),
        status=_STATUS.get(slot.status, common_pb2.SLOT_STATUS_UNSPECIFIED),
        as_of=as_of,
    )


def _time(message, field: str) -> dt.datetime | None:
    if not message.HasField(field):
        return None
    try:
        return getattr(message, field).ToDatetime(tzinfo=UTC)
    except (ValueError, OverflowError) as exc:
        raise InvalidArgument("INVALID_TIMESTAMP", f"{field} is not a valid timestamp", field=field) from exc


def _timestamp(value: dt.datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value.astimezone(UTC))
    return stamp


def build_spec(settings, source: SlotSource | None = None, clock=None) -> ServiceSpec:
    """The service; `source` replaces the SQL system of record (e.g. another adapter) and `clock`
    the wall clock (tests), without any change here."""
    if source is None:
        source = SqlSlotSource(settings.database_url or default_database_url(settings.data_dir))
    limits = Limits(
        max_range_days=settings.max_range_days,
        default_range_days=settings.default_range_days,
        default_page_size=settings.default_page_size,
    )
    core = SchedulerCore(source, limits) if clock is None else SchedulerCore(source, limits, clock)
    return ServiceSpec(
        name="scheduler_gateway",
        full_name=pb.DESCRIPTOR.services_by_name["SchedulerGatewayService"].full_name,
        servicer=SchedulerGatewayServicer(core),
        register=pb_grpc.add_SchedulerGatewayServiceServicer_to_server,
    )
