"""Scheduler-gateway servicer: proto <-> domain only. Behaviour lands with issue #5."""

from __future__ import annotations

from citetrace.kit.errors import InvalidArgument, not_built_yet
from citetrace.kit.server import ServiceSpec
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc


class SchedulerGatewayServicer(pb_grpc.SchedulerGatewayServiceServicer):
    def FindSlots(self, request, context):
        if not request.specialty.strip():
            raise InvalidArgument("MISSING_SPECIALTY", "specialty is required")
        raise not_built_yet("FindSlots", "issue #5")

    def ConfirmSlot(self, request, context):
        if not request.slot_id:
            raise InvalidArgument("MISSING_SLOT_ID", "slot_id is required")
        raise not_built_yet("ConfirmSlot", "issue #5")

    def ListLocations(self, request, context):
        if request.page_size < 0:
            raise InvalidArgument("PAGE_SIZE_OUT_OF_RANGE", "page_size must be >= 0")
        raise not_built_yet("ListLocations", "issue #5")


def build_spec(settings) -> ServiceSpec:
    return ServiceSpec(
        name="scheduler_gateway",
        full_name=pb.DESCRIPTOR.services_by_name["SchedulerGatewayService"].full_name,
        servicer=SchedulerGatewayServicer(),
        register=pb_grpc.add_SchedulerGatewayServiceServicer_to_server,
    )
