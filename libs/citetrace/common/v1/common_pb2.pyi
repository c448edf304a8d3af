import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VersionStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERSION_STATUS_UNSPECIFIED: _ClassVar[VersionStatus]
    VERSION_STATUS_DRAFT: _ClassVar[VersionStatus]
    VERSION_STATUS_APPROVED: _ClassVar[VersionStatus]
    VERSION_STATUS_RETIRED: _ClassVar[VersionStatus]

class ReviewState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REVIEW_STATE_UNSPECIFIED: _ClassVar[ReviewState]
    REVIEW_STATE_NOT_REQUIRED: _ClassVar[ReviewState]
    REVIEW_STATE_PENDING: _ClassVar[ReviewState]
    REVIEW_STATE_APPROVED: _ClassVar[ReviewState]

class Intent(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INTENT_UNSPECIFIED: _ClassVar[Intent]
    INTENT_AVAILABILITY: _ClassVar[Intent]
    INTENT_ARRIVAL_PREPARATION: _ClassVar[Intent]
    INTENT_CANCELLATION_RESCHEDULING: _ClassVar[Intent]
    INTENT_PROVIDER_INFORMATION: _ClassVar[Intent]
    INTENT_CLINICAL: _ClassVar[Intent]
    INTENT_OTHER: _ClassVar[Intent]

class ClaimType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CLAIM_TYPE_UNSPECIFIED: _ClassVar[ClaimType]
    CLAIM_TYPE_ARRIVAL_RULE: _ClassVar[ClaimType]
    CLAIM_TYPE_PREPARATION_RULE: _ClassVar[ClaimType]
    CLAIM_TYPE_CANCELLATION_TERM: _ClassVar[ClaimType]
    CLAIM_TYPE_RESCHEDULING_TERM: _ClassVar[ClaimType]
    CLAIM_TYPE_PROVIDER_DESCRIPTION: _ClassVar[ClaimType]
    CLAIM_TYPE_SCHEDULING_RULE: _ClassVar[ClaimType]
    CLAIM_TYPE_GENERAL_POLICY: _ClassVar[ClaimType]
    CLAIM_TYPE_NON_FACTUAL: _ClassVar[ClaimType]

class PartOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PART_OUTCOME_UNSPECIFIED: _ClassVar[PartOutcome]
    PART_OUTCOME_ANSWERED: _ClassVar[PartOutcome]
    PART_OUTCOME_PARTIALLY_ANSWERED: _ClassVar[PartOutcome]
    PART_OUTCOME_ABSTAINED_NO_EVIDENCE: _ClassVar[PartOutcome]
    PART_OUTCOME_SOURCE_UNAVAILABLE: _ClassVar[PartOutcome]
    PART_OUTCOME_OUT_OF_SCOPE: _ClassVar[PartOutcome]
    PART_OUTCOME_NEEDS_CLARIFICATION: _ClassVar[PartOutcome]
    PART_OUTCOME_CONFLICT: _ClassVar[PartOutcome]
    PART_OUTCOME_UNRESOLVED: _ClassVar[PartOutcome]

class FailureReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAILURE_REASON_UNSPECIFIED: _ClassVar[FailureReason]
    FAILURE_REASON_CITATION_GAP: _ClassVar[FailureReason]
    FAILURE_REASON_CITATION_UNKNOWN: _ClassVar[FailureReason]
    FAILURE_REASON_DUPLICATE_CLAIM_ID: _ClassVar[FailureReason]
    FAILURE_REASON_DUPLICATE_PASSAGE_ID: _ClassVar[FailureReason]
    FAILURE_REASON_DANGLING_EVIDENCE_REF: _ClassVar[FailureReason]
    FAILURE_REASON_VERSION_MISMATCH: _ClassVar[FailureReason]
    FAILURE_REASON_SPAN_DIGEST_MISMATCH: _ClassVar[FailureReason]
    FAILURE_REASON_LOCATOR_MISMATCH: _ClassVar[FailureReason]
    FAILURE_REASON_STALE_VERSION: _ClassVar[FailureReason]
    FAILURE_REASON_AUTHORITY_MISMATCH: _ClassVar[FailureReason]
    FAILURE_REASON_SCOPE_VIOLATION: _ClassVar[FailureReason]
    FAILURE_REASON_CHECK_UNAVAILABLE: _ClassVar[FailureReason]
    FAILURE_REASON_UNSUPPORTED_CLAIM: _ClassVar[FailureReason]
    FAILURE_REASON_PASSAGE_NEEDS_REVIEW: _ClassVar[FailureReason]

class SupportVerdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUPPORT_VERDICT_UNSPECIFIED: _ClassVar[SupportVerdict]
    SUPPORT_VERDICT_SUPPORTED: _ClassVar[SupportVerdict]
    SUPPORT_VERDICT_UNSUPPORTED: _ClassVar[SupportVerdict]
    SUPPORT_VERDICT_UNRESOLVED: _ClassVar[SupportVerdict]

class NextAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NEXT_ACTION_UNSPECIFIED: _ClassVar[NextAction]
    NEXT_ACTION_NONE: _ClassVar[NextAction]
    NEXT_ACTION_CONTACT_SCHEDULING_DESK: _ClassVar[NextAction]
    NEXT_ACTION_VIEW_POLICY: _ClassVar[NextAction]
    NEXT_ACTION_CONTACT_CLINICIAN: _ClassVar[NextAction]
    NEXT_ACTION_CONTACT_EMERGENCY_SERVICES: _ClassVar[NextAction]
    NEXT_ACTION_PREPARE_REVIEW_TASK: _ClassVar[NextAction]
    NEXT_ACTION_ROUTE_TO_POLICY_OWNER: _ClassVar[NextAction]
    NEXT_ACTION_ANSWER_CLARIFICATION: _ClassVar[NextAction]
    NEXT_ACTION_CONFIRM_SLOT: _ClassVar[NextAction]
    NEXT_ACTION_RETRY_LATER: _ClassVar[NextAction]
    NEXT_ACTION_CONFIRM_CHANGE: _ClassVar[NextAction]
    NEXT_ACTION_VERIFY_CONTACT_DETAILS: _ClassVar[NextAction]

class SlotStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SLOT_STATUS_UNSPECIFIED: _ClassVar[SlotStatus]
    SLOT_STATUS_FREE: _ClassVar[SlotStatus]
    SLOT_STATUS_BUSY: _ClassVar[SlotStatus]
    SLOT_STATUS_BUSY_UNAVAILABLE: _ClassVar[SlotStatus]
    SLOT_STATUS_BUSY_TENTATIVE: _ClassVar[SlotStatus]
    SLOT_STATUS_ENTERED_IN_ERROR: _ClassVar[SlotStatus]
VERSION_STATUS_UNSPECIFIED: VersionStatus
VERSION_STATUS_DRAFT: VersionStatus
VERSION_STATUS_APPROVED: VersionStatus
VERSION_STATUS_RETIRED: VersionStatus
REVIEW_STATE_UNSPECIFIED: ReviewState
REVIEW_STATE_NOT_REQUIRED: ReviewState
REVIEW_STATE_PENDING: ReviewState
REVIEW_STATE_APPROVED: ReviewState
INTENT_UNSPECIFIED: Intent
INTENT_AVAILABILITY: Intent
INTENT_ARRIVAL_PREPARATION: Intent
INTENT_CANCELLATION_RESCHEDULING: Intent
INTENT_PROVIDER_INFORMATION: Intent
INTENT_CLINICAL: Intent
INTENT_OTHER: Intent
CLAIM_TYPE_UNSPECIFIED: ClaimType
CLAIM_TYPE_ARRIVAL_RULE: ClaimType
CLAIM_TYPE_PREPARATION_RULE: ClaimType
CLAIM_TYPE_CANCELLATION_TERM: ClaimType
CLAIM_TYPE_RESCHEDULING_TERM: ClaimType
CLAIM_TYPE_PROVIDER_DESCRIPTION: ClaimType
CLAIM_TYPE_SCHEDULING_RULE: ClaimType
CLAIM_TYPE_GENERAL_POLICY: ClaimType
CLAIM_TYPE_NON_FACTUAL: ClaimType
PART_OUTCOME_UNSPECIFIED: PartOutcome
PART_OUTCOME_ANSWERED: PartOutcome
PART_OUTCOME_PARTIALLY_ANSWERED: PartOutcome
PART_OUTCOME_ABSTAINED_NO_EVIDENCE: PartOutcome
PART_OUTCOME_SOURCE_UNAVAILABLE: PartOutcome
PART_OUTCOME_OUT_OF_SCOPE: PartOutcome
PART_OUTCOME_NEEDS_CLARIFICATION: PartOutcome
PART_OUTCOME_CONFLICT: PartOutcome
PART_OUTCOME_UNRESOLVED: PartOutcome
FAILURE_REASON_UNSPECIFIED: FailureReason
FAILURE_REASON_CITATION_GAP: FailureReason
FAILURE_REASON_CITATION_UNKNOWN: FailureReason
FAILURE_REASON_DUPLICATE_CLAIM_ID: FailureReason
FAILURE_REASON_DUPLICATE_PASSAGE_ID: FailureReason
FAILURE_REASON_DANGLING_EVIDENCE_REF: FailureReason
FAILURE_REASON_VERSION_MISMATCH: FailureReason
FAILURE_REASON_SPAN_DIGEST_MISMATCH: FailureReason
FAILURE_REASON_LOCATOR_MISMATCH: FailureReason
FAILURE_REASON_STALE_VERSION: FailureReason
FAILURE_REASON_AUTHORITY_MISMATCH: FailureReason
FAILURE_REASON_SCOPE_VIOLATION: FailureReason
FAILURE_REASON_CHECK_UNAVAILABLE: FailureReason
FAILURE_REASON_UNSUPPORTED_CLAIM: FailureReason
FAILURE_REASON_PASSAGE_NEEDS_REVIEW: FailureReason
SUPPORT_VERDICT_UNSPECIFIED: SupportVerdict
SUPPORT_VERDICT_SUPPORTED: SupportVerdict
SUPPORT_VERDICT_UNSUPPORTED: SupportVerdict
SUPPORT_VERDICT_UNRESOLVED: SupportVerdict
NEXT_ACTION_UNSPECIFIED: NextAction
NEXT_ACTION_NONE: NextAction
NEXT_ACTION_CONTACT_SCHEDULING_DESK: NextAction
NEXT_ACTION_VIEW_POLICY: NextAction
NEXT_ACTION_CONTACT_CLINICIAN: NextAction
NEXT_ACTION_CONTACT_EMERGENCY_SERVICES: NextAction
NEXT_ACTION_PREPARE_REVIEW_TASK: NextAction
NEXT_ACTION_ROUTE_TO_POLICY_OWNER: NextAction
NEXT_ACTION_ANSWER_CLARIFICATION: NextAction
NEXT_ACTION_CONFIRM_SLOT: NextAction
NEXT_ACTION_RETRY_LATER: NextAction
NEXT_ACTION_CONFIRM_CHANGE: NextAction
NEXT_ACTION_VERIFY_CONTACT_DETAILS: NextAction
SLOT_STATUS_UNSPECIFIED: SlotStatus
SLOT_STATUS_FREE: SlotStatus
SLOT_STATUS_BUSY: SlotStatus
SLOT_STATUS_BUSY_UNAVAILABLE: SlotStatus
SLOT_STATUS_BUSY_TENTATIVE: SlotStatus
SLOT_STATUS_ENTERED_IN_ERROR: SlotStatus

class Principal(_message.Message):
    __slots__ = ("tenant_id", "subject", "roles", "location_ids")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    LOCATION_IDS_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    subject: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    location_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tenant_id: _Optional[str] = ..., subject: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., location_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class Document(_message.Message):
    __slots__ = ("tenant_id", "document_id", "source_class", "title", "source_uri")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_CLASS_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_URI_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    document_id: str
    source_class: str
    title: str
    source_uri: str
    def __init__(self, tenant_id: _Optional[str] = ..., document_id: _Optional[str] = ..., source_class: _Optional[str] = ..., title: _Optional[str] = ..., source_uri: _Optional[str] = ...) -> None: ...

class DocumentVersion(_message.Message):
    __slots__ = ("document", "version_id", "status", "valid_from", "valid_to", "roles", "location_scope", "intents", "locale", "extraction_version", "ingested_at", "text_length", "superseded_by_version_id", "source_sha256", "media_type", "page_count")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    VALID_FROM_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    LOCATION_SCOPE_FIELD_NUMBER: _ClassVar[int]
    INTENTS_FIELD_NUMBER: _ClassVar[int]
    LOCALE_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_VERSION_FIELD_NUMBER: _ClassVar[int]
    INGESTED_AT_FIELD_NUMBER: _ClassVar[int]
    TEXT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SHA256_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    PAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    document: Document
    version_id: str
    status: VersionStatus
    valid_from: _timestamp_pb2.Timestamp
    valid_to: _timestamp_pb2.Timestamp
    roles: _containers.RepeatedScalarFieldContainer[str]
    location_scope: _containers.RepeatedScalarFieldContainer[str]
    intents: _containers.RepeatedScalarFieldContainer[Intent]
    locale: str
    extraction_version: str
    ingested_at: _timestamp_pb2.Timestamp
    text_length: int
    superseded_by_version_id: str
    source_sha256: str
    media_type: str
    page_count: int
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ..., version_id: _Optional[str] = ..., status: _Optional[_Union[VersionStatus, str]] = ..., valid_from: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., roles: _Optional[_Iterable[str]] = ..., location_scope: _Optional[_Iterable[str]] = ..., intents: _Optional[_Iterable[_Union[Intent, str]]] = ..., locale: _Optional[str] = ..., extraction_version: _Optional[str] = ..., ingested_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., text_length: _Optional[int] = ..., superseded_by_version_id: _Optional[str] = ..., source_sha256: _Optional[str] = ..., media_type: _Optional[str] = ..., page_count: _Optional[int] = ...) -> None: ...

