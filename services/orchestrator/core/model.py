"""The plain values one Ask works with (no protobuf): what the ports take and return, what the part
handlers produce and what the assembler (services/orchestrator/assembler.py) turns into the
AskResponse and the TraceRecord. Adapters (services/orchestrator/adapters.py) translate the
downstream messages to and from these; services/orchestrator/codec.py holds the one table per
enum between these names and the protobuf values.

Enum values are the protobuf names without their prefix (Intent values are the intent names
documents are filed under, as retrieval's scope filter takes them)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.orchestrator.core.routing import Route


class Intent(StrEnum):
    AVAILABILITY = "availability"
    ARRIVAL_PREPARATION = "arrival_preparation"
    CANCELLATION_RESCHEDULING = "cancellation_rescheduling"
    PROVIDER_INFORMATION = "provider_information"
    CLINICAL = "clinical"
    OTHER = "other"


class PartKind(StrEnum):
    LIVE_SLOT = "LIVE_SLOT"
    ARRIVAL_PREPARATION = "ARRIVAL_PREPARATION"
    CANCELLATION_RESCHEDULING = "CANCELLATION_RESCHEDULING"
    PROVIDER_DESCRIPTION = "PROVIDER_DESCRIPTION"
    CLINICAL_BOUNDARY = "CLINICAL_BOUNDARY"
    OTHER_POLICY = "OTHER_POLICY"
    APPOINTMENT = "APPOINTMENT"
    CHANGE_PROPOSAL = "CHANGE_PROPOSAL"
    CONTACT_DETAILS = "CONTACT_DETAILS"


class Outcome(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    ANSWERED = "ANSWERED"
    PARTIALLY_ANSWERED = "PARTIALLY_ANSWERED"
    ABSTAINED_NO_EVIDENCE = "ABSTAINED_NO_EVIDENCE"
    SOURCE_UNAVAILABLE = "SOURCE_UNAVAILABLE"
    OUT_OF_SCOPE = "OUT_OF_SCOPE"
    NEEDS_CLARIFICATION = "NEEDS_CLARIFICATION"
    CONFLICT = "CONFLICT"
    UNRESOLVED = "UNRESOLVED"


class NextAction(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    NONE = "NONE"
    CONTACT_SCHEDULING_DESK = "CONTACT_SCHEDULING_DESK"
    VIEW_POLICY = "VIEW_POLICY"
    CONTACT_CLINICIAN = "CONTACT_CLINICIAN"
    CONTACT_EMERGENCY_SERVICES = "CONTACT_EMERGENCY_SERVICES"
    PREPARE_REVIEW_TASK = "PREPARE_REVIEW_TASK"
    ROUTE_TO_POLICY_OWNER = "ROUTE_TO_POLICY_OWNER"
    ANSWER_CLARIFICATION = "ANSWER_CLARIFICATION"
    CONFIRM_SLOT = "CONFIRM_SLOT"
    RETRY_LATER = "RETRY_LATER"
    CONFIRM_CHANGE = "CONFIRM_CHANGE"
    VERIFY_CONTACT_DETAILS = "VERIFY_CONTACT_DETAILS"


class ClaimType(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    ARRIVAL_RULE = "ARRIVAL_RULE"
    PREPARATION_RULE = "PREPARATION_RULE"
    CANCELLATION_TERM = "CANCELLATION_TERM"
    RESCHEDULING_TERM = "RESCHEDULING_TERM"
    PROVIDER_DESCRIPTION = "PROVIDER_DESCRIPTION"
    SCHEDULING_RULE = "SCHEDULING_RULE"
    GENERAL_POLICY = "GENERAL_POLICY"
    NON_FACTUAL = "NON_FACTUAL"


class Support(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"
    UNRESOLVED = "UNRESOLVED"


class FailureReason(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    CITATION_GAP = "CITATION_GAP"
    CITATION_UNKNOWN = "CITATION_UNKNOWN"
    DUPLICATE_CLAIM_ID = "DUPLICATE_CLAIM_ID"
    DUPLICATE_PASSAGE_ID = "DUPLICATE_PASSAGE_ID"
    DANGLING_EVIDENCE_REF = "DANGLING_EVIDENCE_REF"
    VERSION_MISMATCH = "VERSION_MISMATCH"
    SPAN_DIGEST_MISMATCH = "SPAN_DIGEST_MISMATCH"
    LOCATOR_MISMATCH = "LOCATOR_MISMATCH"
    STALE_VERSION = "STALE_VERSION"
    AUTHORITY_MISMATCH = "AUTHORITY_MISMATCH"
    SCOPE_VIOLATION = "SCOPE_VIOLATION"
    CHECK_UNAVAILABLE = "CHECK_UNAVAILABLE"
    UNSUPPORTED_CLAIM = "UNSUPPORTED_CLAIM"
    PASSAGE_NEEDS_REVIEW = "PASSAGE_NEEDS_REVIEW"


class ReviewState(StrEnum):
    """Whether a passage may be evidence (an extraction that could not capture its context: PENDING)."""

    UNSPECIFIED = "UNSPECIFIED"
    NOT_REQUIRED = "NOT_REQUIRED"
    PENDING = "PENDING"
    APPROVED = "APPROVED"


class SlotStatus(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    FREE = "FREE"
    BUSY = "BUSY"
    BUSY_UNAVAILABLE = "BUSY_UNAVAILABLE"
    BUSY_TENTATIVE = "BUSY_TENTATIVE"
    ENTERED_IN_ERROR = "ENTERED_IN_ERROR"


class AppointmentStatus(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    BOOKED = "BOOKED"
    CANCELLED = "CANCELLED"
    FULFILLED = "FULFILLED"
    NOSHOW = "NOSHOW"
    ENTERED_IN_ERROR = "ENTERED_IN_ERROR"


class ChangeKind(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    BOOK = "BOOK"
    RESCHEDULE = "RESCHEDULE"
    CANCEL = "CANCEL"


class ProposalStatus(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    PENDING = "PENDING"
    CONFIRMED = "CONFIRMED"
    REJECTED = "REJECTED"
    EXPIRED = "EXPIRED"
    FAILED = "FAILED"


class ConsequenceKind(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    FEE = "FEE"
    REVIEW_REQUIRED = "REVIEW_REQUIRED"
    POLICY_TERM = "POLICY_TERM"
    TERMS_UNVERIFIED = "TERMS_UNVERIFIED"


class VersionStatus(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    DRAFT = "DRAFT"
    APPROVED = "APPROVED"
    RETIRED = "RETIRED"


class SearchMode(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    HYBRID = "HYBRID"
    LEXICAL = "LEXICAL"
    VECTOR = "VECTOR"


# Response-level next action: the most urgent of the parts' actions.
ACTION_PRIORITY = (
    NextAction.CONTACT_EMERGENCY_SERVICES, NextAction.CONTACT_CLINICIAN, NextAction.ANSWER_CLARIFICATION,
    NextAction.ROUTE_TO_POLICY_OWNER, NextAction.PREPARE_REVIEW_TASK, NextAction.RETRY_LATER,
    NextAction.VERIFY_CONTACT_DETAILS, NextAction.CONFIRM_CHANGE, NextAction.CONFIRM_SLOT, NextAction.VIEW_POLICY, NextAction.CONTACT_SCHEDULING_DESK, NextAction.NONE,
)
# Record-level outcome: ANSWERED only when every part is; else the most significant part outcome.
OUTCOME_PRIORITY = (
    Outcome.OUT_OF_SCOPE, Outcome.SOURCE_UNAVAILABLE, Outcome.CONFLICT, Outcome.UNRESOLVED,
    Outcome.NEEDS_CLARIFICATION, Outcome.ABSTAINED_NO_EVIDENCE, Outcome.PARTIALLY_ANSWERED, Outcome.ANSWERED,
)


def overall_action(actions: list[NextAction]) -> NextAction:
    return next((a for a in ACTION_PRIORITY if a in actions), NextAction.NONE)


def overall_outcome(outcomes: list[Outcome]) -> Outcome:
    if outcomes and all(o == Outcome.ANSWERED for o in outcomes):
        return Outcome.ANSWERED
    return next((o for o in OUTCOME_PRIORITY if o in outcomes), Outcome.UNSPECIFIED)


# -- evidence ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class PassageIdentity:
    passage_id: str
    tenant_id: str = ""
    document_id: str = ""
    version_id: str = ""
    start: int = 0
    end: int = 0
    content_sha256: str = ""
    source_anchor: str = ""
    source_class: str = ""
    extraction_version: str = ""
    # Pages of a paged source (viewer indexes, 0 = none) and their printed labels (issue 19).
    page_start: int = 0
    page_end: int = 0
    page_label_start: str = ""
    page_label_end: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Passage:
    identity: PassageIdentity
    text: str = ""
    heading_context: str = ""
    title: str = ""
    locale: str = ""
    review_state: ReviewState = ReviewState.UNSPECIFIED
    review_reason: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class LabelledPassage:
    label: str
    passage: Passage


@dataclasses.dataclass(frozen=True, slots=True)
class Hit:
    """One candidate of a search with its scores and ranks (a member of the retrieved set)."""

    passage: Passage
    label: str = ""
    lexical_score: float = 0.0
    lexical_rank: int = 0
    vector_score: float = 0.0
    vector_rank: int = 0
    fused_score: float = 0.0
    fused_rank: int = 0
    rerank_score: float = 0.0  # 0 when the rerank stage is off
    rerank_rank: int = 0
    relevance: float = 0.0  # the relevance model's probability that the passage answers the query
    relevant: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class AppliedFilters:
    tenant_id: str = ""
    roles: tuple[str, ...] = ()
    location_ids: tuple[str, ...] = ()
    intents: tuple[Intent | None, ...] = ()
    locale: str = ""
    status: VersionStatus = VersionStatus.UNSPECIFIED
    effective_at: dt.datetime | None = None
    source_classes: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class RetrievalSettings:
    """What retrieval reports it did (kept in the trace as it was reported)."""

    backend: str = ""
    index_generation: str = ""
    k: int = 0
    candidate_k: int = 0
    fusion_method: str = ""
    lexical_weight: float = 0.0
    vector_weight: float = 0.0
    rrf_k: int = 0
    embedding_model_id: str = ""
    mode: SearchMode = SearchMode.UNSPECIFIED
    filters: AppliedFilters | None = None
    rerank_backend: str = ""
    rerank_model: str = ""
    rerank_depth: int = 0
    rerank_ms: float = 0.0
    rerank_fallback: bool = False
    relevance_model: str = ""
    relevance_threshold: float = 0.0
    relevance_best_threshold: float = 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class SearchQuery:
    query: str
    intents: tuple[Intent, ...]
    k: int
    as_of: dt.datetime
    location_ids: tuple[str, ...] = ()
    locale: str = ""
    mode: SearchMode = SearchMode.HYBRID


@dataclasses.dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[Hit, ...]
    settings: RetrievalSettings | None = None
    # Each hit's version as the search admitted it (empty from a retrieval that does not say).
    versions: tuple[VersionInfo, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class VersionInfo:
    """A version as the store of record reports it (for the conflict check)."""

    version_id: str
    status: VersionStatus
    location_scope: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Citation:
    label: str
    passage_id: str
    document_id: str = ""
    version_id: str = ""
    start: int = 0
    end: int = 0
    content_sha256: str = ""
    source_anchor: str = ""
    source_class: str = ""
    link: str = ""
    title: str = ""
    page_start: int = 0
    page_end: int = 0
    page_label_start: str = ""
    page_label_end: str = ""


# -- generation and validation ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Claim:
    claim_id: str
    text: str = ""
    evidence_labels: tuple[str, ...] = ()
    claim_type: ClaimType = ClaimType.UNSPECIFIED

    @property
    def factual(self) -> bool:
        return self.claim_type != ClaimType.NON_FACTUAL


@dataclasses.dataclass(frozen=True, slots=True)
class ClaimFeedback:
    claim_id: str
    reasons: tuple[FailureReason, ...] = ()
    support: Support = Support.UNSPECIFIED
    message: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class GenerationRequest:
    question: str
    intent: Intent
    passages: tuple[LabelledPassage, ...]
    max_passages: int
    max_chars: int
    feedback: tuple[ClaimFeedback, ...] = ()
    attempt: int = 1
    place_names: tuple[str, ...] = ()
    confident_only: bool = False
    other_place_names: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class GeneratorInfo:
    backend: str = ""
    model_id: str = ""
    prompt_version: str = ""
    settings: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class GenerationResult:
    claims: tuple[Claim, ...]
    generator: GeneratorInfo | None = None
    passages_offered: int = 0
    chars_offered: int = 0
    passages_used: int = 0
    chars_used: int = 0
    # The labels of the passages generation kept within its context budget.
    labels_offered: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    reason: FailureReason
    label: str = ""
    passage_id: str = ""
    message: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class ClaimValidation:
    claim_id: str
    findings: tuple[Finding, ...] = ()
    support: Support = Support.UNSPECIFIED
    support_score: float = 0.0
    support_reason: str = ""
    # Built by the validator (pinned links and titles included): the answer shows them as they are.
    citations: tuple[Citation, ...] = ()
    withheld: bool = False
    support_model: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class ValidationRequest:
    claims: tuple[Claim, ...]
    offered: tuple[LabelledPassage, ...]
    as_of: dt.datetime
    intent: Intent


@dataclasses.dataclass(frozen=True, slots=True)
class ValidationResult:
    claims: tuple[ClaimValidation, ...]
    findings: tuple[Finding, ...] = ()
    passed: bool = False
    source_policy_version: str = ""
    support_model: str = ""


# -- scheduling ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Slot:
    slot_id: str
    version: int = 0
    location_id: str = ""
    location_name: str = ""
    time_zone: str = ""
    provider_id: str = ""
    provider_name: str = ""
    specialty: str = ""
    appointment_type: str = ""
    start_time: dt.datetime | None = None
    end_time: dt.datetime | None = None
    status: SlotStatus = SlotStatus.UNSPECIFIED
    as_of: dt.datetime | None = None
    clinic_name: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class SlotQuery:
    specialty: str
    location_id: str
    appointment_type: str
    page_size: int
    as_of: dt.datetime
    start_time: dt.datetime | None = None
    end_time: dt.datetime | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class SlotResult:
    slots: tuple[Slot, ...]
    # When the gateway read the system of record; None: the slots were not verified.
    as_of: dt.datetime | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Appointment:
    """One of the caller's appointments as the scheduler-gateway read it (with its version)."""

    appointment_id: str
    patient_ref: str = ""
    status: AppointmentStatus = AppointmentStatus.UNSPECIFIED
    version: int = 0
    slot_id: str = ""
    location_id: str = ""
    location_name: str = ""
    clinic_name: str = ""
    time_zone: str = ""
    provider_id: str = ""
    provider_name: str = ""
    specialty: str = ""
    appointment_type: str = ""
    start_time: dt.datetime | None = None
    end_time: dt.datetime | None = None
    updated_at: dt.datetime | None = None
    as_of: dt.datetime | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class AppointmentQuery:
    """The caller's own upcoming booked appointments (the patient comes from the token)."""

    specialty: str = ""
    page_size: int = 20


