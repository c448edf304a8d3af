import datetime

from citetrace.common.v1 import appointments_pb2 as _appointments_pb2
from citetrace.common.v1 import common_pb2 as _common_pb2
from citetrace.common.v1 import route_pb2 as _route_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AskRequest(_message.Message):
    __slots__ = ("question", "location_id", "as_of", "locale", "conversation_id", "idempotency_key")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    LOCALE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    question: str
    location_id: str
    as_of: _timestamp_pb2.Timestamp
    locale: str
    conversation_id: str
    idempotency_key: str
    def __init__(self, question: _Optional[str] = ..., location_id: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., locale: _Optional[str] = ..., conversation_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class AnsweredClaim(_message.Message):
    __slots__ = ("claim_id", "text", "citations", "support", "claim_type")
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_FIELD_NUMBER: _ClassVar[int]
    CLAIM_TYPE_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    text: str
    citations: _containers.RepeatedCompositeFieldContainer[_common_pb2.Citation]
    support: _common_pb2.SupportVerdict
    claim_type: _common_pb2.ClaimType
    def __init__(self, claim_id: _Optional[str] = ..., text: _Optional[str] = ..., citations: _Optional[_Iterable[_Union[_common_pb2.Citation, _Mapping]]] = ..., support: _Optional[_Union[_common_pb2.SupportVerdict, str]] = ..., claim_type: _Optional[_Union[_common_pb2.ClaimType, str]] = ...) -> None: ...

class WithheldClaim(_message.Message):
    __slots__ = ("claim_id", "reasons", "support")
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    reasons: _containers.RepeatedScalarFieldContainer[_common_pb2.FailureReason]
    support: _common_pb2.SupportVerdict
    def __init__(self, claim_id: _Optional[str] = ..., reasons: _Optional[_Iterable[_Union[_common_pb2.FailureReason, str]]] = ..., support: _Optional[_Union[_common_pb2.SupportVerdict, str]] = ...) -> None: ...

class ConflictingSource(_message.Message):
    __slots__ = ("citation", "text")
    CITATION_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    citation: _common_pb2.Citation
    text: str
    def __init__(self, citation: _Optional[_Union[_common_pb2.Citation, _Mapping]] = ..., text: _Optional[str] = ...) -> None: ...

class AnswerPart(_message.Message):
    __slots__ = ("part_id", "kind", "outcome", "answer_text", "claims", "withheld", "slots", "slots_as_of", "next_action", "clarification_question", "conflicts", "policy_link", "appointments", "proposal")
    PART_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    ANSWER_TEXT_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    WITHHELD_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    SLOTS_AS_OF_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    CLARIFICATION_QUESTION_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    POLICY_LINK_FIELD_NUMBER: _ClassVar[int]
    APPOINTMENTS_FIELD_NUMBER: _ClassVar[int]
    PROPOSAL_FIELD_NUMBER: _ClassVar[int]
    part_id: str
    kind: _route_pb2.PartKind
    outcome: _common_pb2.PartOutcome
    answer_text: str
    claims: _containers.RepeatedCompositeFieldContainer[AnsweredClaim]
    withheld: _containers.RepeatedCompositeFieldContainer[WithheldClaim]
    slots: _containers.RepeatedCompositeFieldContainer[_common_pb2.Slot]
    slots_as_of: _timestamp_pb2.Timestamp
    next_action: _common_pb2.NextAction
    clarification_question: str
    conflicts: _containers.RepeatedCompositeFieldContainer[ConflictingSource]
    policy_link: str
    appointments: _containers.RepeatedCompositeFieldContainer[_appointments_pb2.Appointment]
    proposal: _appointments_pb2.Proposal
    def __init__(self, part_id: _Optional[str] = ..., kind: _Optional[_Union[_route_pb2.PartKind, str]] = ..., outcome: _Optional[_Union[_common_pb2.PartOutcome, str]] = ..., answer_text: _Optional[str] = ..., claims: _Optional[_Iterable[_Union[AnsweredClaim, _Mapping]]] = ..., withheld: _Optional[_Iterable[_Union[WithheldClaim, _Mapping]]] = ..., slots: _Optional[_Iterable[_Union[_common_pb2.Slot, _Mapping]]] = ..., slots_as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_action: _Optional[_Union[_common_pb2.NextAction, str]] = ..., clarification_question: _Optional[str] = ..., conflicts: _Optional[_Iterable[_Union[ConflictingSource, _Mapping]]] = ..., policy_link: _Optional[str] = ..., appointments: _Optional[_Iterable[_Union[_appointments_pb2.Appointment, _Mapping]]] = ..., proposal: _Optional[_Union[_appointments_pb2.Proposal, _Mapping]] = ...) -> None: ...

class AskResponse(_message.Message):
    __slots__ = ("trace_id", "parts", "next_action", "route", "trace_delivered", "conversation_id", "proposal_ids", "as_of", "replayed")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    TRACE_DELIVERED_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    PROPOSAL_IDS_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    parts: _containers.RepeatedCompositeFieldContainer[AnswerPart]
    next_action: _common_pb2.NextAction
    route: _route_pb2.RouteDecision
    trace_delivered: bool
    conversation_id: str
    proposal_ids: _containers.RepeatedScalarFieldContainer[str]
    as_of: _timestamp_pb2.Timestamp
    replayed: bool
    def __init__(self, trace_id: _Optional[str] = ..., parts: _Optional[_Iterable[_Union[AnswerPart, _Mapping]]] = ..., next_action: _Optional[_Union[_common_pb2.NextAction, str]] = ..., route: _Optional[_Union[_route_pb2.RouteDecision, _Mapping]] = ..., trace_delivered: _Optional[bool] = ..., conversation_id: _Optional[str] = ..., proposal_ids: _Optional[_Iterable[str]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., replayed: _Optional[bool] = ...) -> None: ...