class PassageIdentity(_message.Message):
    __slots__ = ("passage_id", "tenant_id", "document_id", "version_id", "start", "end", "content_sha256", "source_anchor", "source_class", "extraction_version", "page_start", "page_end", "page_label_start", "page_label_end")
    PASSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ANCHOR_FIELD_NUMBER: _ClassVar[int]
    SOURCE_CLASS_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_VERSION_FIELD_NUMBER: _ClassVar[int]
    PAGE_START_FIELD_NUMBER: _ClassVar[int]
    PAGE_END_FIELD_NUMBER: _ClassVar[int]
    PAGE_LABEL_START_FIELD_NUMBER: _ClassVar[int]
    PAGE_LABEL_END_FIELD_NUMBER: _ClassVar[int]
    passage_id: str
    tenant_id: str
    document_id: str
    version_id: str
    start: int
    end: int
    content_sha256: str
    source_anchor: str
    source_class: str
    extraction_version: str
    page_start: int
    page_end: int
    page_label_start: str
    page_label_end: str
    def __init__(self, passage_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., document_id: _Optional[str] = ..., version_id: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., content_sha256: _Optional[str] = ..., source_anchor: _Optional[str] = ..., source_class: _Optional[str] = ..., extraction_version: _Optional[str] = ..., page_start: _Optional[int] = ..., page_end: _Optional[int] = ..., page_label_start: _Optional[str] = ..., page_label_end: _Optional[str] = ...) -> None: ...

