"""Protobuf <-> the core's plain values (services/orchestrator/core/model.py), for the adapters
(downstream requests and replies) and the assembler (the answer and its trace record).

Each enum has one table, built once at import from the protobuf descriptor. A domain member the
contract does not have fails at import; a contract value the domain does not know yet (added by
another service) reads as UNSPECIFIED, and tests/orchestrator/test_structure.py fails until the
domain enum (core/model.py) names it."""

from __future__ import annotations

import functools
from enum import StrEnum
from typing import Any

from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.common.v1 import appointments_pb2 as ap_pb
from citetrace.common.v1 import common_pb2 as c_pb
from citetrace.common.v1 import route_pb2 as r_pb
from citetrace.generation.v1 import generation_service_pb2 as gen_pb
from citetrace.kit.timestamps import field_time, to_timestamp
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as sched_pb

from services.orchestrator.core import model as m
from services.orchestrator.core.clinics import LocationInfo


class EnumTable:
    """Domain member <-> protobuf number for one enum, complete in both directions."""

    def __init__(self, domain: type[StrEnum], proto_enum: Any, prefix: str) -> None:
        self.to_pb: dict[StrEnum, int] = {}
        self.from_pb: dict[int, StrEnum] = {}
        names = {member.name: member for member in domain}
        self.unknown: list[str] = []  # contract values without a domain member
        for value in proto_enum.DESCRIPTOR.values:
            member = names.pop(value.name.removeprefix(prefix), None)
            if member is None:
                if value.number:  # (a domain without UNSPECIFIED: "not set" is None)
                    self.unknown.append(value.name)
                continue
            self.to_pb[member] = value.number
            self.from_pb[value.number] = member
        if names:
            raise ImportError(f"{domain.__name__} members {sorted(names)} are not in {proto_enum.DESCRIPTOR.full_name}")
        self._unspecified = self.from_pb.get(0)

    def pb(self, member: StrEnum | None) -> int:
        return 0 if member is None else self.to_pb[member]

    def domain(self, number: int) -> Any:
        """An unknown number (a newer peer) reads as the enum's UNSPECIFIED member (or None)."""
        return self.from_pb.get(number, self._unspecified)


INTENT = EnumTable(m.Intent, c_pb.Intent, "INTENT_")
PART_KIND = EnumTable(m.PartKind, r_pb.PartKind, "PART_KIND_")
OUTCOME = EnumTable(m.Outcome, c_pb.PartOutcome, "PART_OUTCOME_")
NEXT_ACTION = EnumTable(m.NextAction, c_pb.NextAction, "NEXT_ACTION_")
CLAIM_TYPE = EnumTable(m.ClaimType, c_pb.ClaimType, "CLAIM_TYPE_")
SUPPORT = EnumTable(m.Support, c_pb.SupportVerdict, "SUPPORT_VERDICT_")
FAILURE_REASON = EnumTable(m.FailureReason, c_pb.FailureReason, "FAILURE_REASON_")
SLOT_STATUS = EnumTable(m.SlotStatus, c_pb.SlotStatus, "SLOT_STATUS_")
VERSION_STATUS = EnumTable(m.VersionStatus, c_pb.VersionStatus, "VERSION_STATUS_")
SEARCH_MODE = EnumTable(m.SearchMode, ret_pb.SearchMode, "SEARCH_MODE_")
REVIEW_STATE = EnumTable(m.ReviewState, c_pb.ReviewState, "REVIEW_STATE_")
APPOINTMENT_STATUS = EnumTable(m.AppointmentStatus, ap_pb.AppointmentStatus, "APPOINTMENT_STATUS_")
CHANGE_KIND = EnumTable(m.ChangeKind, ap_pb.ChangeKind, "CHANGE_KIND_")
PROPOSAL_STATUS = EnumTable(m.ProposalStatus, ap_pb.ProposalStatus, "PROPOSAL_STATUS_")
CONSEQUENCE_KIND = EnumTable(m.ConsequenceKind, ap_pb.ConsequenceKind, "CONSEQUENCE_KIND_")


