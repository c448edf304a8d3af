"""Orchestrator servicer: proto <-> domain only. Behaviour lands with issue #8."""

from __future__ import annotations

from citetrace.kit.errors import InvalidArgument, not_built_yet
from citetrace.kit.server import ServiceSpec
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc


class OrchestratorServicer(pb_grpc.OrchestratorServiceServicer):
    def Ask(self, request, context):
        if not request.question.strip():
            raise InvalidArgument("EMPTY_QUESTION", "question must contain non-whitespace text")
        raise not_built_yet("Ask", "issue #8")


def build_spec(settings) -> ServiceSpec:
    return ServiceSpec(
        name="orchestrator",
        full_name=pb.DESCRIPTOR.services_by_name["OrchestratorService"].full_name,
        servicer=OrchestratorServicer(),
        register=pb_grpc.add_OrchestratorServiceServicer_to_server,
    )
