"""The generation use case (no grpc): budget, backend, accounting, span."""

from __future__ import annotations

import dataclasses

from citetrace.kit.telemetry import stage

from services.generation.core import (
    Backend,
    GenerationRequest,
    GenerationResult,
    apply_budget,
    effective_budget,
)
from services.generation.extractive import ExtractiveBackend
from services.generation.fault import FaultInjectingBackend
from services.generation.settings import Settings
from services.generation.validation import checked


def make_backend(settings: Settings) -> Backend:
    similarity = lead_gate = None
    if settings.semantic_selection and settings.backend != "openai":
        from citetrace.embeddings import Embedder

        from services.generation.lead import LeadGate, LeadWeights
        from services.generation.semantic import EmbeddedUnitSimilarity

        embedder = Embedder(kernels="integer")
        similarity = EmbeddedUnitSimilarity(embedder)
        if settings.lead_veto:
            lead_gate = LeadGate(embedder, LeadWeights(settings.lead_weights_file),
                                 question_tokens=similarity.question_tokens)
    extractive = ExtractiveBackend(settings.max_claims, settings.selection_ratio, similarity=similarity,
                                   lead_gate=lead_gate, max_list_claims=settings.max_list_claims)
    if settings.backend == "openai":
        from services.generation.openai_backend import OpenAIBackend

        return OpenAIBackend(
            settings.openai_base_url,
            settings.openai_model,
            api_key=settings.openai_api_key,
            timeout_seconds=settings.openai_timeout_seconds,
            response_format=settings.openai_response_format,
            temperature=settings.openai_temperature,
            max_tokens=settings.openai_max_tokens,
        )
    if settings.backend == "test":
        return FaultInjectingBackend(extractive, settings.test_fault, settings.test_fault_attempts)
    return extractive


class Generator:
    """The generation use case; built by services/generation/bootstrap.py with its backend."""

    def __init__(self, settings: Settings, backend: Backend) -> None:
        self.settings = settings
        self.backend = backend

    def warm_up(self) -> None:
        self.backend.warm_up()

    def close(self) -> None:
        self.backend.close()

    def generate(self, request: GenerationRequest, budget_passages: int = 0, budget_chars: int = 0) -> GenerationResult:
        request = checked(request, budget_passages, budget_chars)
        max_passages, max_chars = effective_budget(
            self.settings.max_passages, self.settings.max_chars, budget_passages, budget_chars
        )
        offered = apply_budget(request.passages, max_passages, max_chars)
        with stage(
            "generation", "generation.generate",
            backend=self.backend.name, attempt=request.attempt, passages_offered=len(offered),
            passages_given=len(request.passages), feedback=len(request.feedback),
        ) as span:
            generated = self.backend.generate(dataclasses.replace(request, passages=offered))
            by_label = {p.label: p for p in offered}
            used = sorted({label for c in generated.claims for label in c.evidence_labels if label in by_label})
            span.set_attribute("citetrace.claims", len(generated.claims))
            span.set_attribute("citetrace.passages_used", len(used))
        settings = {
            **generated.settings,
            "max_passages": str(max_passages),
            "max_chars": str(max_chars),
        }
        return GenerationResult(
            claims=generated.claims,
            backend=self.backend.name,
            model_id=generated.model_id,
            prompt_version=generated.prompt_version,
            settings=settings,
            labels_offered=[p.label for p in offered],
            passages_offered=len(offered),
            chars_offered=sum(len(p.text) for p in offered),
            passages_used=len(used),
            chars_used=sum(len(by_label[label].text) for label in used),
        )
