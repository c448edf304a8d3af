"""Trace servicer: proto <-> domain only. Behaviour lands with issue #7."""

from __future__ import annotations

from citetrace.kit.errors import InvalidArgument, not_built_yet
from citetrace.kit.server import ServiceSpec
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc


class TraceServicer(pb_grpc.TraceServiceServicer):
    def RecordTrace(self, request, context):
        if not request.record.trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "record.trace_id is required")
        raise not_built_yet("RecordTrace", "issue #7")

    def GetTrace(self, request, context):
        if not request.trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "trace_id is required")
        raise not_built_yet("GetTrace", "issue #7")

    def ListTraces(self, request, context):
        if request.page_size < 0:
            raise InvalidArgument("PAGE_SIZE_OUT_OF_RANGE", "page_size must be >= 0")
        raise not_built_yet("ListTraces", "issue #7")

    def RecordReview(self, request, context):
        if not request.trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "trace_id is required")
        raise not_built_yet("RecordReview", "issue #7")

    def ListReviews(self, request, context):
        if not request.trace_id:
            raise InvalidArgument("MISSING_TRACE_ID", "trace_id is required")
        raise not_built_yet("ListReviews", "issue #7")

    def RecordVersionEvent(self, request, context):
        if not request.version_id:
            raise InvalidArgument("MISSING_VERSION_ID", "version_id is required")
        raise not_built_yet("RecordVersionEvent", "issue #7")

    def VerifyChain(self, request, context):
        raise not_built_yet("VerifyChain", "issue #7")

    def ApplyRetention(self, request, context):
        if request.retention_days < 0:
            raise InvalidArgument("RETENTION_OUT_OF_RANGE", "retention_days must be >= 0")
        raise not_built_yet("ApplyRetention", "issue #7")


def build_spec(settings) -> ServiceSpec:
    return ServiceSpec(
        name="trace",
        full_name=pb.DESCRIPTOR.services_by_name["TraceService"].full_name,
        servicer=TraceServicer(),
        register=pb_grpc.add_TraceServiceServicer_to_server,
    )
