"""Retrieval servicer: proto <-> domain only; the behaviour is in services.retrieval.core."""

from __future__ import annotations

import logging

from citetrace.common.v1 import common_pb2
from citetrace.kit.context import current_principal
from citetrace.kit.errors import Unavailable
from citetrace.kit.timestamps import field_time, to_timestamp
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc
from citetrace.vocab import INTENT, VERSION_STATUS

from services.retrieval.core import (
    IngestCommand,
    ReadPassage,
    RetrievalCore,
    SearchCommand,
    SearchResult,
    SpanRequest,
)
from services.retrieval.extract.base import LABEL_FROM_PAGE_TEXT, LABEL_FROM_TREE, LABEL_NONE
from services.retrieval.store.records import (
    NOT_REQUIRED,
    PENDING,
    REVIEW_APPROVED,
    DocumentRecord,
    IngestOutcome,
    PassageRecord,
    VersionRecord,
)

log = logging.getLogger("citetrace.retrieval")

_MODES = {
    pb.SEARCH_MODE_UNSPECIFIED: "hybrid",
    pb.SEARCH_MODE_HYBRID: "hybrid",
    pb.SEARCH_MODE_LEXICAL: "lexical",
    pb.SEARCH_MODE_VECTOR: "vector",
}
_REVIEW_TO_PB = {
    NOT_REQUIRED: common_pb2.REVIEW_STATE_NOT_REQUIRED,
    PENDING: common_pb2.REVIEW_STATE_PENDING,
    REVIEW_APPROVED: common_pb2.REVIEW_STATE_APPROVED,
}
_LABEL_SOURCE = {
    LABEL_FROM_TREE: pb.PAGE_LABEL_SOURCE_TREE,
    LABEL_FROM_PAGE_TEXT: pb.PAGE_LABEL_SOURCE_PAGE_TEXT,
    LABEL_NONE: pb.PAGE_LABEL_SOURCE_NONE,
}
_MODE_TO_PB = {"hybrid": pb.SEARCH_MODE_HYBRID, "lexical": pb.SEARCH_MODE_LEXICAL, "vector": pb.SEARCH_MODE_VECTOR}


class RetrievalServicer(pb_grpc.RetrievalServiceServicer):
    """Translates proto <-> domain; built with its core by services/retrieval/bootstrap.py."""

    def __init__(self, core: RetrievalCore) -> None:
        self.core = core

    def _core(self) -> RetrievalCore:
        if not self.core.ready:
            raise Unavailable("NOT_READY", "the retrieval service is still warming up")
        return self.core

    # Every check of a request's content is the core's; enum numbers this build does not know are
    # passed on as their number, which the core refuses by name (INVALID_STATUS, UNKNOWN_INTENT, ...).

    def IngestDocument(self, request, context):
        d = request.document
        cmd = IngestCommand(
            document=DocumentRecord(tenant_id=d.tenant_id, document_id=d.document_id, source_class=d.source_class,
                                    title=d.title, source_uri=d.source_uri),
            text=request.text,
            status=status_name(request.status) or None,
            valid_from=field_time(request, "valid_from"),
            valid_to=field_time(request, "valid_to"),
            roles=tuple(request.roles),
            location_scope=tuple(request.location_scope),
            intents=intent_names(request.intents),
            locale=request.locale,
            content=request.content,
            media_type=request.media_type,
            filename=request.source_filename,
        )
        outcome = self._core().ingest(current_principal(), cmd)
        return pb.IngestDocumentResponse(
            version=version_to_proto(outcome.version),
            passages=[identity_to_proto(p, outcome.version) for p in outcome.passages],
            created=outcome.created,
            superseded_version_ids=[v.version_id for v in outcome.superseded],
            extraction=report_to_proto(outcome),
        )

    def ApprovePassages(self, request, context):
        passages = self._core().approve_passages(current_principal(), list(request.passage_ids))
        return pb.ApprovePassagesResponse(passages=[read_to_proto(p) for p in passages])

    def SetVersionStatus(self, request, context):
        version = self._core().set_status(current_principal(), request.version_id, status_name(request.status))
        return pb.SetVersionStatusResponse(version=version_to_proto(version))

    def Search(self, request, context):
        scope = request.scope
        cmd = SearchCommand(
            query=request.query, k=request.k, location_ids=tuple(scope.location_ids),
            intents=intent_names(scope.intents), locale=scope.locale, source_classes=tuple(scope.source_classes),
            as_of=field_time(request, "as_of"), mode=_MODES.get(request.mode, str(request.mode)))
        return search_to_proto(self._core().search(current_principal(), cmd))

    def GetPassages(self, request, context):
        spans = [SpanRequest(s.version_id, s.start, s.end) for s in request.spans]
        passages, versions = self._core().get_passages(current_principal(), list(request.passage_ids), spans)
        return pb.GetPassagesResponse(passages=[read_to_proto(p) for p in passages],
                                      versions=[version_to_proto(v) for v in versions])

    def ListVersions(self, request, context):
        status = status_name(request.status) or None
        versions, token = self._core().list_versions(current_principal(), request.document_id, status,
                                                     request.page_size, request.page_token)
        return pb.ListVersionsResponse(versions=[version_to_proto(v) for v in versions], next_page_token=token)


# --- conversions --------------------------------------------------------------------------------

