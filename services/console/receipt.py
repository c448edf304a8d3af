"""An evidence record (GetTraceResponse) as a reviewer reads it: per part the retrieved set beside
the citation set, the claims with their verdicts and findings, the generator and retrieval settings;
the timings, the chain position and the reviews."""

from __future__ import annotations

import dataclasses
import datetime as dt

from citetrace.common.v1 import common_pb2 as c
from citetrace.common.v1 import route_pb2 as r
from citetrace.trace.v1 import trace_service_pb2 as pb

from services.console.answer import OUTCOMES, PART_KINDS, UNKNOWN_OUTCOME, Marker, enum_label, reason_text

DECISIONS = {
    "accepted": pb.REVIEW_DECISION_ACCEPTED,
    "rejected": pb.REVIEW_DECISION_REJECTED,
    "needs-change": pb.REVIEW_DECISION_NEEDS_CHANGE,
}
DECISION_NAMES = {value: key for key, value in DECISIONS.items()}


def when(ts) -> str:
    if not ts.seconds and not ts.nanos:
        return ""
    return ts.ToDatetime(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclasses.dataclass(frozen=True)
class RetrievedRow:
    label: str
    title: str
    document_id: str
    version_id: str
    anchor: str
    span: str
    fused_rank: int
    fused_score: float
    lexical: str
    vector: str
    cited: bool
    text: str  # blank when the trace service withheld it from this reader


@dataclasses.dataclass(frozen=True)
class ClaimRow:
    claim_id: str
    text: str
    claim_type: str
    labels: str
    attempt: int
    shown: bool
    support: str
    score: float
    support_reason: str
    findings: tuple[str, ...]
    markers: tuple[Marker, ...]


@dataclasses.dataclass(frozen=True)
class PartReceipt:
    part_id: str
    kind: str
    intent: str
    outcome_name: str
    outcome_title: str
    outcome_key: str
    retrieval_settings: tuple[tuple[str, str], ...]
    retrieved: tuple[RetrievedRow, ...]
    citations: tuple[Marker, ...]
    generator: tuple[tuple[str, str], ...]
    claims: tuple[ClaimRow, ...]
    reasons: tuple[str, ...]
    answer_text: str
    error: str
    slots: int


@dataclasses.dataclass(frozen=True)
class ReviewRow:
    decision: str
    reviewer: str
    note: str
    when: str
    answer_record_hash: str
    evidence_versions: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class LinkRow:
    """A later link of the chain about this answer (e.g. an action on a proposal it made)."""

    sequence: int
    kind: str
    what: str
    when: str
    link_hash: str


def _link_row(link: pb.ChainLink) -> LinkRow:
    what = ""
    if link.HasField("action"):
        action = link.action
        what = (f"{enum_label(pb.ActionEventKind, action.kind, 'ACTION_EVENT_KIND_').lower().replace('_', ' ')}"
                f" by {action.actor_ref or '-'}" + (f", proposal {action.proposal_id}" if action.proposal_id else ""))
    return LinkRow(link.sequence, link.kind, what, when(link.created_at), link.link_hash)


@dataclasses.dataclass(frozen=True)
class ReceiptView:
    trace_id: str
    created_at: str
    as_of: str
    question: str
    question_redacted: bool
    outcome_name: str
    principal_roles: str
    route: tuple[tuple[str, str], ...]
    route_explanations: tuple[str, ...]
    parts: tuple[PartReceipt, ...]
    timings: tuple[tuple[str, str, str], ...]
    corpus: tuple[tuple[str, str], ...]
    sequence: int
    previous_hash: str
    record_hash: str
    needs_review: bool
    source_policy_version: str
    reviews: tuple[ReviewRow, ...]
    redactions: tuple[str, ...]
    links: tuple[LinkRow, ...]
    passage_text: str  # what reading the retrieved passages' text back gave this reader


def _settings_rows(settings) -> tuple[tuple[str, str], ...]:
    f = settings.filters
    rows = [("backend", settings.backend), ("index generation", settings.index_generation), ("k", str(settings.k)),
            ("candidates", str(settings.candidate_k)), ("fusion", settings.fusion_method),
            ("weights", f"lexical {settings.lexical_weight:g}, vector {settings.vector_weight:g}"),
            ("embedding model", settings.embedding_model_id),
            ("filters", f"tenant {f.tenant_id}; roles {', '.join(f.roles) or '-'}; locations "
                        f"{', '.join(f.location_ids) or 'all'}; intents "
                        f"{', '.join(enum_label(c.Intent, i, 'INTENT_').lower() for i in f.intents) or '-'}; "
                        f"locale {f.locale or '-'}; effective at {when(f.effective_at) or '-'}")]
    return tuple((k, v) for k, v in rows if v)


def build_receipt_view(reply: pb.GetTraceResponse) -> ReceiptView:
    rec = reply.record
    numbers: dict[str, Marker] = {}

    def marker(citation: c.Citation) -> Marker:
        if citation.passage_id not in numbers:
            numbers[citation.passage_id] = Marker(len(numbers) + 1, citation)
        return numbers[citation.passage_id]

    parts = []
    for part in rec.parts:
        cited_ids = {cit.passage_id for cit in part.citations}
        by_label = {cit.label: cit for cit in part.citations}
        retrieved = tuple(RetrievedRow(
            label=hit.label, title=hit.passage.title, document_id=hit.passage.identity.document_id,
            version_id=hit.passage.identity.version_id, anchor=hit.passage.identity.source_anchor,
            span=f"{hit.passage.identity.start}-{hit.passage.identity.end}", fused_rank=hit.fused_rank,
            fused_score=hit.fused_score,
            lexical=f"#{hit.lexical_rank} ({hit.lexical_score:.3f})" if hit.lexical_rank else "-",
            vector=f"#{hit.vector_rank} ({hit.vector_score:.3f})" if hit.vector_rank else "-",
            cited=hit.passage.identity.passage_id in cited_ids, text=hit.passage.text)
            for hit in part.retrieval.retrieved)
        citations = tuple(marker(cit) for cit in part.citations)
        claims = []
        for record in part.claims:
            validation = record.validation
            bound = [by_label[label] for label in record.claim.evidence_labels if label in by_label]
            claims.append(ClaimRow(
                claim_id=record.claim.claim_id, text=record.claim.text,
                claim_type=enum_label(c.ClaimType, record.claim.claim_type, "CLAIM_TYPE_"),
                labels=", ".join(record.claim.evidence_labels) or "-", attempt=record.attempt, shown=record.shown,
                support=enum_label(c.SupportVerdict, validation.support, "SUPPORT_VERDICT_"),
                score=validation.support_score, support_reason=validation.support_reason,
                findings=tuple(f"{enum_label(c.FailureReason, x.reason, 'FAILURE_REASON_')}"
                               f"{' (' + x.label + ')' if x.label else ''}: {x.message or reason_text(x.reason)}"
                               for x in validation.findings),
                markers=tuple(marker(cit) for cit in bound) if record.shown else ()))
        gen = part.generation
        generator = tuple((k, v) for k, v in (
            ("backend", gen.generator.backend), ("model", gen.generator.model_id),
            ("prompt version", gen.generator.prompt_version),
            ("offered", f"{gen.passages_offered} passages, {gen.chars_offered} characters"
             if gen.passages_offered else ""),
            ("labels offered", ", ".join(gen.labels_offered)), ("attempts", str(gen.attempts) if gen.attempts else ""),
            ("source policy", part.source_policy_version)) if v)
        outcome = OUTCOMES.get(part.outcome, UNKNOWN_OUTCOME)
        parts.append(PartReceipt(
            part_id=part.part_id, kind=PART_KINDS.get(part.kind, "Part"),
            intent=enum_label(c.Intent, part.intent, "INTENT_"),
            outcome_name=enum_label(c.PartOutcome, part.outcome, "PART_OUTCOME_"), outcome_title=outcome.title,
            outcome_key=outcome.key,
            retrieval_settings=_settings_rows(part.retrieval.settings) if part.HasField("retrieval") else (),
            retrieved=retrieved, citations=citations, generator=generator, claims=tuple(claims),
            reasons=tuple(enum_label(c.FailureReason, x, "FAILURE_REASON_") for x in part.reasons),
            answer_text=part.answer_text, error=part.error, slots=len(part.slots)))
    route = rec.route
    entities = "; ".join(f"{e.kind} '{e.surface}' = {e.value}" for e in route.entities)
    route_rows = tuple((k, v) for k, v in (
        ("in scope", "yes" if route.in_scope else "no"), ("scope reason", route.scope_reason),
        ("intents", ", ".join(enum_label(c.Intent, i, "INTENT_") for i in route.intents)),
        ("entities", entities), ("router version", route.router_version),
        ("parts", ", ".join(f"{p.part_id} {enum_label(r.PartKind, p.kind, 'PART_KIND_')}" for p in route.parts)))
        if v)
    return ReceiptView(
        trace_id=rec.trace_id, created_at=when(rec.created_at), as_of=when(rec.as_of),
        question=rec.query.raw, question_redacted=rec.query.redacted,
        outcome_name=enum_label(c.PartOutcome, rec.outcome, "PART_OUTCOME_"),
        principal_roles=", ".join(rec.principal_roles), route=route_rows,
        route_explanations=tuple(route.explanations), parts=tuple(parts),
        timings=tuple((t.service, t.stage, f"{t.duration_ms:.1f}") for t in rec.timings),
        corpus=tuple((k, v) for k, v in (("backend", rec.corpus.backend),
                                          ("index generation", rec.corpus.index_generation),
                                          ("versions", str(len(rec.corpus.version_ids)))) if v),
        sequence=rec.sequence, previous_hash=rec.previous_hash, record_hash=rec.record_hash,
        needs_review=rec.needs_review, source_policy_version=rec.source_policy_version,
        reviews=tuple(ReviewRow(DECISION_NAMES.get(x.decision, "unspecified"), x.reviewer_ref, x.rubric_note,
                                when(x.created_at), x.answer_record_hash, tuple(x.evidence_version_ids))
                      for x in reply.reviews),
        redactions=tuple(f"{when(x.redacted_at)}: {x.reason}" for x in reply.redactions),
        links=tuple(_link_row(link) for link in reply.links),
        passage_text=_readback(reply.passage_text) if reply.HasField("passage_text") else "")


def _readback(readback: pb.PassageTextReadback) -> str:
    if readback.unavailable_reason:
        return f"Passage text could not be read back: {readback.unavailable_reason}."
    return (f"Passage text read back from retrieval with your access: {readback.filled} shown, "
            f"{readback.not_visible} not visible to you, {readback.digest_mismatch} failed the digest check "
            "(never shown).")