# -- passages and search ---------------------------------------------------------------------------


def identity_from_pb(ident: c_pb.PassageIdentity) -> m.PassageIdentity:
    return m.PassageIdentity(
        passage_id=ident.passage_id, tenant_id=ident.tenant_id, document_id=ident.document_id,
        version_id=ident.version_id, start=ident.start, end=ident.end, content_sha256=ident.content_sha256,
        source_anchor=ident.source_anchor, source_class=ident.source_class,
        extraction_version=ident.extraction_version, page_start=ident.page_start, page_end=ident.page_end,
        page_label_start=ident.page_label_start, page_label_end=ident.page_label_end)


def identity_pb(ident: m.PassageIdentity) -> c_pb.PassageIdentity:
    return c_pb.PassageIdentity(
        passage_id=ident.passage_id, tenant_id=ident.tenant_id, document_id=ident.document_id,
        version_id=ident.version_id, start=ident.start, end=ident.end, content_sha256=ident.content_sha256,
        source_anchor=ident.source_anchor, source_class=ident.source_class,
        extraction_version=ident.extraction_version, page_start=ident.page_start, page_end=ident.page_end,
        page_label_start=ident.page_label_start, page_label_end=ident.page_label_end)


def passage_from_pb(passage: c_pb.Passage) -> m.Passage:
    return m.Passage(identity_from_pb(passage.identity), passage.text, passage.heading_context, passage.title,
                     passage.locale, REVIEW_STATE.domain(passage.review_state), passage.review_reason)


@functools.lru_cache(maxsize=4096)
def passage_pb(passage: m.Passage, *, with_text: bool = True) -> c_pb.Passage:
    """Memoised: a passage offered to generation, to the validator (each attempt) and kept in the
    record is built once. Callers copy it into their message and never change it."""
    return c_pb.Passage(identity=identity_pb(passage.identity), text=passage.text if with_text else "",
                        heading_context=passage.heading_context, title=passage.title, locale=passage.locale,
                        review_state=REVIEW_STATE.pb(passage.review_state), review_reason=passage.review_reason)


def labelled_pb(items: tuple[m.LabelledPassage, ...]) -> list[c_pb.LabelledPassage]:
    return [c_pb.LabelledPassage(label=item.label, passage=passage_pb(item.passage)) for item in items]


def hit_from_pb(hit: ret_pb.SearchHit) -> m.Hit:
    return m.Hit(passage_from_pb(hit.passage), hit.label, hit.lexical_score, hit.lexical_rank, hit.vector_score,
                 hit.vector_rank, hit.fused_score, hit.fused_rank, hit.rerank_score, hit.rerank_rank, hit.relevance,
                 hit.relevant)


def hit_pb(hit: m.Hit, *, with_text: bool) -> ret_pb.SearchHit:
    return ret_pb.SearchHit(
        label=hit.label, passage=passage_pb(hit.passage, with_text=with_text), lexical_score=hit.lexical_score,
        lexical_rank=hit.lexical_rank, vector_score=hit.vector_score, vector_rank=hit.vector_rank,
        fused_score=hit.fused_score, fused_rank=hit.fused_rank, rerank_score=hit.rerank_score,
        rerank_rank=hit.rerank_rank, relevance=hit.relevance, relevant=hit.relevant)


