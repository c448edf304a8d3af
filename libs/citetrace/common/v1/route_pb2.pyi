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

class PartKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PART_KIND_UNSPECIFIED: _ClassVar[PartKind]
    PART_KIND_LIVE_SLOT: _ClassVar[PartKind]
    PART_KIND_ARRIVAL_PREPARATION: _ClassVar[PartKind]
    PART_KIND_CANCELLATION_RESCHEDULING: _ClassVar[PartKind]
    PART_KIND_PROVIDER_DESCRIPTION: _ClassVar[PartKind]
    PART_KIND_CLINICAL_BOUNDARY: _ClassVar[PartKind]
    PART_KIND_OTHER_POLICY: _ClassVar[PartKind]
    PART_KIND_APPOINTMENT: _ClassVar[PartKind]
    PART_KIND_CHANGE_PROPOSAL: _ClassVar[PartKind]
    PART_KIND_CONTACT_DETAILS: _ClassVar[PartKind]
PART_KIND_UNSPECIFIED: PartKind
PART_KIND_LIVE_SLOT: PartKind
PART_KIND_ARRIVAL_PREPARATION: PartKind
PART_KIND_CANCELLATION_RESCHEDULING: PartKind
PART_KIND_PROVIDER_DESCRIPTION: PartKind
PART_KIND_CLINICAL_BOUNDARY: PartKind
PART_KIND_OTHER_POLICY: PartKind
PART_KIND_APPOINTMENT: PartKind
PART_KIND_CHANGE_PROPOSAL: PartKind
PART_KIND_CONTACT_DETAILS: PartKind

class Entity(_message.Message):
    __slots__ = ("kind", "surface", "value", "confidence", "explanation")
    KIND_FIELD_NUMBER: _ClassVar[int]
    SURFACE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    kind: str
    surface: str
    value: str
    confidence: float
    explanation: str
    def __init__(self, kind: _Optional[str] = ..., surface: _Optional[str] = ..., value: _Optional[str] = ..., confidence: _Optional[float] = ..., explanation: _Optional[str] = ...) -> None: ...

class RoutedPart(_message.Message):
    __slots__ = ("part_id", "kind", "intent", "range_start", "range_end", "missing_entities")
    PART_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    RANGE_START_FIELD_NUMBER: _ClassVar[int]
    RANGE_END_FIELD_NUMBER: _ClassVar[int]
    MISSING_ENTITIES_FIELD_NUMBER: _ClassVar[int]
    part_id: str
    kind: PartKind
    intent: _common_pb2.Intent
    range_start: _timestamp_pb2.Timestamp
    range_end: _timestamp_pb2.Timestamp
    missing_entities: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, part_id: _Optional[str] = ..., kind: _Optional[_Union[PartKind, str]] = ..., intent: _Optional[_Union[_common_pb2.Intent, str]] = ..., range_start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., range_end: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., missing_entities: _Optional[_Iterable[str]] = ...) -> None: ...

class RouteDecision(_message.Message):
    __slots__ = ("in_scope", "scope_reason", "intents", "entities", "parts", "router_version", "explanations")
    IN_SCOPE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_REASON_FIELD_NUMBER: _ClassVar[int]
    INTENTS_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    ROUTER_VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPLANATIONS_FIELD_NUMBER: _ClassVar[int]
    in_scope: bool
    scope_reason: str
    intents: _containers.RepeatedScalarFieldContainer[_common_pb2.Intent]
    entities: _containers.RepeatedCompositeFieldContainer[Entity]
    parts: _containers.RepeatedCompositeFieldContainer[RoutedPart]
    router_version: str
    explanations: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, in_scope: _Optional[bool] = ..., scope_reason: _Optional[str] = ..., intents: _Optional[_Iterable[_Union[_common_pb2.Intent, str]]] = ..., entities: _Optional[_Iterable[_Union[Entity, _Mapping]]] = ..., parts: _Optional[_Iterable[_Union[RoutedPart, _Mapping]]] = ..., router_version: _Optional[str] = ..., explanations: _Optional[_Iterable[str]] = ...) -> None: ...
