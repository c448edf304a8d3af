"""Generation servicer: proto <-> domain only. Behaviour lands with issue #6."""

from __future__ import annotations

from citetrace.generation.v1 import generation_service_pb2 as pb
from citetrace.generation.v1 import generation_service_pb2_grpc as pb_grpc
from citetrace.kit.errors import InvalidArgument, not_built_yet
from citetrace.kit.server import ServiceSpec


class GenerationServicer(pb_grpc.GenerationServiceServicer):
    def Generate(self, request, context):
        if not request.question.strip():
            raise InvalidArgument("EMPTY_QUESTION", "question must contain non-whitespace text")
        raise not_built_yet("Generate", "issue #6")


def build_spec(settings) -> ServiceSpec:
    return ServiceSpec(
        name="generation",
        full_name=pb.DESCRIPTOR.services_by_name["GenerationService"].full_name,
        servicer=GenerationServicer(),
        register=pb_grpc.add_GenerationServiceServicer_to_server,
    )
