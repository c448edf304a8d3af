"""The one place that turns an Ask's plain result (core/model.py AskResult) into protobuf: the
AskResponse the caller gets and the TraceRecord the trace service keeps, built together in one
pass over the parts, so the answer and its evidence cannot disagree.

The record keeps passage identities (IDs, version, span, digest, anchor) and scores, never passage
text: the trace service reads text back from retrieval under the reader's own access rule."""

from __future__ import annotations

import dataclasses

from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.common.v1 import common_pb2 as c_pb
from citetrace.common.v1 import route_pb2 as r_pb
from citetrace.kit.timestamps import to_timestamp
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.trace.v1 import trace_service_pb2 as trace_pb

from services.orchestrator import codec
from services.orchestrator.core.model import AskResult, PartResult
from services.orchestrator.core.routing import Route


@dataclasses.dataclass(frozen=True)
class Assembled:
    response: pb.AskResponse
    record: trace_pb.TraceRecord


class ProtoAssembler:
    """The core's Assembler port."""

    def assemble(self, result: AskResult) -> Assembled:
        return assemble(result)


def assemble(result: AskResult) -> Assembled:
    response = pb.AskResponse(trace_id=result.trace_id, next_action=codec.NEXT_ACTION.pb(result.next_action),
                              conversation_id=result.conversation_id, as_of=to_timestamp(result.as_of))
    record = trace_pb.TraceRecord(
        trace_id=result.trace_id, tenant_id=result.asker.tenant_id, created_at=to_timestamp(result.created_at),
        principal_ref=result.asker.subject, principal_roles=result.asker.roles,
        query=trace_pb.QueryText(raw=result.question, normalized=result.normalized_question),
        as_of=to_timestamp(result.as_of), outcome=codec.OUTCOME.pb(result.outcome),
        source_policy_version=result.source_policy_version, wording_locale=result.wording_locale,
        wording_version=result.wording_version, conversation_id=result.conversation_id,
        previous_turn_trace_id=result.previous_turn_trace_id,
        timings=[c_pb.StageTiming(service=t.service, stage=t.stage, duration_ms=t.duration_ms) for t in result.timings])
    if result.route is not None:
        decision = route_decision(result.route)
        response.route.CopyFrom(decision)
        record.route.CopyFrom(decision)
    for part in result.parts:
        answer, part_record = _part(part)
        response.parts.append(answer)
        record.parts.append(part_record)
        if part.proposal is not None and part.proposal.proposal_id:
            response.proposal_ids.append(part.proposal.proposal_id)
    if result.corpus is not None:
        record.corpus.CopyFrom(trace_pb.CorpusSnapshot(backend=result.corpus.backend,
                                                       index_generation=result.corpus.index_generation,
                                                       version_ids=result.corpus.version_ids))
    return Assembled(response, record)


def _part(part: PartResult) -> tuple[pb.AnswerPart, trace_pb.PartRecord]:
    kind, outcome, action = codec.PART_KIND.pb(part.kind), codec.OUTCOME.pb(part.outcome), \
        codec.NEXT_ACTION.pb(part.next_action)
    slots = [codec.slot_pb(s) for s in part.slots]
    answer = pb.AnswerPart(
        part_id=part.part_id, kind=kind, outcome=outcome, answer_text=part.answer_text, next_action=action,
        clarification_question=part.clarification_question, policy_link=part.policy_link, slots=slots,
        claims=[pb.AnsweredClaim(claim_id=c.claim_id, text=c.text, citations=[codec.citation_pb(x) for x in c.citations],
                                 support=codec.SUPPORT.pb(c.support), claim_type=codec.CLAIM_TYPE.pb(c.claim_type))
                for c in part.claims],
        withheld=[pb.WithheldClaim(claim_id=w.claim_id, reasons=[codec.FAILURE_REASON.pb(r) for r in w.reasons],
                                   support=codec.SUPPORT.pb(w.support)) for w in part.withheld],
        conflicts=[pb.ConflictingSource(citation=codec.citation_pb(s.citation), text=s.text) for s in part.conflicts])
    record = trace_pb.PartRecord(
        part_id=part.part_id, kind=kind, intent=codec.INTENT.pb(part.intent), outcome=outcome, next_action=action,
        answer_text=part.answer_text, slots=slots, source_policy_version=part.source_policy_version, error=part.error,
        citations=[codec.citation_pb(c) for c in part.citations],
        reasons=[codec.FAILURE_REASON.pb(r) for r in part.reasons],
        claims=[trace_pb.ClaimRecord(
            claim=codec.claim_pb(a.claim), attempt=a.attempt, shown=a.shown,
            validation=codec.validation_pb(a.validation) if a.validation is not None else cv_pb.ClaimValidation())
            for a in part.claim_attempts])
    if part.appointments:
        appointments = [codec.appointment_pb(a) for a in part.appointments]
        answer.appointments.extend(appointments)
        record.appointments.extend(appointments)
    if part.proposal is not None:
        proposal = codec.proposal_pb(part.proposal)
        answer.proposal.CopyFrom(proposal)
        record.proposal.CopyFrom(proposal)
    if part.slots_as_of is not None:
        stamp = to_timestamp(part.slots_as_of)
        answer.slots_as_of.CopyFrom(stamp)
        record.slots_as_of.CopyFrom(stamp)
    if part.retrieval is not None:
        searched = part.retrieval
        record.retrieval.CopyFrom(trace_pb.RetrievalRecord(
            retrieved=[codec.hit_pb(h, with_text=False) for h in searched.hits]))
        if searched.settings is not None:
            record.retrieval.settings.CopyFrom(codec.settings_pb(searched.settings))
    if part.generation is not None:
        g = part.generation
        record.generation.CopyFrom(trace_pb.GenerationRecord(
            passages_offered=g.passages_offered, chars_offered=g.chars_offered, labels_offered=g.labels_offered,
            attempts=g.attempts))
        if g.generator is not None:
            record.generation.generator.CopyFrom(codec.generator_pb(g.generator))
    return answer, record


def route_decision(route: Route) -> r_pb.RouteDecision:
    decision = r_pb.RouteDecision(
        in_scope=route.in_scope, scope_reason=route.scope.reason, router_version=route.version,
        explanations=route.explanations, intents=[codec.INTENT.pb(i) for i in route.intents],
        entities=[r_pb.Entity(kind=e.kind, surface=e.surface, value=e.value, confidence=e.confidence,
                              explanation=e.explanation) for e in route.entities])
    for plan in route.parts:
        part = decision.parts.add(part_id=plan.part_id, kind=codec.PART_KIND.pb(plan.kind),
                                  intent=codec.INTENT.pb(plan.intent), missing_entities=plan.missing)
        if plan.range_start is not None:
            part.range_start.CopyFrom(to_timestamp(plan.range_start))
            part.range_end.CopyFrom(to_timestamp(plan.range_end))
    return decision
