from citetrace.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ContextBudget(_message.Message):
    __slots__ = ("max_passages", "max_chars")
    MAX_PASSAGES_FIELD_NUMBER: _ClassVar[int]
    MAX_CHARS_FIELD_NUMBER: _ClassVar[int]
    max_passages: int
    max_chars: int
    def __init__(self, max_passages: _Optional[int] = ..., max_chars: _Optional[int] = ...) -> None: ...

class ClaimFeedback(_message.Message):
    __slots__ = ("claim_id", "reasons", "support", "message")
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    reasons: _containers.RepeatedScalarFieldContainer[_common_pb2.FailureReason]
    support: _common_pb2.SupportVerdict
    message: str
    def __init__(self, claim_id: _Optional[str] = ..., reasons: _Optional[_Iterable[_Union[_common_pb2.FailureReason, str]]] = ..., support: _Optional[_Union[_common_pb2.SupportVerdict, str]] = ..., message: _Optional[str] = ...) -> None: ...

class GenerateRequest(_message.Message):
    __slots__ = ("question", "intent", "passages", "budget", "feedback", "attempt", "place_names", "confident_only", "other_place_names")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    PASSAGES_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    PLACE_NAMES_FIELD_NUMBER: _ClassVar[int]
    CONFIDENT_ONLY_FIELD_NUMBER: _ClassVar[int]
    OTHER_PLACE_NAMES_FIELD_NUMBER: _ClassVar[int]
    question: str
    intent: _common_pb2.Intent
    passages: _containers.RepeatedCompositeFieldContainer[_common_pb2.LabelledPassage]
    budget: ContextBudget
    feedback: _containers.RepeatedCompositeFieldContainer[ClaimFeedback]
    attempt: int
    place_names: _containers.RepeatedScalarFieldContainer[str]
    confident_only: bool
    other_place_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, question: _Optional[str] = ..., intent: _Optional[_Union[_common_pb2.Intent, str]] = ..., passages: _Optional[_Iterable[_Union[_common_pb2.LabelledPassage, _Mapping]]] = ..., budget: _Optional[_Union[ContextBudget, _Mapping]] = ..., feedback: _Optional[_Iterable[_Union[ClaimFeedback, _Mapping]]] = ..., attempt: _Optional[int] = ..., place_names: _Optional[_Iterable[str]] = ..., confident_only: _Optional[bool] = ..., other_place_names: _Optional[_Iterable[str]] = ...) -> None: ...

class GeneratorInfo(_message.Message):
    __slots__ = ("backend", "model_id", "prompt_version", "settings")
    class SettingsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_VERSION_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    backend: str
    model_id: str
    prompt_version: str
    settings: _containers.ScalarMap[str, str]
    def __init__(self, backend: _Optional[str] = ..., model_id: _Optional[str] = ..., prompt_version: _Optional[str] = ..., settings: _Optional[_Mapping[str, str]] = ...) -> None: ...

class GenerateResponse(_message.Message):
    __slots__ = ("claims", "generator", "passages_offered", "chars_offered", "passages_used", "chars_used", "labels_offered")
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    PASSAGES_OFFERED_FIELD_NUMBER: _ClassVar[int]
    CHARS_OFFERED_FIELD_NUMBER: _ClassVar[int]
    PASSAGES_USED_FIELD_NUMBER: _ClassVar[int]
    CHARS_USED_FIELD_NUMBER: _ClassVar[int]
    LABELS_OFFERED_FIELD_NUMBER: _ClassVar[int]
    claims: _containers.RepeatedCompositeFieldContainer[_common_pb2.Claim]
    generator: GeneratorInfo
    passages_offered: int
    chars_offered: int
    passages_used: int
    chars_used: int
    labels_offered: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, claims: _Optional[_Iterable[_Union[_common_pb2.Claim, _Mapping]]] = ..., generator: _Optional[_Union[GeneratorInfo, _Mapping]] = ..., passages_offered: _Optional[int] = ..., chars_offered: _Optional[int] = ..., passages_used: _Optional[int] = ..., chars_used: _Optional[int] = ..., labels_offered: _Optional[_Iterable[str]] = ...) -> None: ...