class Passage(_message.Message):
    __slots__ = ("identity", "text", "heading_context", "title", "locale", "review_state", "review_reason")
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    HEADING_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    LOCALE_FIELD_NUMBER: _ClassVar[int]
    REVIEW_STATE_FIELD_NUMBER: _ClassVar[int]
    REVIEW_REASON_FIELD_NUMBER: _ClassVar[int]
    identity: PassageIdentity
    text: str
    heading_context: str
    title: str
    locale: str
    review_state: ReviewState
    review_reason: str
    def __init__(self, identity: _Optional[_Union[PassageIdentity, _Mapping]] = ..., text: _Optional[str] = ..., heading_context: _Optional[str] = ..., title: _Optional[str] = ..., locale: _Optional[str] = ..., review_state: _Optional[_Union[ReviewState, str]] = ..., review_reason: _Optional[str] = ...) -> None: ...

class LabelledPassage(_message.Message):
    __slots__ = ("label", "passage")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    PASSAGE_FIELD_NUMBER: _ClassVar[int]
    label: str
    passage: Passage
    def __init__(self, label: _Optional[str] = ..., passage: _Optional[_Union[Passage, _Mapping]] = ...) -> None: ...

class Claim(_message.Message):
    __slots__ = ("claim_id", "text", "evidence_labels", "claim_type")
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_LABELS_FIELD_NUMBER: _ClassVar[int]
    CLAIM_TYPE_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    text: str
    evidence_labels: _containers.RepeatedScalarFieldContainer[str]
    claim_type: ClaimType
    def __init__(self, claim_id: _Optional[str] = ..., text: _Optional[str] = ..., evidence_labels: _Optional[_Iterable[str]] = ..., claim_type: _Optional[_Union[ClaimType, str]] = ...) -> None: ...