@dataclasses.dataclass(frozen=True, slots=True)
class AppointmentList:
    appointments: tuple[Appointment, ...]
    as_of: dt.datetime | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class PolicyConsequence:
    """What the cited policy says about one change (core/consequences.py decided it)."""

    kind: ConsequenceKind
    text: str
    citations: tuple[Citation, ...] = ()
    support: Support = Support.UNSPECIFIED
    explanation: str = ""
    part_id: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Proposal:
    """A pending (or decided) change as the scheduler-gateway's proposal store has it."""

    proposal_id: str
    kind: ChangeKind = ChangeKind.UNSPECIFIED
    status: ProposalStatus = ProposalStatus.UNSPECIFIED
    patient_ref: str = ""
    appointment: Appointment | None = None
    options: tuple[Slot, ...] = ()
    consequences: tuple[PolicyConsequence, ...] = ()
    review_required: bool = False
    review_reason: str = ""
    created_at: dt.datetime | None = None
    expires_at: dt.datetime | None = None
    decided_at: dt.datetime | None = None
    created_by_ref: str = ""
    decided_by_ref: str = ""
    ask_trace_id: str = ""
    chosen_slot_id: str = ""
    result_appointment_id: str = ""
    outcome_reason: str = ""
    decision_note: str = ""
    consequence_rules_version: str = ""
    policy_version_ids: tuple[str, ...] = ()
    version: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class ProposalRequest:
    """ProposeChange as the orchestrator asks it, for the caller (never executed by the assistant)."""

    kind: ChangeKind
    appointment_id: str = ""
    expected_appointment_version: int = 0
    # (slot_id, version) of each offered slot.
    slots: tuple[tuple[str, int], ...] = ()
    consequences: tuple[PolicyConsequence, ...] = ()
    ask_trace_id: str = ""
    consequence_rules_version: str = ""
    idempotency_key: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class StageTiming:
    service: str
    stage: str
    duration_ms: float


