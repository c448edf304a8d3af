"""Generation servicer: proto <-> domain only (logic in services/generation/{generator,extractive,
openai_backend,fault}.py)."""

from __future__ import annotations

from citetrace.common.v1 import common_pb2
from citetrace.generation.v1 import generation_service_pb2 as pb
from citetrace.generation.v1 import generation_service_pb2_grpc as pb_grpc
from citetrace.vocab import enum_label

from services.generation.core import Feedback, GenerationRequest, OfferedPassage
from services.generation.generator import Generator


def to_domain(request: pb.GenerateRequest) -> GenerationRequest:
    """Translation only: what the request must satisfy is checked by the generator."""
    return GenerationRequest(
        question=request.question,
        intent=enum_label(common_pb2.Intent, request.intent, "INTENT_", unspecified="", unknown=""),
        passages=tuple(
            OfferedPassage(
                label=item.label,
                passage_id=item.passage.identity.passage_id,
                text=item.passage.text,
                source_class=item.passage.identity.source_class,
                heading_context=item.passage.heading_context or item.passage.identity.source_anchor,
                title=item.passage.title,
            )
            for item in request.passages
        ),
        feedback=tuple(
            Feedback(
                claim_id=f.claim_id,
                reasons=tuple(enum_label(common_pb2.FailureReason, r, "FAILURE_REASON_", unspecified="", unknown="")
                              for r in f.reasons),
                support=enum_label(common_pb2.SupportVerdict, f.support, "SUPPORT_VERDICT_", unspecified="", unknown=""),
                message=f.message,
            )
            for f in request.feedback
        ),
        attempt=request.attempt,
        place_names=tuple(request.place_names),
        confident_only=request.confident_only,
        other_place_names=tuple(request.other_place_names),
    )


class GenerationServicer(pb_grpc.GenerationServiceServicer):
    """Translates proto <-> domain; built with its generator by services/generation/bootstrap.py."""

    def __init__(self, generator: Generator) -> None:
        self.generator = generator

    def Generate(self, request, context):
        domain = to_domain(request)
        result = self.generator.generate(domain, request.budget.max_passages, request.budget.max_chars)
        return pb.GenerateResponse(
            claims=[
                common_pb2.Claim(
                    claim_id=c.claim_id,
                    text=c.text,
                    evidence_labels=c.evidence_labels,
                    claim_type=common_pb2.ClaimType.Value(f"CLAIM_TYPE_{c.claim_type}"),
                )
                for c in result.claims
            ],
            generator=pb.GeneratorInfo(
                backend=result.backend,
                model_id=result.model_id,
                prompt_version=result.prompt_version,
                settings=result.settings,
            ),
            passages_offered=result.passages_offered,
            chars_offered=result.chars_offered,
            passages_used=result.passages_used,
            chars_used=result.chars_used,
            labels_offered=result.labels_offered,
        )
