import datetime

from citetrace.common.v1 import common_pb2 as _common_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AppointmentStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPOINTMENT_STATUS_UNSPECIFIED: _ClassVar[AppointmentStatus]
    APPOINTMENT_STATUS_BOOKED: _ClassVar[AppointmentStatus]
    APPOINTMENT_STATUS_CANCELLED: _ClassVar[AppointmentStatus]
    APPOINTMENT_STATUS_FULFILLED: _ClassVar[AppointmentStatus]
    APPOINTMENT_STATUS_NOSHOW: _ClassVar[AppointmentStatus]
    APPOINTMENT_STATUS_ENTERED_IN_ERROR: _ClassVar[AppointmentStatus]

class ChangeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHANGE_KIND_UNSPECIFIED: _ClassVar[ChangeKind]
    CHANGE_KIND_BOOK: _ClassVar[ChangeKind]
    CHANGE_KIND_RESCHEDULE: _ClassVar[ChangeKind]
    CHANGE_KIND_CANCEL: _ClassVar[ChangeKind]

class ProposalStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROPOSAL_STATUS_UNSPECIFIED: _ClassVar[ProposalStatus]
    PROPOSAL_STATUS_PENDING: _ClassVar[ProposalStatus]
    PROPOSAL_STATUS_CONFIRMED: _ClassVar[ProposalStatus]
    PROPOSAL_STATUS_REJECTED: _ClassVar[ProposalStatus]
    PROPOSAL_STATUS_EXPIRED: _ClassVar[ProposalStatus]
    PROPOSAL_STATUS_FAILED: _ClassVar[ProposalStatus]

class ConsequenceKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONSEQUENCE_KIND_UNSPECIFIED: _ClassVar[ConsequenceKind]
    CONSEQUENCE_KIND_FEE: _ClassVar[ConsequenceKind]
    CONSEQUENCE_KIND_REVIEW_REQUIRED: _ClassVar[ConsequenceKind]
    CONSEQUENCE_KIND_POLICY_TERM: _ClassVar[ConsequenceKind]
    CONSEQUENCE_KIND_TERMS_UNVERIFIED: _ClassVar[ConsequenceKind]
APPOINTMENT_STATUS_UNSPECIFIED: AppointmentStatus
APPOINTMENT_STATUS_BOOKED: AppointmentStatus
APPOINTMENT_STATUS_CANCELLED: AppointmentStatus
APPOINTMENT_STATUS_FULFILLED: AppointmentStatus
APPOINTMENT_STATUS_NOSHOW: AppointmentStatus
APPOINTMENT_STATUS_ENTERED_IN_ERROR: AppointmentStatus
CHANGE_KIND_UNSPECIFIED: ChangeKind
CHANGE_KIND_BOOK: ChangeKind
CHANGE_KIND_RESCHEDULE: ChangeKind
CHANGE_KIND_CANCEL: ChangeKind
PROPOSAL_STATUS_UNSPECIFIED: ProposalStatus
PROPOSAL_STATUS_PENDING: ProposalStatus
PROPOSAL_STATUS_CONFIRMED: ProposalStatus
PROPOSAL_STATUS_REJECTED: ProposalStatus
PROPOSAL_STATUS_EXPIRED: ProposalStatus
PROPOSAL_STATUS_FAILED: ProposalStatus
CONSEQUENCE_KIND_UNSPECIFIED: ConsequenceKind
CONSEQUENCE_KIND_FEE: ConsequenceKind
CONSEQUENCE_KIND_REVIEW_REQUIRED: ConsequenceKind
CONSEQUENCE_KIND_POLICY_TERM: ConsequenceKind
CONSEQUENCE_KIND_TERMS_UNVERIFIED: ConsequenceKind

