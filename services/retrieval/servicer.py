"""Retrieval servicer: proto <-> domain only. Behaviour lands with the retrieval issue (#3)."""

from __future__ import annotations

from citetrace.kit.errors import InvalidArgument, not_built_yet
from citetrace.kit.server import ServiceSpec
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc


class RetrievalServicer(pb_grpc.RetrievalServiceServicer):
    def IngestDocument(self, request, context):
        if not request.document.document_id:
            raise InvalidArgument("MISSING_DOCUMENT_ID", "document.document_id is required")
        raise not_built_yet("IngestDocument", "issue #3")

    def SetVersionStatus(self, request, context):
        if not request.version_id:
            raise InvalidArgument("MISSING_VERSION_ID", "version_id is required")
        raise not_built_yet("SetVersionStatus", "issue #3")

    def Search(self, request, context):
        if not request.query.strip():
            raise InvalidArgument("EMPTY_QUERY", "query must contain non-whitespace text")
        raise not_built_yet("Search", "issue #3")

    def GetPassages(self, request, context):
        if not request.passage_ids and not request.spans:
            raise InvalidArgument("NOTHING_REQUESTED", "give passage_ids or spans")
        raise not_built_yet("GetPassages", "issue #3")

    def ListVersions(self, request, context):
        if request.page_size < 0:
            raise InvalidArgument("PAGE_SIZE_OUT_OF_RANGE", "page_size must be >= 0")
        raise not_built_yet("ListVersions", "issue #3")


def build_spec(settings) -> ServiceSpec:
    return ServiceSpec(
        name="retrieval",
        full_name=pb.DESCRIPTOR.services_by_name["RetrievalService"].full_name,
        servicer=RetrievalServicer(),
        register=pb_grpc.add_RetrievalServiceServicer_to_server,
    )
