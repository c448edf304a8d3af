import datetime

from citetrace.common.v1 import common_pb2 as _common_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ValidateRequest(_message.Message):
    __slots__ = ("claims", "offered", "as_of", "intent")
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    OFFERED_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    claims: _containers.RepeatedCompositeFieldContainer[_common_pb2.Claim]
    offered: _containers.RepeatedCompositeFieldContainer[_common_pb2.LabelledPassage]
    as_of: _timestamp_pb2.Timestamp
    intent: _common_pb2.Intent
    def __init__(self, claims: _Optional[_Iterable[_Union[_common_pb2.Claim, _Mapping]]] = ..., offered: _Optional[_Iterable[_Union[_common_pb2.LabelledPassage, _Mapping]]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., intent: _Optional[_Union[_common_pb2.Intent, str]] = ...) -> None: ...

class Finding(_message.Message):
    __slots__ = ("reason", "label", "passage_id", "message")
    REASON_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    PASSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    reason: _common_pb2.FailureReason
    label: str
    passage_id: str
    message: str
    def __init__(self, reason: _Optional[_Union[_common_pb2.FailureReason, str]] = ..., label: _Optional[str] = ..., passage_id: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ClaimValidation(_message.Message):
    __slots__ = ("claim_id", "findings", "support", "support_score", "support_reason", "citations", "withheld", "support_model")
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    FINDINGS_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_SCORE_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_REASON_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    WITHHELD_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_MODEL_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    findings: _containers.RepeatedCompositeFieldContainer[Finding]
    support: _common_pb2.SupportVerdict
    support_score: float
    support_reason: str
    citations: _containers.RepeatedCompositeFieldContainer[_common_pb2.Citation]
    withheld: bool
    support_model: str
    def __init__(self, claim_id: _Optional[str] = ..., findings: _Optional[_Iterable[_Union[Finding, _Mapping]]] = ..., support: _Optional[_Union[_common_pb2.SupportVerdict, str]] = ..., support_score: _Optional[float] = ..., support_reason: _Optional[str] = ..., citations: _Optional[_Iterable[_Union[_common_pb2.Citation, _Mapping]]] = ..., withheld: _Optional[bool] = ..., support_model: _Optional[str] = ...) -> None: ...

class ValidateResponse(_message.Message):
    __slots__ = ("claims", "findings", "passed", "source_policy_version", "support_model")
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    FINDINGS_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    SOURCE_POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_MODEL_FIELD_NUMBER: _ClassVar[int]
    claims: _containers.RepeatedCompositeFieldContainer[ClaimValidation]
    findings: _containers.RepeatedCompositeFieldContainer[Finding]
    passed: bool
    source_policy_version: str
    support_model: str
    def __init__(self, claims: _Optional[_Iterable[_Union[ClaimValidation, _Mapping]]] = ..., findings: _Optional[_Iterable[_Union[Finding, _Mapping]]] = ..., passed: _Optional[bool] = ..., source_policy_version: _Optional[str] = ..., support_model: _Optional[str] = ...) -> None: ...