def settings_from_pb(reply: ret_pb.SearchResponse) -> m.RetrievalSettings | None:
    if not reply.HasField("settings"):
        return None
    s = reply.settings
    filters = None
    if s.HasField("filters"):
        f = s.filters
        filters = m.AppliedFilters(
            tenant_id=f.tenant_id, roles=tuple(f.roles), location_ids=tuple(f.location_ids),
            intents=tuple(INTENT.domain(i) for i in f.intents),
            locale=f.locale, status=VERSION_STATUS.domain(f.status), effective_at=field_time(f, "effective_at"),
            source_classes=tuple(f.source_classes))
    return m.RetrievalSettings(
        backend=s.backend, index_generation=s.index_generation, k=s.k, candidate_k=s.candidate_k,
        fusion_method=s.fusion_method, lexical_weight=s.lexical_weight, vector_weight=s.vector_weight, rrf_k=s.rrf_k,
        embedding_model_id=s.embedding_model_id, mode=SEARCH_MODE.domain(s.mode), filters=filters,
        rerank_backend=s.rerank_backend, rerank_model=s.rerank_model, rerank_depth=s.rerank_depth,
        rerank_ms=s.rerank_ms, rerank_fallback=s.rerank_fallback, relevance_model=s.relevance_model,
        relevance_threshold=s.relevance_threshold, relevance_best_threshold=s.relevance_best_threshold)


def settings_pb(s: m.RetrievalSettings) -> ret_pb.RetrievalSettings:
    out = ret_pb.RetrievalSettings(
        backend=s.backend, index_generation=s.index_generation, k=s.k, candidate_k=s.candidate_k,
        fusion_method=s.fusion_method, lexical_weight=s.lexical_weight, vector_weight=s.vector_weight, rrf_k=s.rrf_k,
        embedding_model_id=s.embedding_model_id, mode=SEARCH_MODE.pb(s.mode), rerank_backend=s.rerank_backend,
        rerank_model=s.rerank_model, rerank_depth=s.rerank_depth, rerank_ms=s.rerank_ms,
        rerank_fallback=s.rerank_fallback, relevance_model=s.relevance_model,
        relevance_threshold=s.relevance_threshold, relevance_best_threshold=s.relevance_best_threshold)
    if s.filters is not None:
        f = s.filters
        out.filters.CopyFrom(ret_pb.AppliedFilters(
            tenant_id=f.tenant_id, roles=f.roles, location_ids=f.location_ids,
            intents=[INTENT.pb(i) for i in f.intents], locale=f.locale,
            status=VERSION_STATUS.pb(f.status), source_classes=f.source_classes))
        if f.effective_at is not None:
            out.filters.effective_at.CopyFrom(to_timestamp(f.effective_at))
    return out


def search_pb(query: m.SearchQuery) -> ret_pb.SearchRequest:
    return ret_pb.SearchRequest(
        query=query.query, k=query.k, as_of=to_timestamp(query.as_of), mode=SEARCH_MODE.pb(query.mode),
        scope=ret_pb.SearchScope(intents=[INTENT.pb(i) for i in query.intents], location_ids=query.location_ids,
                                 locale=query.locale))


def search_from_pb(reply: ret_pb.SearchResponse) -> m.SearchResult:
    return m.SearchResult(tuple(hit_from_pb(h) for h in reply.hits), settings_from_pb(reply),
                          tuple(versions_from_pb(reply)))


def versions_from_pb(reply: ret_pb.GetPassagesResponse | ret_pb.SearchResponse) -> list[m.VersionInfo]:
    return [m.VersionInfo(v.version_id, VERSION_STATUS.domain(v.status), tuple(v.location_scope))
            for v in reply.versions]


def citation_from_pb(c: c_pb.Citation) -> m.Citation:
    return m.Citation(c.label, c.passage_id, c.document_id, c.version_id, c.start, c.end, c.content_sha256,
                      c.source_anchor, c.source_class, c.link, c.title, c.page_start, c.page_end,
                      c.page_label_start, c.page_label_end)


def citation_pb(c: m.Citation) -> c_pb.Citation:
    return c_pb.Citation(
        label=c.label, passage_id=c.passage_id, document_id=c.document_id, version_id=c.version_id, start=c.start,
        end=c.end, content_sha256=c.content_sha256, source_anchor=c.source_anchor, source_class=c.source_class,
        link=c.link, title=c.title, page_start=c.page_start, page_end=c.page_end,
        page_label_start=c.page_label_start, page_label_end=c.page_label_end)


# -- generation and validation ---------------------------------------------------------------------


