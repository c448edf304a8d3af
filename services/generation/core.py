"""Generation core (no grpc): the request/response domain, the context budget, the backend
interface and the claim-type inference shared by the backends."""

from __future__ import annotations

import dataclasses
import re
from typing import Protocol

from citetrace.vocab import CLAIM_TYPES  # noqa: F401 - the backends read it from here

from services.generation import claimtext


@dataclasses.dataclass(frozen=True)
class OfferedPassage:
    label: str
    passage_id: str
    text: str
    source_class: str = ""
    heading_context: str = ""
    title: str = ""


@dataclasses.dataclass(frozen=True)
class Feedback:
    """The validator's verdict on one claim of an earlier attempt."""

    claim_id: str
    reasons: tuple[str, ...] = ()  # FailureReason names without prefix, e.g. "CITATION_UNKNOWN"
    support: str = ""  # SUPPORTED | UNSUPPORTED | UNRESOLVED | ""
    message: str = ""


@dataclasses.dataclass(frozen=True)
class GenerationRequest:
    question: str
    intent: str  # Intent name without prefix, e.g. "ARRIVAL_PREPARATION"
    passages: tuple[OfferedPassage, ...]  # rank order
    feedback: tuple[Feedback, ...] = ()
    attempt: int = 1
    # How the question names the place its passages were chosen for: where, never what is asked.
    place_names: tuple[str, ...] = ()
    # Only a lead the backend is confident answers the question (GenerateRequest.confident_only).
    confident_only: bool = False
    # The names of the caller's other places (GenerateRequest.other_place_names).
    other_place_names: tuple[str, ...] = ()


@dataclasses.dataclass
class Claim:
    claim_id: str
    text: str
    evidence_labels: list[str]
    claim_type: str


@dataclasses.dataclass
class Generated:
    claims: list[Claim]
    model_id: str
    prompt_version: str
    settings: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class GenerationResult:
    claims: list[Claim]
    backend: str
    model_id: str
    prompt_version: str
    settings: dict[str, str]
    labels_offered: list[str]
    passages_offered: int
    chars_offered: int
    passages_used: int
    chars_used: int


class Backend(Protocol):
    name: str

    def generate(self, request: GenerationRequest) -> Generated:
        """Claims from request.passages only (already cut to the budget). Raises
        citetrace.kit.errors.Unavailable (retryable) on any failure: never a partial answer."""

    def warm_up(self) -> None:
        """Loads what the backend needs before the first request (a model file); may be nothing."""

    def close(self) -> None:
        """Releases what the backend holds (connections); nothing for an in-process one."""


def apply_budget(passages: tuple[OfferedPassage, ...], max_passages: int, max_chars: int) -> tuple[OfferedPassage, ...]:
    """The longest prefix of the ranked passages within both limits (rank order is kept; a
    passage that does not fit ends the context: later, lower-ranked ones are not pulled ahead)."""
    kept: list[OfferedPassage] = []
    used = 0
    for passage in passages:
        if len(kept) >= max_passages or used + len(passage.text) > max_chars:
            break
        kept.append(passage)
        used += len(passage.text)
    return tuple(kept)


def effective_budget(setting_passages: int, setting_chars: int, req_passages: int, req_chars: int) -> tuple[int, int]:
    """A request's budget may tighten the configured one, never widen it."""
    passages = min(setting_passages, req_passages) if req_passages > 0 else setting_passages
    chars = min(setting_chars, req_chars) if req_chars > 0 else setting_chars
    return passages, chars