# -- what one Ask produced ---------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class ClaimAttempt:
    """A claim of one generation attempt with the validator's verdict (None: never validated)."""

    claim: Claim
    validation: ClaimValidation | None
    attempt: int
    shown: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class AnsweredClaim:
    claim_id: str
    text: str
    citations: tuple[Citation, ...]
    support: Support
    claim_type: ClaimType


@dataclasses.dataclass(frozen=True, slots=True)
class WithheldClaim:
    claim_id: str
    reasons: tuple[FailureReason, ...]
    support: Support


@dataclasses.dataclass(frozen=True, slots=True)
class ConflictingSource:
    citation: Citation
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class GenerationEvidence:
    """What the generator was offered and which attempt the answer came from."""

    generator: GeneratorInfo | None
    passages_offered: int
    chars_offered: int
    labels_offered: tuple[str, ...]
    attempts: int


@dataclasses.dataclass(slots=True)
class PartResult:
    """One part as its handler settled it: what the caller is shown and the evidence behind it."""

    part_id: str
    kind: PartKind | None = None
    intent: Intent | None = None
    outcome: Outcome = Outcome.UNSPECIFIED
    answer_text: str = ""
    next_action: NextAction = NextAction.UNSPECIFIED
    clarification_question: str = ""
    slots: tuple[Slot, ...] = ()
    slots_as_of: dt.datetime | None = None
    claims: tuple[AnsweredClaim, ...] = ()
    withheld: tuple[WithheldClaim, ...] = ()
    conflicts: tuple[ConflictingSource, ...] = ()
    policy_link: str = ""
    # APPOINTMENT: the caller's matching appointments; CHANGE_PROPOSAL: the proposal stored.
    appointments: tuple[Appointment, ...] = ()
    proposal: Proposal | None = None
    # Evidence (the trace record only): the retrieved set as searched, what generation was
    # offered, every claim of every attempt, the citation set, the validation reasons.
    retrieval: SearchResult | None = None
    generation: GenerationEvidence | None = None
    claim_attempts: list[ClaimAttempt] = dataclasses.field(default_factory=list)
    citations: tuple[Citation, ...] = ()
    reasons: tuple[FailureReason, ...] = ()
    source_policy_version: str = ""
    error: str = ""
    timings: list[StageTiming] = dataclasses.field(default_factory=list)

    def settle(self, outcome: Outcome, text: str, action: NextAction) -> PartResult:
        self.outcome, self.answer_text, self.next_action = outcome, text, action
        return self