def claim_from_pb(c: c_pb.Claim) -> m.Claim:
    return m.Claim(c.claim_id, c.text, tuple(c.evidence_labels), CLAIM_TYPE.domain(c.claim_type))


def claim_pb(c: m.Claim) -> c_pb.Claim:
    return c_pb.Claim(claim_id=c.claim_id, text=c.text, evidence_labels=c.evidence_labels,
                      claim_type=CLAIM_TYPE.pb(c.claim_type))


def generate_pb(request: m.GenerationRequest) -> gen_pb.GenerateRequest:
    return gen_pb.GenerateRequest(
        question=request.question, intent=INTENT.pb(request.intent), passages=labelled_pb(request.passages),
        budget=gen_pb.ContextBudget(max_passages=request.max_passages, max_chars=request.max_chars),
        feedback=[gen_pb.ClaimFeedback(claim_id=f.claim_id, reasons=[FAILURE_REASON.pb(r) for r in f.reasons],
                                       support=SUPPORT.pb(f.support), message=f.message) for f in request.feedback],
        attempt=request.attempt, place_names=request.place_names,
        confident_only=request.confident_only, other_place_names=request.other_place_names)


def generator_from_pb(g: gen_pb.GeneratorInfo) -> m.GeneratorInfo:
    return m.GeneratorInfo(g.backend, g.model_id, g.prompt_version, dict(g.settings))


def generator_pb(g: m.GeneratorInfo) -> gen_pb.GeneratorInfo:
    return gen_pb.GeneratorInfo(backend=g.backend, model_id=g.model_id, prompt_version=g.prompt_version,
                                settings=dict(g.settings))


def generated_from_pb(reply: gen_pb.GenerateResponse) -> m.GenerationResult:
    return m.GenerationResult(
        claims=tuple(claim_from_pb(c) for c in reply.claims),
        generator=generator_from_pb(reply.generator) if reply.HasField("generator") else None,
        passages_offered=reply.passages_offered, chars_offered=reply.chars_offered,
        passages_used=reply.passages_used, chars_used=reply.chars_used, labels_offered=tuple(reply.labels_offered))


def validate_pb(request: m.ValidationRequest) -> cv_pb.ValidateRequest:
    return cv_pb.ValidateRequest(claims=[claim_pb(c) for c in request.claims], offered=labelled_pb(request.offered),
                                 as_of=to_timestamp(request.as_of), intent=INTENT.pb(request.intent))


def _finding_from_pb(f: cv_pb.Finding) -> m.Finding:
    return m.Finding(FAILURE_REASON.domain(f.reason), f.label, f.passage_id, f.message)


def _finding_pb(f: m.Finding) -> cv_pb.Finding:
    return cv_pb.Finding(reason=FAILURE_REASON.pb(f.reason), label=f.label, passage_id=f.passage_id,
                         message=f.message)


def validation_from_pb(v: cv_pb.ClaimValidation) -> m.ClaimValidation:
    return m.ClaimValidation(
        claim_id=v.claim_id, findings=tuple(_finding_from_pb(f) for f in v.findings), support=SUPPORT.domain(v.support),
        support_score=v.support_score, support_reason=v.support_reason,
        citations=tuple(citation_from_pb(c) for c in v.citations), withheld=v.withheld, support_model=v.support_model)


def validation_pb(v: m.ClaimValidation) -> cv_pb.ClaimValidation:
    return cv_pb.ClaimValidation(
        claim_id=v.claim_id, findings=[_finding_pb(f) for f in v.findings], support=SUPPORT.pb(v.support),
        support_score=v.support_score, support_reason=v.support_reason,
        citations=[citation_pb(c) for c in v.citations], withheld=v.withheld, support_model=v.support_model)


def validated_from_pb(reply: cv_pb.ValidateResponse) -> m.ValidationResult:
    return m.ValidationResult(
        claims=tuple(validation_from_pb(v) for v in reply.claims),
        findings=tuple(_finding_from_pb(f) for f in reply.findings), passed=reply.passed,
        source_policy_version=reply.source_policy_version, support_model=reply.support_model)