class Citation(_message.Message):
    __slots__ = ("label", "passage_id", "document_id", "version_id", "start", "end", "content_sha256", "source_anchor", "source_class", "link", "title", "page_start", "page_end", "page_label_start", "page_label_end")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    PASSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ANCHOR_FIELD_NUMBER: _ClassVar[int]
    SOURCE_CLASS_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    PAGE_START_FIELD_NUMBER: _ClassVar[int]
    PAGE_END_FIELD_NUMBER: _ClassVar[int]
    PAGE_LABEL_START_FIELD_NUMBER: _ClassVar[int]
    PAGE_LABEL_END_FIELD_NUMBER: _ClassVar[int]
    label: str
    passage_id: str
    document_id: str
    version_id: str
    start: int
    end: int
    content_sha256: str
    source_anchor: str
    source_class: str
    link: str
    title: str
    page_start: int
    page_end: int
    page_label_start: str
    page_label_end: str
    def __init__(self, label: _Optional[str] = ..., passage_id: _Optional[str] = ..., document_id: _Optional[str] = ..., version_id: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., content_sha256: _Optional[str] = ..., source_anchor: _Optional[str] = ..., source_class: _Optional[str] = ..., link: _Optional[str] = ..., title: _Optional[str] = ..., page_start: _Optional[int] = ..., page_end: _Optional[int] = ..., page_label_start: _Optional[str] = ..., page_label_end: _Optional[str] = ...) -> None: ...