@dataclasses.dataclass(frozen=True, slots=True)
class CorpusSnapshot:
    backend: str = ""
    index_generation: str = ""
    # Every version that contributed a retrieved passage, in first-seen order.
    version_ids: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Asker:
    """Who asked (the trace keeps a pseudonymous reference and the roles)."""

    tenant_id: str
    subject: str
    roles: tuple[str, ...]


@dataclasses.dataclass(slots=True)
class AskResult:
    """Everything one Ask decided, in plain values: the assembler builds the AskResponse and the
    TraceRecord from it in one pass."""

    trace_id: str
    asker: Asker
    created_at: dt.datetime
    question: str
    normalized_question: str
    as_of: dt.datetime
    # The wording catalog the answer texts came from (its locale and version go into the trace).
    wording_locale: str = ""
    wording_version: str = ""
    route: Route | None = None
    parts: list[PartResult] = dataclasses.field(default_factory=list)
    outcome: Outcome = Outcome.UNSPECIFIED
    next_action: NextAction = NextAction.UNSPECIFIED
    corpus: CorpusSnapshot | None = None
    source_policy_version: str = ""
    timings: list[StageTiming] = dataclasses.field(default_factory=list)
    # The conversation of this Ask and the previous turn's trace ID (empty on a first turn).
    conversation_id: str = ""
    previous_turn_trace_id: str = ""
