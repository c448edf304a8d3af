"""Trace servicer: proto <-> domain only; the behaviour (and every check of a request) is in
services.trace.core. Built with its core by services/trace/bootstrap.py."""

from __future__ import annotations

import datetime as dt

from citetrace.kit.context import current_principal
from citetrace.kit.errors import Unavailable
from citetrace.kit.timestamps import field_time, to_timestamp
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2_grpc as pb_grpc
from citetrace.vocab import enum_label

from services.trace.core import LINK_ACTION, Page, ReadbackReport, TraceCore, TraceQuery, TraceView
from services.trace.store import RedactionRow, ReviewRow, StoredLink, StoredRecord


class TraceServicer(pb_grpc.TraceServiceServicer):
    def __init__(self, core: TraceCore) -> None:
        self._core = core

    @property
    def core(self) -> TraceCore:
        if not self._core.ready:
            raise Unavailable("NOT_READY", "the trace store is not open yet")
        return self._core

    def RecordTrace(self, request, context):
        result = self.core.record_trace(current_principal(), request.record)
        return pb.RecordTraceResponse(trace_id=result.trace_id, record_hash=result.record_hash,
                                      created=result.created)

    def GetTrace(self, request, context):
        # UNSPECIFIED is the full view; a number this build lacks reaches the core, which refuses it.
        view = enum_label(pb.TraceView, request.view, "TRACE_VIEW_", unspecified="").lower() or "full"
        return trace_to_proto(self.core.get_trace(current_principal(), request.trace_id, view))

    def ListTraces(self, request, context):
        page = self.core.list_traces(current_principal(), TraceQuery(
            page_size=request.page_size, page_token=request.page_token, outcome=int(request.outcome),
            failure_reason=int(request.failure_reason), created_after=field_time(request, "created_after"),
            created_before=field_time(request, "created_before"), document_id=request.document_id,
            version_id=request.version_id, needs_review=request.needs_review))
        return pb.ListTracesResponse(traces=[summary_to_proto(r) for r in page.items],
                                     next_page_token=page.next_page_token)

    def RecordReview(self, request, context):
        row = self.core.record_review(current_principal(), request.trace_id, int(request.decision),
                                      request.rubric_note, request.answer_record_hash)
        return pb.RecordReviewResponse(review=review_to_proto(row))

    def ListReviews(self, request, context):
        page = self.core.list_reviews(current_principal(), request.trace_id, request.page_size, request.page_token)
        return pb.ListReviewsResponse(reviews=[review_to_proto(r) for r in page.items],
                                      next_page_token=page.next_page_token)

    def RecordVersionEvent(self, request, context):
        affected = self.core.record_version_event(current_principal(), request.version_id, int(request.kind),
                                                  request.replaced_by_version_id)
        return pb.RecordVersionEventResponse(affected_traces=affected)

    def RecordActionEvent(self, request, context):
        link, created = self.core.record_action_event(current_principal(), request.event)
        return pb.RecordActionEventResponse(link=link_to_proto(link), created=created)

    def ListChainLinks(self, request, context):
        page: Page = self.core.list_chain_links(
            current_principal(), subject_trace_id=request.subject_trace_id, proposal_id=request.proposal_id,
            page_size=request.page_size, page_token=request.page_token)
        return pb.ListChainLinksResponse(links=[link_to_proto(r) for r in page.items],
                                         next_page_token=page.next_page_token)

    def VerifyChain(self, request, context):
        report = self.core.verify_chain(current_principal(), request.tenant_id)
        return pb.VerifyChainResponse(
            ok=report.ok, records_checked=report.records_checked,
            first_broken_trace_id=report.first_broken_trace_id,
            first_broken_sequence=report.first_broken_sequence, detail=report.detail,
            checkpoint_sequence=report.checkpoint_sequence, checkpoint_detail=report.checkpoint_detail)

    def CheckpointChain(self, request, context):
        checkpoint, where = self.core.checkpoint(current_principal())
        created = to_timestamp(dt.datetime.fromisoformat(checkpoint.created_at.removesuffix("Z")))
        return pb.CheckpointChainResponse(sequence=checkpoint.sequence, head_hash=checkpoint.head_hash,
                                          created_at=created, key_id=checkpoint.key_id, location=where)

    def ApplyRetention(self, request, context):
        return pb.ApplyRetentionResponse(redacted=self.core.apply_retention(current_principal(),
                                                                            request.retention_days))


# --- conversions ---------------------------------------------------------------------------------

def trace_to_proto(view: TraceView) -> pb.GetTraceResponse:
    response = pb.GetTraceResponse(record=view.record)
    if view.passage_text is not None:
        response.passage_text.CopyFrom(readback_to_proto(view.passage_text))
    response.reviews.extend(review_to_proto(r) for r in view.reviews)
    response.redactions.extend(redaction_to_proto(r) for r in view.redactions)
    response.links.extend(link_to_proto(link) for link in view.links)
    return response


def readback_to_proto(report: ReadbackReport) -> pb.PassageTextReadback:
    return pb.PassageTextReadback(filled=report.filled, not_visible=report.not_visible,
                                  digest_mismatch=report.digest_mismatch,
                                  unavailable_reason=report.unavailable_reason)


def summary_to_proto(stored: StoredRecord) -> pb.TraceSummary:
    return pb.TraceSummary(
        trace_id=stored.trace_id, created_at=to_timestamp(stored.created_at), outcome=stored.outcome,
        cited_version_ids=sorted(v for k, v in stored.facets if k == "version"), needs_review=stored.needs_review)


def review_to_proto(row: ReviewRow) -> pb.Review:
    return pb.Review(
        review_id=row.review_id, trace_id=row.trace_id, decision=row.decision, reviewer_ref=row.reviewer_ref,
        rubric_note=row.rubric_note, answer_record_hash=row.answer_record_hash,
        evidence_version_ids=list(row.evidence_version_ids),
        source_policy_version=row.source_policy_version, created_at=to_timestamp(row.created_at))


def redaction_to_proto(row: RedactionRow) -> pb.RedactionEvent:
    return pb.RedactionEvent(trace_id=row.trace_id, redacted_at=to_timestamp(row.redacted_at), reason=row.reason)


def link_to_proto(link: StoredLink) -> pb.ChainLink:
    out = pb.ChainLink(link_id=link.link_id, kind=link.kind, sequence=link.sequence,
                       previous_hash=link.previous_hash, link_hash=link.link_hash,
                       created_at=to_timestamp(link.created_at), subject_trace_id=link.subject_trace_id)
    if link.kind == LINK_ACTION:
        out.action.ParseFromString(link.body)
    return out
