"""Generation servicer: proto <-> domain only (logic in services/generation/{generator,extractive,
openai_backend,fault}.py)."""

from __future__ import annotations

import re

from citetrace.common.v1 import common_pb2
from citetrace.generation.v1 import generation_service_pb2 as pb
from citetrace.generation.v1 import generation_service_pb2_grpc as pb_grpc
from citetrace.kit.errors import InvalidArgument
from citetrace.kit.server import ServiceSpec

from services.generation.core import Feedback, GenerationRequest, OfferedPassage
from services.generation.generator import Generator

MAX_QUESTION_CHARS = 2000
MAX_PASSAGES = 100
_LABEL = re.compile(r"S[1-9][0-9]*")


def _enum_name(enum, value: int, prefix: str) -> str:
    try:
        name = enum.Name(value)
    except ValueError:
        return ""
    return "" if name.endswith("_UNSPECIFIED") else name.removeprefix(prefix)


def to_domain(request: pb.GenerateRequest) -> GenerationRequest:
    question = request.question.strip()
    if not question:
        raise InvalidArgument("EMPTY_QUESTION", "question must contain non-whitespace text")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidArgument("QUESTION_TOO_LONG", f"question has {len(question)} characters; limit {MAX_QUESTION_CHARS}")
    if len(request.passages) > MAX_PASSAGES:
        raise InvalidArgument("TOO_MANY_PASSAGES", f"{len(request.passages)} passages; limit {MAX_PASSAGES}")
    if request.budget.max_passages < 0 or request.budget.max_chars < 0:
        raise InvalidArgument("INVALID_BUDGET", "budget.max_passages and budget.max_chars must be >= 0")
    passages = []
    seen: set[str] = set()
    for i, item in enumerate(request.passages):
        if not _LABEL.fullmatch(item.label):
            raise InvalidArgument("INVALID_LABEL", f"passages[{i}].label {item.label!r} must look like S1, S2, ...")
        if item.label in seen:
            raise InvalidArgument("DUPLICATE_LABEL", f"passages[{i}].label {item.label} is offered twice")
        seen.add(item.label)
        identity = item.passage.identity
        passages.append(OfferedPassage(
            label=item.label,
            passage_id=identity.passage_id,
            text=item.passage.text,
            source_class=identity.source_class,
            heading_context=item.passage.heading_context or identity.source_anchor,
            title=item.passage.title,
        ))
    feedback = tuple(
        Feedback(
            claim_id=f.claim_id,
            reasons=tuple(_enum_name(common_pb2.FailureReason, r, "FAILURE_REASON_") for r in f.reasons),
            support=_enum_name(common_pb2.SupportVerdict, f.support, "SUPPORT_VERDICT_"),
            message=f.message,
        )
        for f in request.feedback
    )
    return GenerationRequest(
        question=question,
        intent=_enum_name(common_pb2.Intent, request.intent, "INTENT_"),
        passages=tuple(passages),
        feedback=feedback,
        attempt=max(1, request.attempt),
    )


class GenerationServicer(pb_grpc.GenerationServiceServicer):
    def __init__(self, generator: Generator) -> None:
        self.generator = generator

    def close(self) -> None:
        self.generator.close()

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


def build_spec(settings) -> ServiceSpec:
    return ServiceSpec(
        name="generation",
        full_name=pb.DESCRIPTOR.services_by_name["GenerationService"].full_name,
        servicer=GenerationServicer(Generator(settings)),
        register=pb_grpc.add_GenerationServiceServicer_to_server,
    )
