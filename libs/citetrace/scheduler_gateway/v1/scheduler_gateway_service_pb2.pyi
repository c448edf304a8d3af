import datetime

from citetrace.common.v1 import appointments_pb2 as _appointments_pb2
from citetrace.common.v1 import common_pb2 as _common_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConfirmResult(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFIRM_RESULT_UNSPECIFIED: _ClassVar[ConfirmResult]
    CONFIRM_RESULT_CONFIRMED: _ClassVar[ConfirmResult]
    CONFIRM_RESULT_SLOT_NO_LONGER_AVAILABLE: _ClassVar[ConfirmResult]

class ConfirmProposalResult(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFIRM_PROPOSAL_RESULT_UNSPECIFIED: _ClassVar[ConfirmProposalResult]
    CONFIRM_PROPOSAL_RESULT_CONFIRMED: _ClassVar[ConfirmProposalResult]
    CONFIRM_PROPOSAL_RESULT_SLOT_NO_LONGER_AVAILABLE: _ClassVar[ConfirmProposalResult]
    CONFIRM_PROPOSAL_RESULT_APPOINTMENT_CHANGED: _ClassVar[ConfirmProposalResult]
CONFIRM_RESULT_UNSPECIFIED: ConfirmResult
CONFIRM_RESULT_CONFIRMED: ConfirmResult
CONFIRM_RESULT_SLOT_NO_LONGER_AVAILABLE: ConfirmResult
CONFIRM_PROPOSAL_RESULT_UNSPECIFIED: ConfirmProposalResult
CONFIRM_PROPOSAL_RESULT_CONFIRMED: ConfirmProposalResult
CONFIRM_PROPOSAL_RESULT_SLOT_NO_LONGER_AVAILABLE: ConfirmProposalResult
CONFIRM_PROPOSAL_RESULT_APPOINTMENT_CHANGED: ConfirmProposalResult

class FindSlotsRequest(_message.Message):
    __slots__ = ("specialty", "location_id", "provider_id", "start_time", "end_time", "appointment_type", "page_size", "page_token", "as_of")
    SPECIALTY_FIELD_NUMBER: _ClassVar[int]
    LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    specialty: str
    location_id: str
    provider_id: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    appointment_type: str
    page_size: int
    page_token: str
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, specialty: _Optional[str] = ..., location_id: _Optional[str] = ..., provider_id: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., appointment_type: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class FindSlotsResponse(_message.Message):
    __slots__ = ("slots", "next_page_token", "as_of")
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    slots: _containers.RepeatedCompositeFieldContainer[_common_pb2.Slot]
    next_page_token: str
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, slots: _Optional[_Iterable[_Union[_common_pb2.Slot, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ConfirmSlotRequest(_message.Message):
    __slots__ = ("slot_id", "expected_version", "patient_ref", "idempotency_key")
    SLOT_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    PATIENT_REF_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    slot_id: str
    expected_version: int
    patient_ref: str
    idempotency_key: str
    def __init__(self, slot_id: _Optional[str] = ..., expected_version: _Optional[int] = ..., patient_ref: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class ConfirmSlotResponse(_message.Message):
    __slots__ = ("result", "appointment_id", "slot", "message")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    result: ConfirmResult
    appointment_id: str
    slot: _common_pb2.Slot
    message: str
    def __init__(self, result: _Optional[_Union[ConfirmResult, str]] = ..., appointment_id: _Optional[str] = ..., slot: _Optional[_Union[_common_pb2.Slot, _Mapping]] = ..., message: _Optional[str] = ...) -> None: ...

class Location(_message.Message):
    __slots__ = ("location_id", "name", "clinic_name", "time_zone", "specialties", "appointment_types", "aliases")
    LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CLINIC_NAME_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    SPECIALTIES_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    location_id: str
    name: str
    clinic_name: str
    time_zone: str
    specialties: _containers.RepeatedScalarFieldContainer[str]
    appointment_types: _containers.RepeatedScalarFieldContainer[str]
    aliases: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, location_id: _Optional[str] = ..., name: _Optional[str] = ..., clinic_name: _Optional[str] = ..., time_zone: _Optional[str] = ..., specialties: _Optional[_Iterable[str]] = ..., appointment_types: _Optional[_Iterable[str]] = ..., aliases: _Optional[_Iterable[str]] = ...) -> None: ...

class ListLocationsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListLocationsResponse(_message.Message):
    __slots__ = ("locations", "next_page_token")
    LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    locations: _containers.RepeatedCompositeFieldContainer[Location]
    next_page_token: str
    def __init__(self, locations: _Optional[_Iterable[_Union[Location, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListAppointmentsRequest(_message.Message):
    __slots__ = ("patient_ref", "statuses", "include_past", "specialty", "page_size", "page_token")
    PATIENT_REF_FIELD_NUMBER: _ClassVar[int]
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_PAST_FIELD_NUMBER: _ClassVar[int]
    SPECIALTY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    patient_ref: str
    statuses: _containers.RepeatedScalarFieldContainer[_appointments_pb2.AppointmentStatus]
    include_past: bool
    specialty: str
    page_size: int
    page_token: str
    def __init__(self, patient_ref: _Optional[str] = ..., statuses: _Optional[_Iterable[_Union[_appointments_pb2.AppointmentStatus, str]]] = ..., include_past: _Optional[bool] = ..., specialty: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListAppointmentsResponse(_message.Message):
    __slots__ = ("appointments", "next_page_token", "as_of")
    APPOINTMENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    appointments: _containers.RepeatedCompositeFieldContainer[_appointments_pb2.Appointment]
    next_page_token: str
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, appointments: _Optional[_Iterable[_Union[_appointments_pb2.Appointment, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetAppointmentRequest(_message.Message):
    __slots__ = ("appointment_id",)
    APPOINTMENT_ID_FIELD_NUMBER: _ClassVar[int]
    appointment_id: str
    def __init__(self, appointment_id: _Optional[str] = ...) -> None: ...

class GetAppointmentResponse(_message.Message):
    __slots__ = ("appointment",)
    APPOINTMENT_FIELD_NUMBER: _ClassVar[int]
    appointment: _appointments_pb2.Appointment
    def __init__(self, appointment: _Optional[_Union[_appointments_pb2.Appointment, _Mapping]] = ...) -> None: ...

class SlotChoice(_message.Message):
    __slots__ = ("slot_id", "expected_version")
    SLOT_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    slot_id: str
    expected_version: int
    def __init__(self, slot_id: _Optional[str] = ..., expected_version: _Optional[int] = ...) -> None: ...

class ProposeChangeRequest(_message.Message):
    __slots__ = ("kind", "appointment_id", "expected_appointment_version", "slots", "consequences", "ask_trace_id", "patient_ref", "consequence_rules_version", "idempotency_key")
    KIND_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENT_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_APPOINTMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    CONSEQUENCES_FIELD_NUMBER: _ClassVar[int]
    ASK_TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    PATIENT_REF_FIELD_NUMBER: _ClassVar[int]
    CONSEQUENCE_RULES_VERSION_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    kind: _appointments_pb2.ChangeKind
    appointment_id: str
    expected_appointment_version: int
    slots: _containers.RepeatedCompositeFieldContainer[SlotChoice]
    consequences: _containers.RepeatedCompositeFieldContainer[_appointments_pb2.PolicyConsequence]
    ask_trace_id: str
    patient_ref: str
    consequence_rules_version: str
    idempotency_key: str
    def __init__(self, kind: _Optional[_Union[_appointments_pb2.ChangeKind, str]] = ..., appointment_id: _Optional[str] = ..., expected_appointment_version: _Optional[int] = ..., slots: _Optional[_Iterable[_Union[SlotChoice, _Mapping]]] = ..., consequences: _Optional[_Iterable[_Union[_appointments_pb2.PolicyConsequence, _Mapping]]] = ..., ask_trace_id: _Optional[str] = ..., patient_ref: _Optional[str] = ..., consequence_rules_version: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class ProposeChangeResponse(_message.Message):
    __slots__ = ("proposal",)
    PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    proposal: _appointments_pb2.Proposal
    def __init__(self, proposal: _Optional[_Union[_appointments_pb2.Proposal, _Mapping]] = ...) -> None: ...

class GetProposalRequest(_message.Message):
    __slots__ = ("proposal_id",)
    PROPOSAL_ID_FIELD_NUMBER: _ClassVar[int]
    proposal_id: str
    def __init__(self, proposal_id: _Optional[str] = ...) -> None: ...

class GetProposalResponse(_message.Message):
    __slots__ = ("proposal",)
    PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    proposal: _appointments_pb2.Proposal
    def __init__(self, proposal: _Optional[_Union[_appointments_pb2.Proposal, _Mapping]] = ...) -> None: ...

class ListProposalsRequest(_message.Message):
    __slots__ = ("statuses", "review_required_only", "patient_ref", "page_size", "page_token")
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    REVIEW_REQUIRED_ONLY_FIELD_NUMBER: _ClassVar[int]
    PATIENT_REF_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    statuses: _containers.RepeatedScalarFieldContainer[_appointments_pb2.ProposalStatus]
    review_required_only: bool
    patient_ref: str
    page_size: int
    page_token: str
    def __init__(self, statuses: _Optional[_Iterable[_Union[_appointments_pb2.ProposalStatus, str]]] = ..., review_required_only: _Optional[bool] = ..., patient_ref: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListProposalsResponse(_message.Message):
    __slots__ = ("proposals", "next_page_token")
    PROPOSALS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    proposals: _containers.RepeatedCompositeFieldContainer[_appointments_pb2.Proposal]
    next_page_token: str
    def __init__(self, proposals: _Optional[_Iterable[_Union[_appointments_pb2.Proposal, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ConfirmProposalRequest(_message.Message):
    __slots__ = ("proposal_id", "slot_id", "idempotency_key", "note")
    PROPOSAL_ID_FIELD_NUMBER: _ClassVar[int]
    SLOT_ID_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    proposal_id: str
    slot_id: str
    idempotency_key: str
    note: str
    def __init__(self, proposal_id: _Optional[str] = ..., slot_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class ConfirmProposalResponse(_message.Message):
    __slots__ = ("result", "proposal", "appointment", "slot", "message")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENT_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    result: ConfirmProposalResult
    proposal: _appointments_pb2.Proposal
    appointment: _appointments_pb2.Appointment
    slot: _common_pb2.Slot
    message: str
    def __init__(self, result: _Optional[_Union[ConfirmProposalResult, str]] = ..., proposal: _Optional[_Union[_appointments_pb2.Proposal, _Mapping]] = ..., appointment: _Optional[_Union[_appointments_pb2.Appointment, _Mapping]] = ..., slot: _Optional[_Union[_common_pb2.Slot, _Mapping]] = ..., message: _Optional[str] = ...) -> None: ...

class RejectProposalRequest(_message.Message):
    __slots__ = ("proposal_id", "note", "idempotency_key")
    PROPOSAL_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    proposal_id: str
    note: str
    idempotency_key: str
    def __init__(self, proposal_id: _Optional[str] = ..., note: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class RejectProposalResponse(_message.Message):
    __slots__ = ("proposal",)
    PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    proposal: _appointments_pb2.Proposal
    def __init__(self, proposal: _Optional[_Union[_appointments_pb2.Proposal, _Mapping]] = ...) -> None: ...
