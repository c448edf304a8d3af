import datetime

from citetrace.citation_validator.v1 import citation_validator_service_pb2 as _citation_validator_service_pb2
from citetrace.common.v1 import appointments_pb2 as _appointments_pb2
from citetrace.common.v1 import common_pb2 as _common_pb2
from citetrace.common.v1 import route_pb2 as _route_pb2
from citetrace.generation.v1 import generation_service_pb2 as _generation_service_pb2
from citetrace.retrieval.v1 import retrieval_service_pb2 as _retrieval_service_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TraceView(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRACE_VIEW_UNSPECIFIED: _ClassVar[TraceView]
    TRACE_VIEW_BASIC: _ClassVar[TraceView]
    TRACE_VIEW_FULL: _ClassVar[TraceView]

class ReviewDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REVIEW_DECISION_UNSPECIFIED: _ClassVar[ReviewDecision]
    REVIEW_DECISION_ACCEPTED: _ClassVar[ReviewDecision]
    REVIEW_DECISION_REJECTED: _ClassVar[ReviewDecision]
    REVIEW_DECISION_NEEDS_CHANGE: _ClassVar[ReviewDecision]

class VersionEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERSION_EVENT_KIND_UNSPECIFIED: _ClassVar[VersionEventKind]
    VERSION_EVENT_KIND_SUPERSEDED: _ClassVar[VersionEventKind]
    VERSION_EVENT_KIND_RETIRED: _ClassVar[VersionEventKind]

class ActionEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTION_EVENT_KIND_UNSPECIFIED: _ClassVar[ActionEventKind]
    ACTION_EVENT_KIND_PROPOSED: _ClassVar[ActionEventKind]
    ACTION_EVENT_KIND_CONFIRMED: _ClassVar[ActionEventKind]
    ACTION_EVENT_KIND_REJECTED: _ClassVar[ActionEventKind]
    ACTION_EVENT_KIND_EXPIRED: _ClassVar[ActionEventKind]
    ACTION_EVENT_KIND_FAILED: _ClassVar[ActionEventKind]
    ACTION_EVENT_KIND_SLOT_CONFIRMED: _ClassVar[ActionEventKind]
TRACE_VIEW_UNSPECIFIED: TraceView
TRACE_VIEW_BASIC: TraceView
TRACE_VIEW_FULL: TraceView
REVIEW_DECISION_UNSPECIFIED: ReviewDecision
REVIEW_DECISION_ACCEPTED: ReviewDecision
REVIEW_DECISION_REJECTED: ReviewDecision
REVIEW_DECISION_NEEDS_CHANGE: ReviewDecision
VERSION_EVENT_KIND_UNSPECIFIED: VersionEventKind
VERSION_EVENT_KIND_SUPERSEDED: VersionEventKind
VERSION_EVENT_KIND_RETIRED: VersionEventKind
ACTION_EVENT_KIND_UNSPECIFIED: ActionEventKind
ACTION_EVENT_KIND_PROPOSED: ActionEventKind
ACTION_EVENT_KIND_CONFIRMED: ActionEventKind
ACTION_EVENT_KIND_REJECTED: ActionEventKind
ACTION_EVENT_KIND_EXPIRED: ActionEventKind
ACTION_EVENT_KIND_FAILED: ActionEventKind
ACTION_EVENT_KIND_SLOT_CONFIRMED: ActionEventKind

class QueryText(_message.Message):
    __slots__ = ("raw", "normalized", "redacted")
    RAW_FIELD_NUMBER: _ClassVar[int]
    NORMALIZED_FIELD_NUMBER: _ClassVar[int]
    REDACTED_FIELD_NUMBER: _ClassVar[int]
    raw: str
    normalized: str
    redacted: bool
    def __init__(self, raw: _Optional[str] = ..., normalized: _Optional[str] = ..., redacted: _Optional[bool] = ...) -> None: ...

class RetrievalRecord(_message.Message):
    __slots__ = ("settings", "retrieved")
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    RETRIEVED_FIELD_NUMBER: _ClassVar[int]
    settings: _retrieval_service_pb2.RetrievalSettings
    retrieved: _containers.RepeatedCompositeFieldContainer[_retrieval_service_pb2.SearchHit]
    def __init__(self, settings: _Optional[_Union[_retrieval_service_pb2.RetrievalSettings, _Mapping]] = ..., retrieved: _Optional[_Iterable[_Union[_retrieval_service_pb2.SearchHit, _Mapping]]] = ...) -> None: ...

class GenerationRecord(_message.Message):
    __slots__ = ("generator", "passages_offered", "chars_offered", "labels_offered", "attempts")
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    PASSAGES_OFFERED_FIELD_NUMBER: _ClassVar[int]
    CHARS_OFFERED_FIELD_NUMBER: _ClassVar[int]
    LABELS_OFFERED_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    generator: _generation_service_pb2.GeneratorInfo
    passages_offered: int
    chars_offered: int
    labels_offered: _containers.RepeatedScalarFieldContainer[str]
    attempts: int
    def __init__(self, generator: _Optional[_Union[_generation_service_pb2.GeneratorInfo, _Mapping]] = ..., passages_offered: _Optional[int] = ..., chars_offered: _Optional[int] = ..., labels_offered: _Optional[_Iterable[str]] = ..., attempts: _Optional[int] = ...) -> None: ...

class ClaimRecord(_message.Message):
    __slots__ = ("claim", "validation", "attempt", "shown")
    CLAIM_FIELD_NUMBER: _ClassVar[int]
    VALIDATION_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    SHOWN_FIELD_NUMBER: _ClassVar[int]
    claim: _common_pb2.Claim
    validation: _citation_validator_service_pb2.ClaimValidation
    attempt: int
    shown: bool
    def __init__(self, claim: _Optional[_Union[_common_pb2.Claim, _Mapping]] = ..., validation: _Optional[_Union[_citation_validator_service_pb2.ClaimValidation, _Mapping]] = ..., attempt: _Optional[int] = ..., shown: _Optional[bool] = ...) -> None: ...

class PartRecord(_message.Message):
    __slots__ = ("part_id", "kind", "intent", "retrieval", "generation", "claims", "citations", "reasons", "slots", "slots_as_of", "outcome", "next_action", "answer_text", "source_policy_version", "error", "appointments", "proposal")
    PART_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    SLOTS_AS_OF_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    ANSWER_TEXT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENTS_FIELD_NUMBER: _ClassVar[int]
    PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    part_id: str
    kind: _route_pb2.PartKind
    intent: _common_pb2.Intent
    retrieval: RetrievalRecord
    generation: GenerationRecord
    claims: _containers.RepeatedCompositeFieldContainer[ClaimRecord]
    citations: _containers.RepeatedCompositeFieldContainer[_common_pb2.Citation]
    reasons: _containers.RepeatedScalarFieldContainer[_common_pb2.FailureReason]
    slots: _containers.RepeatedCompositeFieldContainer[_common_pb2.Slot]
    slots_as_of: _timestamp_pb2.Timestamp
    outcome: _common_pb2.PartOutcome
    next_action: _common_pb2.NextAction
    answer_text: str
    source_policy_version: str
    error: str
    appointments: _containers.RepeatedCompositeFieldContainer[_appointments_pb2.Appointment]
    proposal: _appointments_pb2.Proposal
    def __init__(self, part_id: _Optional[str] = ..., kind: _Optional[_Union[_route_pb2.PartKind, str]] = ..., intent: _Optional[_Union[_common_pb2.Intent, str]] = ..., retrieval: _Optional[_Union[RetrievalRecord, _Mapping]] = ..., generation: _Optional[_Union[GenerationRecord, _Mapping]] = ..., claims: _Optional[_Iterable[_Union[ClaimRecord, _Mapping]]] = ..., citations: _Optional[_Iterable[_Union[_common_pb2.Citation, _Mapping]]] = ..., reasons: _Optional[_Iterable[_Union[_common_pb2.FailureReason, str]]] = ..., slots: _Optional[_Iterable[_Union[_common_pb2.Slot, _Mapping]]] = ..., slots_as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., outcome: _Optional[_Union[_common_pb2.PartOutcome, str]] = ..., next_action: _Optional[_Union[_common_pb2.NextAction, str]] = ..., answer_text: _Optional[str] = ..., source_policy_version: _Optional[str] = ..., error: _Optional[str] = ..., appointments: _Optional[_Iterable[_Union[_appointments_pb2.Appointment, _Mapping]]] = ..., proposal: _Optional[_Union[_appointments_pb2.Proposal, _Mapping]] = ...) -> None: ...

class CorpusSnapshot(_message.Message):
    __slots__ = ("backend", "index_generation", "version_ids")
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    INDEX_GENERATION_FIELD_NUMBER: _ClassVar[int]
    VERSION_IDS_FIELD_NUMBER: _ClassVar[int]
    backend: str
    index_generation: str
    version_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, backend: _Optional[str] = ..., index_generation: _Optional[str] = ..., version_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class TraceRecord(_message.Message):
    __slots__ = ("trace_id", "tenant_id", "created_at", "principal_ref", "principal_roles", "query", "as_of", "route", "parts", "timings", "corpus", "outcome", "previous_hash", "record_hash", "sequence", "needs_review", "source_policy_version", "wording_locale", "wording_version", "conversation_id", "previous_turn_trace_id")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_REF_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_ROLES_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    CORPUS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_HASH_FIELD_NUMBER: _ClassVar[int]
    RECORD_HASH_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    NEEDS_REVIEW_FIELD_NUMBER: _ClassVar[int]
    SOURCE_POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    WORDING_LOCALE_FIELD_NUMBER: _ClassVar[int]
    WORDING_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_TURN_TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    tenant_id: str
    created_at: _timestamp_pb2.Timestamp
    principal_ref: str
    principal_roles: _containers.RepeatedScalarFieldContainer[str]
    query: QueryText
    as_of: _timestamp_pb2.Timestamp
    route: _route_pb2.RouteDecision
    parts: _containers.RepeatedCompositeFieldContainer[PartRecord]
    timings: _containers.RepeatedCompositeFieldContainer[_common_pb2.StageTiming]
    corpus: CorpusSnapshot
    outcome: _common_pb2.PartOutcome
    previous_hash: str
    record_hash: str
    sequence: int
    needs_review: bool
    source_policy_version: str
    wording_locale: str
    wording_version: str
    conversation_id: str
    previous_turn_trace_id: str
    def __init__(self, trace_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., principal_ref: _Optional[str] = ..., principal_roles: _Optional[_Iterable[str]] = ..., query: _Optional[_Union[QueryText, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., route: _Optional[_Union[_route_pb2.RouteDecision, _Mapping]] = ..., parts: _Optional[_Iterable[_Union[PartRecord, _Mapping]]] = ..., timings: _Optional[_Iterable[_Union[_common_pb2.StageTiming, _Mapping]]] = ..., corpus: _Optional[_Union[CorpusSnapshot, _Mapping]] = ..., outcome: _Optional[_Union[_common_pb2.PartOutcome, str]] = ..., previous_hash: _Optional[str] = ..., record_hash: _Optional[str] = ..., sequence: _Optional[int] = ..., needs_review: _Optional[bool] = ..., source_policy_version: _Optional[str] = ..., wording_locale: _Optional[str] = ..., wording_version: _Optional[str] = ..., conversation_id: _Optional[str] = ..., previous_turn_trace_id: _Optional[str] = ...) -> None: ...

class RecordTraceRequest(_message.Message):
    __slots__ = ("record",)
    RECORD_FIELD_NUMBER: _ClassVar[int]
    record: TraceRecord
    def __init__(self, record: _Optional[_Union[TraceRecord, _Mapping]] = ...) -> None: ...

class RecordTraceResponse(_message.Message):
    __slots__ = ("trace_id", "record_hash", "created")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    RECORD_HASH_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    record_hash: str
    created: bool
    def __init__(self, trace_id: _Optional[str] = ..., record_hash: _Optional[str] = ..., created: _Optional[bool] = ...) -> None: ...

class GetTraceRequest(_message.Message):
    __slots__ = ("trace_id", "view")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    view: TraceView
    def __init__(self, trace_id: _Optional[str] = ..., view: _Optional[_Union[TraceView, str]] = ...) -> None: ...

class PassageTextReadback(_message.Message):
    __slots__ = ("filled", "not_visible", "digest_mismatch", "unavailable_reason")
    FILLED_FIELD_NUMBER: _ClassVar[int]
    NOT_VISIBLE_FIELD_NUMBER: _ClassVar[int]
    DIGEST_MISMATCH_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    filled: int
    not_visible: int
    digest_mismatch: int
    unavailable_reason: str
    def __init__(self, filled: _Optional[int] = ..., not_visible: _Optional[int] = ..., digest_mismatch: _Optional[int] = ..., unavailable_reason: _Optional[str] = ...) -> None: ...

class GetTraceResponse(_message.Message):
    __slots__ = ("record", "reviews", "redactions", "links", "passage_text")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    REVIEWS_FIELD_NUMBER: _ClassVar[int]
    REDACTIONS_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    PASSAGE_TEXT_FIELD_NUMBER: _ClassVar[int]
    record: TraceRecord
    reviews: _containers.RepeatedCompositeFieldContainer[Review]
    redactions: _containers.RepeatedCompositeFieldContainer[RedactionEvent]
    links: _containers.RepeatedCompositeFieldContainer[ChainLink]
    passage_text: PassageTextReadback
    def __init__(self, record: _Optional[_Union[TraceRecord, _Mapping]] = ..., reviews: _Optional[_Iterable[_Union[Review, _Mapping]]] = ..., redactions: _Optional[_Iterable[_Union[RedactionEvent, _Mapping]]] = ..., links: _Optional[_Iterable[_Union[ChainLink, _Mapping]]] = ..., passage_text: _Optional[_Union[PassageTextReadback, _Mapping]] = ...) -> None: ...

class ListTracesRequest(_message.Message):
    __slots__ = ("outcome", "failure_reason", "created_after", "created_before", "document_id", "version_id", "needs_review", "page_size", "page_token")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    FAILURE_REASON_FIELD_NUMBER: _ClassVar[int]
    CREATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    CREATED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    NEEDS_REVIEW_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    outcome: _common_pb2.PartOutcome
    failure_reason: _common_pb2.FailureReason
    created_after: _timestamp_pb2.Timestamp
    created_before: _timestamp_pb2.Timestamp
    document_id: str
    version_id: str
    needs_review: bool
    page_size: int
    page_token: str
    def __init__(self, outcome: _Optional[_Union[_common_pb2.PartOutcome, str]] = ..., failure_reason: _Optional[_Union[_common_pb2.FailureReason, str]] = ..., created_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., document_id: _Optional[str] = ..., version_id: _Optional[str] = ..., needs_review: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class TraceSummary(_message.Message):
    __slots__ = ("trace_id", "created_at", "outcome", "cited_version_ids", "needs_review")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    CITED_VERSION_IDS_FIELD_NUMBER: _ClassVar[int]
    NEEDS_REVIEW_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    created_at: _timestamp_pb2.Timestamp
    outcome: _common_pb2.PartOutcome
    cited_version_ids: _containers.RepeatedScalarFieldContainer[str]
    needs_review: bool
    def __init__(self, trace_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., outcome: _Optional[_Union[_common_pb2.PartOutcome, str]] = ..., cited_version_ids: _Optional[_Iterable[str]] = ..., needs_review: _Optional[bool] = ...) -> None: ...

class ListTracesResponse(_message.Message):
    __slots__ = ("traces", "next_page_token")
    TRACES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    traces: _containers.RepeatedCompositeFieldContainer[TraceSummary]
    next_page_token: str
    def __init__(self, traces: _Optional[_Iterable[_Union[TraceSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class Review(_message.Message):
    __slots__ = ("review_id", "trace_id", "decision", "reviewer_ref", "rubric_note", "answer_record_hash", "evidence_version_ids", "source_policy_version", "created_at")
    REVIEW_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REVIEWER_REF_FIELD_NUMBER: _ClassVar[int]
    RUBRIC_NOTE_FIELD_NUMBER: _ClassVar[int]
    ANSWER_RECORD_HASH_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_VERSION_IDS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    review_id: str
    trace_id: str
    decision: ReviewDecision
    reviewer_ref: str
    rubric_note: str
    answer_record_hash: str
    evidence_version_ids: _containers.RepeatedScalarFieldContainer[str]
    source_policy_version: str
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, review_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., decision: _Optional[_Union[ReviewDecision, str]] = ..., reviewer_ref: _Optional[str] = ..., rubric_note: _Optional[str] = ..., answer_record_hash: _Optional[str] = ..., evidence_version_ids: _Optional[_Iterable[str]] = ..., source_policy_version: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RecordReviewRequest(_message.Message):
    __slots__ = ("trace_id", "decision", "rubric_note", "answer_record_hash")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    RUBRIC_NOTE_FIELD_NUMBER: _ClassVar[int]
    ANSWER_RECORD_HASH_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    decision: ReviewDecision
    rubric_note: str
    answer_record_hash: str
    def __init__(self, trace_id: _Optional[str] = ..., decision: _Optional[_Union[ReviewDecision, str]] = ..., rubric_note: _Optional[str] = ..., answer_record_hash: _Optional[str] = ...) -> None: ...

class RecordReviewResponse(_message.Message):
    __slots__ = ("review",)
    REVIEW_FIELD_NUMBER: _ClassVar[int]
    review: Review
    def __init__(self, review: _Optional[_Union[Review, _Mapping]] = ...) -> None: ...

class ListReviewsRequest(_message.Message):
    __slots__ = ("trace_id", "page_size", "page_token")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    page_size: int
    page_token: str
    def __init__(self, trace_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListReviewsResponse(_message.Message):
    __slots__ = ("reviews", "next_page_token")
    REVIEWS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    reviews: _containers.RepeatedCompositeFieldContainer[Review]
    next_page_token: str
    def __init__(self, reviews: _Optional[_Iterable[_Union[Review, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RecordVersionEventRequest(_message.Message):
    __slots__ = ("version_id", "kind", "replaced_by_version_id")
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REPLACED_BY_VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    version_id: str
    kind: VersionEventKind
    replaced_by_version_id: str
    def __init__(self, version_id: _Optional[str] = ..., kind: _Optional[_Union[VersionEventKind, str]] = ..., replaced_by_version_id: _Optional[str] = ...) -> None: ...

class RecordVersionEventResponse(_message.Message):
    __slots__ = ("affected_traces",)
    AFFECTED_TRACES_FIELD_NUMBER: _ClassVar[int]
    affected_traces: int
    def __init__(self, affected_traces: _Optional[int] = ...) -> None: ...

class VerifyChainRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class VerifyChainResponse(_message.Message):
    __slots__ = ("ok", "records_checked", "first_broken_trace_id", "first_broken_sequence", "detail", "checkpoint_sequence", "checkpoint_detail")
    OK_FIELD_NUMBER: _ClassVar[int]
    RECORDS_CHECKED_FIELD_NUMBER: _ClassVar[int]
    FIRST_BROKEN_TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_BROKEN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_DETAIL_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    records_checked: int
    first_broken_trace_id: str
    first_broken_sequence: int
    detail: str
    checkpoint_sequence: int
    checkpoint_detail: str
    def __init__(self, ok: _Optional[bool] = ..., records_checked: _Optional[int] = ..., first_broken_trace_id: _Optional[str] = ..., first_broken_sequence: _Optional[int] = ..., detail: _Optional[str] = ..., checkpoint_sequence: _Optional[int] = ..., checkpoint_detail: _Optional[str] = ...) -> None: ...

class CheckpointChainRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CheckpointChainResponse(_message.Message):
    __slots__ = ("sequence", "head_hash", "created_at", "key_id", "location")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    HEAD_HASH_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    head_hash: str
    created_at: _timestamp_pb2.Timestamp
    key_id: str
    location: str
    def __init__(self, sequence: _Optional[int] = ..., head_hash: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., key_id: _Optional[str] = ..., location: _Optional[str] = ...) -> None: ...

class RedactionEvent(_message.Message):
    __slots__ = ("trace_id", "redacted_at", "reason")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    REDACTED_AT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    redacted_at: _timestamp_pb2.Timestamp
    reason: str
    def __init__(self, trace_id: _Optional[str] = ..., redacted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class ApplyRetentionRequest(_message.Message):
    __slots__ = ("retention_days",)
    RETENTION_DAYS_FIELD_NUMBER: _ClassVar[int]
    retention_days: int
    def __init__(self, retention_days: _Optional[int] = ...) -> None: ...

class ApplyRetentionResponse(_message.Message):
    __slots__ = ("redacted",)
    REDACTED_FIELD_NUMBER: _ClassVar[int]
    redacted: int
    def __init__(self, redacted: _Optional[int] = ...) -> None: ...

class ActionEvent(_message.Message):
    __slots__ = ("event_id", "kind", "ask_trace_id", "proposal_id", "actor_ref", "occurred_at", "proposal", "appointment_before", "appointment_after", "slot", "source_service")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ASK_TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    PROPOSAL_ID_FIELD_NUMBER: _ClassVar[int]
    ACTOR_REF_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_AT_FIELD_NUMBER: _ClassVar[int]
    PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENT_BEFORE_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENT_AFTER_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SERVICE_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    kind: ActionEventKind
    ask_trace_id: str
    proposal_id: str
    actor_ref: str
    occurred_at: _timestamp_pb2.Timestamp
    proposal: _appointments_pb2.Proposal
    appointment_before: _appointments_pb2.Appointment
    appointment_after: _appointments_pb2.Appointment
    slot: _common_pb2.Slot
    source_service: str
    def __init__(self, event_id: _Optional[str] = ..., kind: _Optional[_Union[ActionEventKind, str]] = ..., ask_trace_id: _Optional[str] = ..., proposal_id: _Optional[str] = ..., actor_ref: _Optional[str] = ..., occurred_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., proposal: _Optional[_Union[_appointments_pb2.Proposal, _Mapping]] = ..., appointment_before: _Optional[_Union[_appointments_pb2.Appointment, _Mapping]] = ..., appointment_after: _Optional[_Union[_appointments_pb2.Appointment, _Mapping]] = ..., slot: _Optional[_Union[_common_pb2.Slot, _Mapping]] = ..., source_service: _Optional[str] = ...) -> None: ...

class ChainLink(_message.Message):
    __slots__ = ("link_id", "kind", "sequence", "previous_hash", "link_hash", "created_at", "subject_trace_id", "action")
    LINK_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_HASH_FIELD_NUMBER: _ClassVar[int]
    LINK_HASH_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    link_id: str
    kind: str
    sequence: int
    previous_hash: str
    link_hash: str
    created_at: _timestamp_pb2.Timestamp
    subject_trace_id: str
    action: ActionEvent
    def __init__(self, link_id: _Optional[str] = ..., kind: _Optional[str] = ..., sequence: _Optional[int] = ..., previous_hash: _Optional[str] = ..., link_hash: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., subject_trace_id: _Optional[str] = ..., action: _Optional[_Union[ActionEvent, _Mapping]] = ...) -> None: ...

class RecordActionEventRequest(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: ActionEvent
    def __init__(self, event: _Optional[_Union[ActionEvent, _Mapping]] = ...) -> None: ...

class RecordActionEventResponse(_message.Message):
    __slots__ = ("link", "created")
    LINK_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    link: ChainLink
    created: bool
    def __init__(self, link: _Optional[_Union[ChainLink, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class ListChainLinksRequest(_message.Message):
    __slots__ = ("subject_trace_id", "proposal_id", "page_size", "page_token")
    SUBJECT_TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    PROPOSAL_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    subject_trace_id: str
    proposal_id: str
    page_size: int
    page_token: str
    def __init__(self, subject_trace_id: _Optional[str] = ..., proposal_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListChainLinksResponse(_message.Message):
    __slots__ = ("links", "next_page_token")
    LINKS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    links: _containers.RepeatedCompositeFieldContainer[ChainLink]
    next_page_token: str
    def __init__(self, links: _Optional[_Iterable[_Union[ChainLink, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
