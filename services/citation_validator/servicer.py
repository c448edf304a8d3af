"""Citation-validator servicer: proto <-> domain only. Behaviour lands with issue #6."""

from __future__ import annotations

from citetrace.citation_validator.v1 import citation_validator_service_pb2 as pb
from citetrace.citation_validator.v1 import citation_validator_service_pb2_grpc as pb_grpc
from citetrace.kit.errors import InvalidArgument, not_built_yet
from citetrace.kit.server import ServiceSpec


class CitationValidatorServicer(pb_grpc.CitationValidatorServiceServicer):
    def Validate(self, request, context):
        if not request.claims:
            raise InvalidArgument("NO_CLAIMS", "claims must not be empty")
        raise not_built_yet("Validate", "issue #6")


def build_spec(settings) -> ServiceSpec:
    return ServiceSpec(
        name="citation_validator",
        full_name=pb.DESCRIPTOR.services_by_name["CitationValidatorService"].full_name,
        servicer=CitationValidatorServicer(),
        register=pb_grpc.add_CitationValidatorServiceServicer_to_server,
    )