# Stems that say what kind of rule a sentence states (checked before the source class).
_TYPE_CUES: dict[str, frozenset[str]] = {
    "CANCELLATION_TERM": frozenset({"cancel", "no-show", "noshow", "show"}),
    "RESCHEDULING_TERM": frozenset({"reschedul", "rebook", "postpon"}),
    # Not "park" or "entrance": where to leave a car or which door to use is no arrival rule, and
    # typed as one, a handbook's parking sentence was withheld (a handbook may not establish an
    # ARRIVAL_RULE). A sentence with no cue of what kind of rule it states takes its document's class.
    "ARRIVAL_RULE": frozenset({"arriv", "check", "early", "late", "checkin", "recept"}),
    "PREPARATION_RULE": frozenset({"bring", "fast", "eat", "drink", "wear", "prepar", "remov", "metal", "medic",
                                   "medicin", "jewelri", "water", "id", "insur", "referr", "form"}),
    # Not "hour": hours of notice are what cancellation terms are made of ("at least 48 hours before
    # your booking"); opening hours carry "open".
    # Not "wait": waiting is what every kind of visit has ("wait in the clinic for 20 minutes after any
    # vaccination" is a preparation instruction's own step, withheld when typed a scheduling rule).
    "SCHEDULING_RULE": frozenset({"book", "walk", "walk-in", "slot", "schedul", "open", "weekday"}),
}
_ALL_CUES = frozenset().union(*_TYPE_CUES.values())
# Where a reason or a purpose given for a rule begins ("..., because ...", "... so that we can offer
# the slot to someone else").
_REASON = re.compile(r",?\s+\b(?:because|since|so that|so (?:we|you|they|it|the \w+) (?:can|could|may)|"
                     r"in order to)\b", re.IGNORECASE)
_SOURCE_CLASS_TYPE = {
    "provider_profile": "PROVIDER_DESCRIPTION",
    "cancellation_policy": "CANCELLATION_TERM",
    "preparation_instructions": "PREPARATION_RULE",
    "scheduling_policy": "SCHEDULING_RULE",
    "handbook": "GENERAL_POLICY",
    "regulatory": "GENERAL_POLICY",
}
_INTENT_TYPE = {
    "ARRIVAL_PREPARATION": "ARRIVAL_RULE",
    "CANCELLATION_RESCHEDULING": "CANCELLATION_TERM",
    "PROVIDER_INFORMATION": "PROVIDER_DESCRIPTION",
    "AVAILABILITY": "SCHEDULING_RULE",
}


def infer_claim_type(text: str, source_class: str, intent: str) -> str:
    """What a sentence establishes: its own wording first (a provider profile sentence about a
    cancellation fee states a CANCELLATION_TERM), then the source class, then the intent."""
    # A reason given for a rule ("..., because contrast and preparation are planned for the booked
    # slot") is not the rule: the kind is read from the sentence before it.
    # The whole sentence's cues break a tie of the ruled part's; a rule part with no cue at all takes
    # its document's class, as a sentence with no cue does.
    stems = claimtext.content_set(text)
    ruled = claimtext.content_set(_REASON.split(text, maxsplit=1)[0]) or stems
    hits = {kind: len(stems & cues) for kind, cues in _TYPE_CUES.items()}
    best = max(hits.values())
    if source_class == "provider_profile" and best <= 1 and not hits["CANCELLATION_TERM"] \
            and not hits["RESCHEDULING_TERM"]:
        return "PROVIDER_DESCRIPTION"
    # Booking words alone do not re-type a sentence of its document's class: every kind of rule is
    # about a booking ("if you miss three bookings ..., a deposit" is a cancellation policy's term,
    # "book your blood test a day ahead" a preparation step). Typed SCHEDULING_RULE, a type its class
    # may not establish, the validator withheld it. "book" still counts beside another cue.
    if stems & _ALL_CUES == {"book"} and source_class in _SOURCE_CLASS_TYPE:
        return _SOURCE_CLASS_TYPE[source_class]
    if best > 0 and ruled != stems and not ruled & _ALL_CUES:
        # Only the reason names a kind ("let us know 24 hours beforehand so that we can offer the
        # slot to someone else"): the rule has no cue of its own, so it takes its document's class.
        best = 0
    if best > 0:
        ranked = {kind: (len(ruled & cues), hits[kind]) for kind, cues in _TYPE_CUES.items()}
        top = max(ranked.values())
        winners = [kind for kind, n in ranked.items() if n == top]
        if len(winners) == 1:
            return winners[0]
        preferred = _INTENT_TYPE.get(intent)
        if preferred in winners:
            return preferred
        # A tie the intent does not break is broken by the document's class: "Medical card holders are
        # not charged this fee ... before further appointments are booked" ties a preparation cue ("medic")
        # with a booking one, and typed either way a cancellation policy's sentence was withheld.
        return _SOURCE_CLASS_TYPE.get(source_class) or winners[0]
    return _SOURCE_CLASS_TYPE.get(source_class) or _INTENT_TYPE.get(intent) or "GENERAL_POLICY"