class Appointment(_message.Message):
    __slots__ = ("appointment_id", "patient_ref", "status", "version", "slot_id", "location_id", "location_name", "clinic_name", "time_zone", "provider_id", "provider_name", "specialty", "appointment_type", "start_time", "end_time", "updated_at", "as_of")
    APPOINTMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PATIENT_REF_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SLOT_ID_FIELD_NUMBER: _ClassVar[int]
    LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    LOCATION_NAME_FIELD_NUMBER: _ClassVar[int]
    CLINIC_NAME_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_NAME_FIELD_NUMBER: _ClassVar[int]
    SPECIALTY_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    appointment_id: str
    patient_ref: str
    status: AppointmentStatus
    version: int
    slot_id: str
    location_id: str
    location_name: str
    clinic_name: str
    time_zone: str
    provider_id: str
    provider_name: str
    specialty: str
    appointment_type: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, appointment_id: _Optional[str] = ..., patient_ref: _Optional[str] = ..., status: _Optional[_Union[AppointmentStatus, str]] = ..., version: _Optional[int] = ..., slot_id: _Optional[str] = ..., location_id: _Optional[str] = ..., location_name: _Optional[str] = ..., clinic_name: _Optional[str] = ..., time_zone: _Optional[str] = ..., provider_id: _Optional[str] = ..., provider_name: _Optional[str] = ..., specialty: _Optional[str] = ..., appointment_type: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PolicyConsequence(_message.Message):
    __slots__ = ("kind", "text", "citations", "support", "explanation", "part_id")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    PART_ID_FIELD_NUMBER: _ClassVar[int]
    kind: ConsequenceKind
    text: str
    citations: _containers.RepeatedCompositeFieldContainer[_common_pb2.Citation]
    support: _common_pb2.SupportVerdict
    explanation: str
    part_id: str
    def __init__(self, kind: _Optional[_Union[ConsequenceKind, str]] = ..., text: _Optional[str] = ..., citations: _Optional[_Iterable[_Union[_common_pb2.Citation, _Mapping]]] = ..., support: _Optional[_Union[_common_pb2.SupportVerdict, str]] = ..., explanation: _Optional[str] = ..., part_id: _Optional[str] = ...) -> None: ...

class Proposal(_message.Message):
    __slots__ = ("proposal_id", "kind", "status", "patient_ref", "appointment", "options", "consequences", "review_required", "review_reason", "created_at", "expires_at", "decided_at", "created_by_ref", "decided_by_ref", "ask_trace_id", "chosen_slot_id", "result_appointment_id", "outcome_reason", "decision_note", "consequence_rules_version", "policy_version_ids", "version")
    PROPOSAL_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PATIENT_REF_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENT_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    CONSEQUENCES_FIELD_NUMBER: _ClassVar[int]
    REVIEW_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    REVIEW_REASON_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    DECIDED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_REF_FIELD_NUMBER: _ClassVar[int]
    DECIDED_BY_REF_FIELD_NUMBER: _ClassVar[int]
    ASK_TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_SLOT_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_APPOINTMENT_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_REASON_FIELD_NUMBER: _ClassVar[int]
    DECISION_NOTE_FIELD_NUMBER: _ClassVar[int]
    CONSEQUENCE_RULES_VERSION_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_IDS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    proposal_id: str
    kind: ChangeKind
    status: ProposalStatus
    patient_ref: str
    appointment: Appointment
    options: _containers.RepeatedCompositeFieldContainer[_common_pb2.Slot]
    consequences: _containers.RepeatedCompositeFieldContainer[PolicyConsequence]
    review_required: bool
    review_reason: str
    created_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    decided_at: _timestamp_pb2.Timestamp
    created_by_ref: str
    decided_by_ref: str
    ask_trace_id: str
    chosen_slot_id: str
    result_appointment_id: str
    outcome_reason: str
    decision_note: str
    consequence_rules_version: str
    policy_version_ids: _containers.RepeatedScalarFieldContainer[str]
    version: int
    def __init__(self, proposal_id: _Optional[str] = ..., kind: _Optional[_Union[ChangeKind, str]] = ..., status: _Optional[_Union[ProposalStatus, str]] = ..., patient_ref: _Optional[str] = ..., appointment: _Optional[_Union[Appointment, _Mapping]] = ..., options: _Optional[_Iterable[_Union[_common_pb2.Slot, _Mapping]]] = ..., consequences: _Optional[_Iterable[_Union[PolicyConsequence, _Mapping]]] = ..., review_required: _Optional[bool] = ..., review_reason: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., decided_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_by_ref: _Optional[str] = ..., decided_by_ref: _Optional[str] = ..., ask_trace_id: _Optional[str] = ..., chosen_slot_id: _Optional[str] = ..., result_appointment_id: _Optional[str] = ..., outcome_reason: _Optional[str] = ..., decision_note: _Optional[str] = ..., consequence_rules_version: _Optional[str] = ..., policy_version_ids: _Optional[_Iterable[str]] = ..., version: _Optional[int] = ...) -> None: ...
