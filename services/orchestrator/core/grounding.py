"""Generate and validate (DESIGN.md §4 steps 5-6): generation answers from the passages offered
(it cuts them to the context budget itself), the validator checks every claim, and a rejected
answer is regenerated with the validator's feedback a bounded number of times. The best attempt
is the one that shows the most factual claims (the later one on a tie).

Pure of transport: the generator and validator are ports; the result is a plain `Grounded`."""

from __future__ import annotations

import dataclasses
import datetime as dt

from citetrace.kit.errors import DomainError

from services.orchestrator.core.calls import Calls
from services.orchestrator.core.model import (
    Claim,
    ClaimAttempt,
    ClaimFeedback,
    ClaimValidation,
    FailureReason,
    GenerationEvidence,
    GenerationRequest,
    GenerationResult,
    Intent,
    LabelledPassage,
    Support,
    ValidationRequest,
    ValidationResult,
)
from services.orchestrator.core.ports import Generation, Validator


@dataclasses.dataclass(frozen=True)
class Attempt:
    number: int
    generated: GenerationResult
    validated: ValidationResult
    # The passages generation kept within its budget (what the claims may cite).
    given: tuple[LabelledPassage, ...]
    by_claim: dict[str, ClaimValidation]
    # Claims that may be shown (decided once per attempt).
    shown: frozenset[str]

    @property
    def factual_shown(self) -> int:
        return sum(1 for c in self.generated.claims if c.claim_id in self.shown and c.factual)


@dataclasses.dataclass
class Grounded:
    best: Attempt | None = None
    claim_attempts: list[ClaimAttempt] = dataclasses.field(default_factory=list)
    generation: GenerationEvidence | None = None
    source_policy_version: str = ""
    # The service that failed before any attempt was validated, and how.
    unavailable: tuple[str, DomainError] | None = None


def may_show(claims, by_claim: dict[str, ClaimValidation], given: tuple[LabelledPassage, ...]) -> frozenset[str]:
    """Claims that may be shown: validated, not withheld, supported (or non-factual), and every
    citation bound to a passage that was actually offered; none when the answer's lead (its first
    factual claim) was withheld because its source may not state it (AUTHORITY_MISMATCH): the claims
    after it were chosen to qualify that rule ("This gives us time to confirm your address ..." shown
    alone for "how early do I need to arrive?" once the handbook's arrival rule was withheld), and a
    next attempt is asked for a lead of its own. A lead withheld as unsupported leaves the supported
    claims after it distinguishable (PARTIALLY_ANSWERED, DESIGN.md §3)."""
    ok = _each_may_show(claims, by_claim, given)
    lead = next((claim for claim in claims if claim.factual), None)
    refused = lead is not None and lead.claim_id not in ok and (validation := by_claim.get(lead.claim_id)) is not None \
        and any(f.reason == FailureReason.AUTHORITY_MISMATCH for f in validation.findings)
    return frozenset() if refused else ok


def _each_may_show(claims, by_claim: dict[str, ClaimValidation], given: tuple[LabelledPassage, ...]) -> frozenset[str]:
    offered_ids = {lp.passage.identity.passage_id for lp in given}
    ok: set[str] = set()
    for claim in claims:
        validation = by_claim.get(claim.claim_id)
        if validation is None or validation.withheld or validation.findings:
            continue
        if not claim.factual:
            ok.add(claim.claim_id)
            continue
        if validation.support != Support.SUPPORTED or not validation.citations:
            continue
        if all(cit.passage_id in offered_ids for cit in validation.citations):
            ok.add(claim.claim_id)
    return frozenset(ok)


def failure_reasons(validation: ClaimValidation | None) -> tuple[FailureReason, ...]:
    if validation is None:
        return (FailureReason.CHECK_UNAVAILABLE,)
    reasons = [f.reason for f in validation.findings]
    if validation.support == Support.UNSUPPORTED and FailureReason.UNSUPPORTED_CLAIM not in reasons:
        reasons.append(FailureReason.UNSUPPORTED_CLAIM)
    return tuple(dict.fromkeys(reasons))


def feedback_for(claim_id: str, validation: ClaimValidation | None) -> ClaimFeedback:
    messages = [f.message for f in validation.findings] if validation else []
    if validation is not None and validation.support_reason:
        messages.append(validation.support_reason)
    return ClaimFeedback(claim_id, failure_reasons(validation),
                         validation.support if validation else Support.UNSPECIFIED, "; ".join(messages)[:500])