# -- scheduling ------------------------------------------------------------------------------------


def location_from_pb(loc: sched_pb.Location) -> LocationInfo:
    return LocationInfo(loc.location_id, loc.name, loc.clinic_name, loc.time_zone or "UTC", tuple(loc.specialties),
                        tuple(loc.appointment_types), tuple(loc.aliases))


def find_slots_pb(query: m.SlotQuery) -> sched_pb.FindSlotsRequest:
    out = sched_pb.FindSlotsRequest(specialty=query.specialty, location_id=query.location_id,
                                    appointment_type=query.appointment_type, page_size=query.page_size,
                                    as_of=to_timestamp(query.as_of))
    if query.start_time is not None:
        out.start_time.CopyFrom(to_timestamp(query.start_time))
    if query.end_time is not None:
        out.end_time.CopyFrom(to_timestamp(query.end_time))
    return out


def slot_from_pb(s: c_pb.Slot) -> m.Slot:
    return m.Slot(
        slot_id=s.slot_id, version=s.version, location_id=s.location_id, location_name=s.location_name,
        time_zone=s.time_zone, provider_id=s.provider_id, provider_name=s.provider_name, specialty=s.specialty,
        appointment_type=s.appointment_type, start_time=field_time(s, "start_time"),
        end_time=field_time(s, "end_time"), status=SLOT_STATUS.domain(s.status), as_of=field_time(s, "as_of"),
        clinic_name=s.clinic_name)


def slot_pb(s: m.Slot) -> c_pb.Slot:
    out = c_pb.Slot(
        slot_id=s.slot_id, version=s.version, location_id=s.location_id, location_name=s.location_name,
        time_zone=s.time_zone, provider_id=s.provider_id, provider_name=s.provider_name, specialty=s.specialty,
        appointment_type=s.appointment_type, status=SLOT_STATUS.pb(s.status), clinic_name=s.clinic_name)
    for field in ("start_time", "end_time", "as_of"):
        value = getattr(s, field)
        if value is not None:
            getattr(out, field).CopyFrom(to_timestamp(value))
    return out


def slots_from_pb(reply: sched_pb.FindSlotsResponse) -> m.SlotResult:
    return m.SlotResult(tuple(slot_from_pb(s) for s in reply.slots), field_time(reply, "as_of"))


def _stamp_fields(out: Any, value: Any, fields: tuple[str, ...]) -> None:
    for field in fields:
        when = getattr(value, field)
        if when is not None:
            getattr(out, field).CopyFrom(to_timestamp(when))


# -- appointments and proposals --------------------------------------------------------------------

_APPOINTMENT_TIMES = ("start_time", "end_time", "updated_at", "as_of")
_PROPOSAL_TIMES = ("created_at", "expires_at", "decided_at")


def appointment_from_pb(a: ap_pb.Appointment) -> m.Appointment:
    return m.Appointment(
        appointment_id=a.appointment_id, patient_ref=a.patient_ref, status=APPOINTMENT_STATUS.domain(a.status),
        version=a.version, slot_id=a.slot_id, location_id=a.location_id, location_name=a.location_name,
        clinic_name=a.clinic_name, time_zone=a.time_zone, provider_id=a.provider_id, provider_name=a.provider_name,
        specialty=a.specialty, appointment_type=a.appointment_type,
        **{f: field_time(a, f) for f in _APPOINTMENT_TIMES})


def appointment_pb(a: m.Appointment) -> ap_pb.Appointment:
    out = ap_pb.Appointment(
        appointment_id=a.appointment_id, patient_ref=a.patient_ref, status=APPOINTMENT_STATUS.pb(a.status),
        version=a.version, slot_id=a.slot_id, location_id=a.location_id, location_name=a.location_name,
        clinic_name=a.clinic_name, time_zone=a.time_zone, provider_id=a.provider_id, provider_name=a.provider_name,
        specialty=a.specialty, appointment_type=a.appointment_type)
    _stamp_fields(out, a, _APPOINTMENT_TIMES)
    return out