def status_name(value: int) -> str:
    """The domain name of a VersionStatus ("" for UNSPECIFIED, the number for one this build lacks)."""
    return VERSION_STATUS.name_or(value, "" if value == common_pb2.VERSION_STATUS_UNSPECIFIED else str(value))


def intent_names(values) -> tuple[str, ...]:
    return tuple(INTENT.name_or(value, str(value)) for value in values)


def intent_numbers(names) -> list[int]:
    return [INTENT.number(name) for name in names]


def version_to_proto(v: VersionRecord) -> common_pb2.DocumentVersion:
    return common_pb2.DocumentVersion(
        document=common_pb2.Document(tenant_id=v.tenant_id, document_id=v.document_id,
                                     source_class=v.source_class, title=v.title, source_uri=v.source_uri),
        version_id=v.version_id,
        status=VERSION_STATUS.number(v.status),
        valid_from=to_timestamp(v.valid_from),
        valid_to=to_timestamp(v.valid_to),
        roles=list(v.roles),
        location_scope=list(v.location_scope),
        intents=intent_numbers(v.intents),
        locale=v.locale,
        extraction_version=v.extraction_version,
        ingested_at=to_timestamp(v.ingested_at),
        text_length=v.text_length,
        superseded_by_version_id=v.superseded_by_version_id or "",
        source_sha256=v.source_sha256,
        media_type=v.media_type,
        page_count=v.page_count,
    )


def identity_to_proto(p: PassageRecord, v: VersionRecord) -> common_pb2.PassageIdentity:
    return common_pb2.PassageIdentity(
        passage_id=p.passage_id, tenant_id=p.tenant_id, document_id=p.document_id, version_id=p.version_id,
        start=p.start, end=p.end, content_sha256=p.content_sha256, source_anchor=p.source_anchor,
        source_class=v.source_class, extraction_version=p.extraction_version, page_start=p.page_start,
        page_end=p.page_end, page_label_start=p.page_label_start, page_label_end=p.page_label_end)


def passage_to_proto(p: PassageRecord, text: str, v: VersionRecord) -> common_pb2.Passage:
    return common_pb2.Passage(identity=identity_to_proto(p, v), text=text, heading_context=p.heading_context,
                              title=v.title, locale=v.locale, review_state=_REVIEW_TO_PB[p.review_state],
                              review_reason=p.review_reason)


def report_to_proto(outcome: IngestOutcome) -> pb.ExtractionReport:
    extraction = outcome.extraction
    v = outcome.version
    report = pb.ExtractionReport(
        source_sha256=v.source_sha256, media_type=extraction.media_type if extraction else v.media_type,
        extraction_version=outcome.extraction_version or v.extraction_version,
        passages_needing_review=[p.passage_id for p in outcome.passages if p.review_state == PENDING])
    if extraction is None:
        return report
    for page in extraction.pages:
        report.pages.add(
            viewer_page=page.viewer_page, page_label=page.label, label_source=_LABEL_SOURCE[page.label_source],
            tree_label=page.tree_label or "", has_tree_label=page.tree_label is not None,
            printed_label=page.printed_label, verified=page.verified, has_text_layer=page.has_text_layer,
            start=page.start, end=page.end)
    for issue in extraction.issues:
        report.issues.add(kind=pb.ExtractionIssueKind.Value(f"EXTRACTION_ISSUE_KIND_{issue.kind}"),
                          message=issue.message, viewer_page=issue.viewer_page)
    return report


def read_to_proto(r: ReadPassage) -> common_pb2.Passage:
    return passage_to_proto(r.passage, r.text, r.version)


def search_to_proto(result: SearchResult) -> pb.SearchResponse:
    f = result.filters
    settings = pb.RetrievalSettings(
        backend=result.backend, index_generation=result.index_generation, k=result.k,
        candidate_k=result.fusion.candidate_k, fusion_method=result.fusion.method,
        lexical_weight=result.fusion.lexical_weight, vector_weight=result.fusion.vector_weight,
        rrf_k=result.fusion.rrf_k, embedding_model_id=result.embedding_model_id,
        mode=_MODE_TO_PB[result.fusion.mode],
        filters=pb.AppliedFilters(
            tenant_id=f.tenant_id, roles=list(f.roles), location_ids=list(f.location_ids), intents=intent_numbers(f.intents),
            locale=f.locale, status=VERSION_STATUS.number(f.status), effective_at=to_timestamp(f.effective_at),
            source_classes=list(f.source_classes)),
        rerank_backend=result.rerank.backend, rerank_model=result.rerank.model, rerank_depth=result.rerank.depth,
        rerank_ms=result.rerank.ms, rerank_fallback=result.rerank.fallback,
        relevance_model=result.rerank.relevance_model, relevance_threshold=result.rerank.relevance_threshold,
        relevance_best_threshold=result.rerank.relevance_best_threshold,
    )
    return pb.SearchResponse(
        hits=[pb.SearchHit(label=h.label, passage=passage_to_proto(h.passage, h.text, h.version),
                           lexical_score=h.lexical_score, lexical_rank=h.lexical_rank,
                           vector_score=h.vector_score, vector_rank=h.vector_rank,
                           fused_score=h.fused_score, fused_rank=h.fused_rank, rerank_score=h.rerank_score,
                           rerank_rank=h.rerank_rank, relevance=h.relevance, relevant=h.relevant)
              for h in result.hits],
        settings=settings,
        versions=[version_to_proto(v) for v in {h.version.version_id: h.version for h in result.hits}.values()],
    )