class GroundedAnswerer:
    def __init__(self, generation: Generation, validator: Validator, *, max_passages: int, max_chars: int,
                 max_regenerations: int) -> None:
        self.generation = generation
        self.validator = validator
        self.max_passages = max_passages
        self.max_chars = max_chars
        self.max_regenerations = max_regenerations

    def answer(self, question: str, intent: Intent, offered: tuple[LabelledPassage, ...], as_of: dt.datetime,
               calls: Calls, *, place_names: tuple[str, ...] = (), other_place_names: tuple[str, ...] = (),
               confident_only: bool = False) -> Grounded:
        out = Grounded()
        # Cumulative: a claim rejected in any earlier attempt must not come back in a later one.
        feedback: dict[str, ClaimFeedback] = {}
        for number in range(1, self.max_regenerations + 2):
            request = GenerationRequest(question, intent, offered, self.max_passages, self.max_chars,
                                        tuple(feedback.values()), number, place_names, confident_only,
                                        other_place_names)
            try:
                generated = calls("generation", "generation.generate", self.generation.generate, request)
            except DomainError as err:
                if out.best is None:
                    out.unavailable = ("generation", err)
                break
            labels = set(generated.labels_offered)
            out.generation = GenerationEvidence(
                generated.generator, generated.passages_offered or len(offered), generated.chars_offered,
                generated.labels_offered or tuple(lp.label for lp in offered), number)
            given = tuple(lp for lp in offered if lp.label in labels) or offered
            if not generated.claims:
                break
            try:
                validated = calls("citation_validator", "validator.validate", self.validator.validate,
                                  ValidationRequest(generated.claims, given, as_of, intent))
            except DomainError as err:
                if out.best is None:
                    out.unavailable = ("citation_validator", err)
                break
            out.source_policy_version = validated.source_policy_version
            by_claim = {v.claim_id: v for v in validated.claims}
            attempt = Attempt(number, generated, validated, given, by_claim,
                              may_show(generated.claims, by_claim, given))
            out.claim_attempts.extend(ClaimAttempt(c, by_claim.get(c.claim_id), number) for c in generated.claims)
            if out.best is None or attempt.factual_shown >= out.best.factual_shown:
                out.best = attempt
            if validated.passed and len(attempt.shown) == len(generated.claims):
                break
            feedback.update((c.claim_id, feedback_for(c.claim_id, by_claim.get(c.claim_id)))
                            for c in generated.claims if c.claim_id not in attempt.shown)
        if out.best is not None:
            for record in out.claim_attempts:
                record.shown = record.attempt == out.best.number and record.claim.claim_id in out.best.shown
        return out


LOCAL_PREFIX = "loc-"


def only_local(local: Grounded, general: Grounded) -> Grounded:
    """The pass over a location's own passages alone as the part's answer (when it shows something
    factual): the general pass cited them beside tenant-wide passages, whose rules the location's
    own override there ("park free of charge" beside "no parking for patients here"). The general
    pass's claims stay in claim_attempts with their verdicts, none of them shown."""
    if local.best is None or not local.best.factual_shown:
        return general
    merged = prefer_local(local, Grounded(None, general.claim_attempts, general.generation,
                                          general.source_policy_version, general.unavailable))
    merged.claim_attempts = [a if a.claim.claim_id.startswith(LOCAL_PREFIX) else dataclasses.replace(a, shown=False)
                             for a in merged.claim_attempts]
    return merged


def prefer_local(local: Grounded, general: Grounded) -> Grounded:
    """One part's answer from two grounded passes: the claims of the pass over a location's own
    passages (their IDs prefixed LOCAL_PREFIX, its attempts numbered after the general pass's) lead,
    then the general pass's. Every claim of both stays in claim_attempts with its validator verdict;
    a local pass that shows nothing factual adds only that evidence."""
    shift = max((a.attempt for a in general.claim_attempts), default=0)

    def local_claim(claim: Claim) -> Claim:
        return dataclasses.replace(claim, claim_id=LOCAL_PREFIX + claim.claim_id)

    def local_validation(v: ClaimValidation | None) -> ClaimValidation | None:
        return None if v is None else dataclasses.replace(v, claim_id=LOCAL_PREFIX + v.claim_id)

    attempts = [ClaimAttempt(local_claim(a.claim), local_validation(a.validation), a.attempt + shift, a.shown)
                for a in local.claim_attempts]
    merged = Grounded(general.best, [*general.claim_attempts, *attempts], general.generation,
                      general.source_policy_version or local.source_policy_version, general.unavailable)
    if general.generation is not None and local.generation is not None:
        merged.generation = dataclasses.replace(general.generation,
                                                attempts=general.generation.attempts + local.generation.attempts)
    lb = local.best
    if lb is None or not lb.factual_shown:
        return merged
    claims = tuple(local_claim(c) for c in lb.generated.claims)
    validations = tuple(local_validation(v) for v in lb.validated.claims)
    by_claim = {LOCAL_PREFIX + k: local_validation(v) for k, v in lb.by_claim.items()}
    shown = frozenset(LOCAL_PREFIX + k for k in lb.shown)
    gb = general.best
    if gb is None:
        merged.best = dataclasses.replace(lb, generated=dataclasses.replace(lb.generated, claims=claims),
                                          validated=dataclasses.replace(lb.validated, claims=validations),
                                          by_claim=by_claim, shown=shown, number=lb.number + shift)
        return merged
    given = (*gb.given, *(lp for lp in lb.given if lp not in gb.given))
    merged.best = Attempt(
        gb.number, dataclasses.replace(gb.generated, claims=(*claims, *gb.generated.claims)),
        dataclasses.replace(gb.validated, claims=(*validations, *gb.validated.claims),
                            findings=(*lb.validated.findings, *gb.validated.findings),
                            passed=gb.validated.passed and lb.validated.passed),
        given, {**by_claim, **gb.by_claim}, shown | gb.shown)
    return merged


def without_overridden(grounded: Grounded, claim_ids: frozenset[str]) -> Grounded:
    """The answer without `claim_ids` (superseded, not withheld: the part is not partly answered for
    them, as in only_local); they stay in claim_attempts with their verdicts, unshown, so the evidence
    keeps what was set aside."""
    best = grounded.best
    if best is None or not claim_ids & best.shown:
        return grounded
    kept = tuple(c for c in best.generated.claims if c.claim_id not in claim_ids)
    return dataclasses.replace(
        grounded, best=dataclasses.replace(best, shown=best.shown - claim_ids,
                                           generated=dataclasses.replace(best.generated, claims=kept)),
        claim_attempts=[dataclasses.replace(a, shown=False)
                        if a.attempt == best.number and a.claim.claim_id in claim_ids else a
                        for a in grounded.claim_attempts])