def appointments_from_pb(reply: sched_pb.ListAppointmentsResponse) -> m.AppointmentList:
    return m.AppointmentList(tuple(appointment_from_pb(a) for a in reply.appointments), field_time(reply, "as_of"))


def consequence_from_pb(c: ap_pb.PolicyConsequence) -> m.PolicyConsequence:
    return m.PolicyConsequence(CONSEQUENCE_KIND.domain(c.kind), c.text, tuple(citation_from_pb(x) for x in c.citations),
                               SUPPORT.domain(c.support), c.explanation, c.part_id)


def consequence_pb(c: m.PolicyConsequence) -> ap_pb.PolicyConsequence:
    return ap_pb.PolicyConsequence(kind=CONSEQUENCE_KIND.pb(c.kind), text=c.text,
                                   citations=[citation_pb(x) for x in c.citations], support=SUPPORT.pb(c.support),
                                   explanation=c.explanation, part_id=c.part_id)


def proposal_from_pb(p: ap_pb.Proposal) -> m.Proposal:
    return m.Proposal(
        proposal_id=p.proposal_id, kind=CHANGE_KIND.domain(p.kind), status=PROPOSAL_STATUS.domain(p.status),
        patient_ref=p.patient_ref,
        appointment=appointment_from_pb(p.appointment) if p.HasField("appointment") else None,
        options=tuple(slot_from_pb(s) for s in p.options),
        consequences=tuple(consequence_from_pb(c) for c in p.consequences), review_required=p.review_required,
        review_reason=p.review_reason, created_by_ref=p.created_by_ref, decided_by_ref=p.decided_by_ref,
        ask_trace_id=p.ask_trace_id, chosen_slot_id=p.chosen_slot_id, result_appointment_id=p.result_appointment_id,
        outcome_reason=p.outcome_reason, decision_note=p.decision_note,
        consequence_rules_version=p.consequence_rules_version, policy_version_ids=tuple(p.policy_version_ids),
        version=p.version, **{f: field_time(p, f) for f in _PROPOSAL_TIMES})


def proposal_pb(p: m.Proposal) -> ap_pb.Proposal:
    out = ap_pb.Proposal(
        proposal_id=p.proposal_id, kind=CHANGE_KIND.pb(p.kind), status=PROPOSAL_STATUS.pb(p.status),
        patient_ref=p.patient_ref, options=[slot_pb(s) for s in p.options],
        consequences=[consequence_pb(c) for c in p.consequences], review_required=p.review_required,
        review_reason=p.review_reason, created_by_ref=p.created_by_ref, decided_by_ref=p.decided_by_ref,
        ask_trace_id=p.ask_trace_id, chosen_slot_id=p.chosen_slot_id, result_appointment_id=p.result_appointment_id,
        outcome_reason=p.outcome_reason, decision_note=p.decision_note,
        consequence_rules_version=p.consequence_rules_version, policy_version_ids=p.policy_version_ids,
        version=p.version)
    if p.appointment is not None:
        out.appointment.CopyFrom(appointment_pb(p.appointment))
    _stamp_fields(out, p, _PROPOSAL_TIMES)
    return out


def propose_pb(request: m.ProposalRequest) -> sched_pb.ProposeChangeRequest:
    return sched_pb.ProposeChangeRequest(
        kind=CHANGE_KIND.pb(request.kind), appointment_id=request.appointment_id,
        expected_appointment_version=request.expected_appointment_version,
        slots=[sched_pb.SlotChoice(slot_id=slot_id, expected_version=version) for slot_id, version in request.slots],
        consequences=[consequence_pb(c) for c in request.consequences], ask_trace_id=request.ask_trace_id,
        consequence_rules_version=request.consequence_rules_version, idempotency_key=request.idempotency_key)