class Slot(_message.Message):
    __slots__ = ("slot_id", "version", "location_id", "location_name", "time_zone", "provider_id", "provider_name", "specialty", "appointment_type", "start_time", "end_time", "status", "as_of", "clinic_name")
    SLOT_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    LOCATION_NAME_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_NAME_FIELD_NUMBER: _ClassVar[int]
    SPECIALTY_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    CLINIC_NAME_FIELD_NUMBER: _ClassVar[int]
    slot_id: str
    version: int
    location_id: str
    location_name: str
    time_zone: str
    provider_id: str
    provider_name: str
    specialty: str
    appointment_type: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    status: SlotStatus
    as_of: _timestamp_pb2.Timestamp
    clinic_name: str
    def __init__(self, slot_id: _Optional[str] = ..., version: _Optional[int] = ..., location_id: _Optional[str] = ..., location_name: _Optional[str] = ..., time_zone: _Optional[str] = ..., provider_id: _Optional[str] = ..., provider_name: _Optional[str] = ..., specialty: _Optional[str] = ..., appointment_type: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., status: _Optional[_Union[SlotStatus, str]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., clinic_name: _Optional[str] = ...) -> None: ...

class StageTiming(_message.Message):
    __slots__ = ("service", "stage", "duration_ms")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    service: str
    stage: str
    duration_ms: float
    def __init__(self, service: _Optional[str] = ..., stage: _Optional[str] = ..., duration_ms: _Optional[float] = ...) -> None: ...
