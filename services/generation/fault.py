"""The `test` backend: the extractive backend with one injected fault, so end-to-end tests can
prove the validator and the orchestrator catch a misbehaving generator. Never for production.

Faults (setting CITETRACE_GENERATION_TEST_FAULT), applied on attempts 1..test_fault_attempts
(0 = every attempt), so a regeneration with feedback can be shown to recover:
- invent_label: the first claim also cites "S99", a label that was never offered.
- unsupported_addition: the last claim gets " and an assessment" appended: an assertion its
  passage does not make (the supported claims beside it are untouched).
- drop_labels: the first claim loses its evidence labels (a rule without a citation).
"""

from __future__ import annotations

import dataclasses

from services.generation.core import Generated, GenerationRequest
from services.generation.extractive import ExtractiveBackend

INVENTED_LABEL = "S99"
ADDITION = " and an assessment"


class FaultInjectingBackend:
    name = "test"

    def __init__(self, inner: ExtractiveBackend, fault: str, fault_attempts: int = 1) -> None:
        self.inner = inner
        self.fault = fault
        self.fault_attempts = fault_attempts

    def warm_up(self) -> None:
        self.inner.warm_up()

    def close(self) -> None:
        self.inner.close()

    def settings(self) -> dict[str, str]:
        return {**self.inner.settings(), "test_fault": self.fault, "test_fault_attempts": str(self.fault_attempts)}

    def generate(self, request: GenerationRequest) -> Generated:
        generated = self.inner.generate(request)
        generated.settings = self.settings()
        generated.model_id = f"{generated.model_id}+fault:{self.fault}"
        active = self.fault != "none" and (self.fault_attempts == 0 or request.attempt <= self.fault_attempts)
        if not active or not generated.claims:
            return generated
        claims = generated.claims
        if self.fault == "invent_label":
            claims[0] = dataclasses.replace(claims[0], evidence_labels=[*claims[0].evidence_labels, INVENTED_LABEL])
        elif self.fault == "unsupported_addition":
            last = claims[-1]
            claims[-1] = dataclasses.replace(last, text=last.text.rstrip(" .") + ADDITION + ".")
        elif self.fault == "drop_labels":
            claims[0] = dataclasses.replace(claims[0], evidence_labels=[])
        return generated
