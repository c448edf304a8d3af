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

class PageLabelSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PAGE_LABEL_SOURCE_UNSPECIFIED: _ClassVar[PageLabelSource]
    PAGE_LABEL_SOURCE_TREE: _ClassVar[PageLabelSource]
    PAGE_LABEL_SOURCE_PAGE_TEXT: _ClassVar[PageLabelSource]
    PAGE_LABEL_SOURCE_NONE: _ClassVar[PageLabelSource]

class ExtractionIssueKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXTRACTION_ISSUE_KIND_UNSPECIFIED: _ClassVar[ExtractionIssueKind]
    EXTRACTION_ISSUE_KIND_NO_TEXT_LAYER: _ClassVar[ExtractionIssueKind]
    EXTRACTION_ISSUE_KIND_PAGE_LABEL_MISMATCH: _ClassVar[ExtractionIssueKind]
    EXTRACTION_ISSUE_KIND_PAGE_LABEL_OUT_OF_SEQUENCE: _ClassVar[ExtractionIssueKind]
    EXTRACTION_ISSUE_KIND_TABLE_HEADER_NOT_FOUND: _ClassVar[ExtractionIssueKind]
    EXTRACTION_ISSUE_KIND_FOOTNOTE_WITHOUT_ANCHOR: _ClassVar[ExtractionIssueKind]

class SearchMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEARCH_MODE_UNSPECIFIED: _ClassVar[SearchMode]
    SEARCH_MODE_HYBRID: _ClassVar[SearchMode]
    SEARCH_MODE_LEXICAL: _ClassVar[SearchMode]
    SEARCH_MODE_VECTOR: _ClassVar[SearchMode]
PAGE_LABEL_SOURCE_UNSPECIFIED: PageLabelSource
PAGE_LABEL_SOURCE_TREE: PageLabelSource
PAGE_LABEL_SOURCE_PAGE_TEXT: PageLabelSource
PAGE_LABEL_SOURCE_NONE: PageLabelSource
EXTRACTION_ISSUE_KIND_UNSPECIFIED: ExtractionIssueKind
EXTRACTION_ISSUE_KIND_NO_TEXT_LAYER: ExtractionIssueKind
EXTRACTION_ISSUE_KIND_PAGE_LABEL_MISMATCH: ExtractionIssueKind
EXTRACTION_ISSUE_KIND_PAGE_LABEL_OUT_OF_SEQUENCE: ExtractionIssueKind
EXTRACTION_ISSUE_KIND_TABLE_HEADER_NOT_FOUND: ExtractionIssueKind
EXTRACTION_ISSUE_KIND_FOOTNOTE_WITHOUT_ANCHOR: ExtractionIssueKind
SEARCH_MODE_UNSPECIFIED: SearchMode
SEARCH_MODE_HYBRID: SearchMode
SEARCH_MODE_LEXICAL: SearchMode
SEARCH_MODE_VECTOR: SearchMode

class IngestDocumentRequest(_message.Message):
    __slots__ = ("document", "text", "status", "valid_from", "valid_to", "roles", "location_scope", "intents", "locale", "content", "media_type", "source_filename")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    VALID_FROM_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    LOCATION_SCOPE_FIELD_NUMBER: _ClassVar[int]
    INTENTS_FIELD_NUMBER: _ClassVar[int]
    LOCALE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILENAME_FIELD_NUMBER: _ClassVar[int]
    document: _common_pb2.Document
    text: str
    status: _common_pb2.VersionStatus
    valid_from: _timestamp_pb2.Timestamp
    valid_to: _timestamp_pb2.Timestamp
    roles: _containers.RepeatedScalarFieldContainer[str]
    location_scope: _containers.RepeatedScalarFieldContainer[str]
    intents: _containers.RepeatedScalarFieldContainer[_common_pb2.Intent]
    locale: str
    content: bytes
    media_type: str
    source_filename: str
    def __init__(self, document: _Optional[_Union[_common_pb2.Document, _Mapping]] = ..., text: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.VersionStatus, str]] = ..., valid_from: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., roles: _Optional[_Iterable[str]] = ..., location_scope: _Optional[_Iterable[str]] = ..., intents: _Optional[_Iterable[_Union[_common_pb2.Intent, str]]] = ..., locale: _Optional[str] = ..., content: _Optional[bytes] = ..., media_type: _Optional[str] = ..., source_filename: _Optional[str] = ...) -> None: ...

class IngestDocumentResponse(_message.Message):
    __slots__ = ("version", "passages", "created", "superseded_version_ids", "extraction")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PASSAGES_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_VERSION_IDS_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_FIELD_NUMBER: _ClassVar[int]
    version: _common_pb2.DocumentVersion
    passages: _containers.RepeatedCompositeFieldContainer[_common_pb2.PassageIdentity]
    created: bool
    superseded_version_ids: _containers.RepeatedScalarFieldContainer[str]
    extraction: ExtractionReport
    def __init__(self, version: _Optional[_Union[_common_pb2.DocumentVersion, _Mapping]] = ..., passages: _Optional[_Iterable[_Union[_common_pb2.PassageIdentity, _Mapping]]] = ..., created: _Optional[bool] = ..., superseded_version_ids: _Optional[_Iterable[str]] = ..., extraction: _Optional[_Union[ExtractionReport, _Mapping]] = ...) -> None: ...

class PageMapEntry(_message.Message):
    __slots__ = ("viewer_page", "page_label", "label_source", "tree_label", "has_tree_label", "printed_label", "verified", "has_text_layer", "start", "end")
    VIEWER_PAGE_FIELD_NUMBER: _ClassVar[int]
    PAGE_LABEL_FIELD_NUMBER: _ClassVar[int]
    LABEL_SOURCE_FIELD_NUMBER: _ClassVar[int]
    TREE_LABEL_FIELD_NUMBER: _ClassVar[int]
    HAS_TREE_LABEL_FIELD_NUMBER: _ClassVar[int]
    PRINTED_LABEL_FIELD_NUMBER: _ClassVar[int]
    VERIFIED_FIELD_NUMBER: _ClassVar[int]
    HAS_TEXT_LAYER_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    viewer_page: int
    page_label: str
    label_source: PageLabelSource
    tree_label: str
    has_tree_label: bool
    printed_label: str
    verified: bool
    has_text_layer: bool
    start: int
    end: int
    def __init__(self, viewer_page: _Optional[int] = ..., page_label: _Optional[str] = ..., label_source: _Optional[_Union[PageLabelSource, str]] = ..., tree_label: _Optional[str] = ..., has_tree_label: _Optional[bool] = ..., printed_label: _Optional[str] = ..., verified: _Optional[bool] = ..., has_text_layer: _Optional[bool] = ..., start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class ExtractionIssue(_message.Message):
    __slots__ = ("kind", "message", "viewer_page")
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VIEWER_PAGE_FIELD_NUMBER: _ClassVar[int]
    kind: ExtractionIssueKind
    message: str
    viewer_page: int
    def __init__(self, kind: _Optional[_Union[ExtractionIssueKind, str]] = ..., message: _Optional[str] = ..., viewer_page: _Optional[int] = ...) -> None: ...

class ExtractionReport(_message.Message):
    __slots__ = ("source_sha256", "media_type", "extraction_version", "pages", "issues", "passages_needing_review")
    SOURCE_SHA256_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_VERSION_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    ISSUES_FIELD_NUMBER: _ClassVar[int]
    PASSAGES_NEEDING_REVIEW_FIELD_NUMBER: _ClassVar[int]
    source_sha256: str
    media_type: str
    extraction_version: str
    pages: _containers.RepeatedCompositeFieldContainer[PageMapEntry]
    issues: _containers.RepeatedCompositeFieldContainer[ExtractionIssue]
    passages_needing_review: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, source_sha256: _Optional[str] = ..., media_type: _Optional[str] = ..., extraction_version: _Optional[str] = ..., pages: _Optional[_Iterable[_Union[PageMapEntry, _Mapping]]] = ..., issues: _Optional[_Iterable[_Union[ExtractionIssue, _Mapping]]] = ..., passages_needing_review: _Optional[_Iterable[str]] = ...) -> None: ...

class ApprovePassagesRequest(_message.Message):
    __slots__ = ("passage_ids",)
    PASSAGE_IDS_FIELD_NUMBER: _ClassVar[int]
    passage_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, passage_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ApprovePassagesResponse(_message.Message):
    __slots__ = ("passages",)
    PASSAGES_FIELD_NUMBER: _ClassVar[int]
    passages: _containers.RepeatedCompositeFieldContainer[_common_pb2.Passage]
    def __init__(self, passages: _Optional[_Iterable[_Union[_common_pb2.Passage, _Mapping]]] = ...) -> None: ...

class SetVersionStatusRequest(_message.Message):
    __slots__ = ("version_id", "status")
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    version_id: str
    status: _common_pb2.VersionStatus
    def __init__(self, version_id: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.VersionStatus, str]] = ...) -> None: ...

class SetVersionStatusResponse(_message.Message):
    __slots__ = ("version",)
    VERSION_FIELD_NUMBER: _ClassVar[int]
    version: _common_pb2.DocumentVersion
    def __init__(self, version: _Optional[_Union[_common_pb2.DocumentVersion, _Mapping]] = ...) -> None: ...

class SearchScope(_message.Message):
    __slots__ = ("location_ids", "intents", "locale", "source_classes")
    LOCATION_IDS_FIELD_NUMBER: _ClassVar[int]
    INTENTS_FIELD_NUMBER: _ClassVar[int]
    LOCALE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_CLASSES_FIELD_NUMBER: _ClassVar[int]
    location_ids: _containers.RepeatedScalarFieldContainer[str]
    intents: _containers.RepeatedScalarFieldContainer[_common_pb2.Intent]
    locale: str
    source_classes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, location_ids: _Optional[_Iterable[str]] = ..., intents: _Optional[_Iterable[_Union[_common_pb2.Intent, str]]] = ..., locale: _Optional[str] = ..., source_classes: _Optional[_Iterable[str]] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("query", "scope", "k", "as_of", "mode")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    query: str
    scope: SearchScope
    k: int
    as_of: _timestamp_pb2.Timestamp
    mode: SearchMode
    def __init__(self, query: _Optional[str] = ..., scope: _Optional[_Union[SearchScope, _Mapping]] = ..., k: _Optional[int] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., mode: _Optional[_Union[SearchMode, str]] = ...) -> None: ...

class AppliedFilters(_message.Message):
    __slots__ = ("tenant_id", "roles", "location_ids", "intents", "locale", "status", "effective_at", "source_classes")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    LOCATION_IDS_FIELD_NUMBER: _ClassVar[int]
    INTENTS_FIELD_NUMBER: _ClassVar[int]
    LOCALE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_AT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_CLASSES_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    location_ids: _containers.RepeatedScalarFieldContainer[str]
    intents: _containers.RepeatedScalarFieldContainer[_common_pb2.Intent]
    locale: str
    status: _common_pb2.VersionStatus
    effective_at: _timestamp_pb2.Timestamp
    source_classes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tenant_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., location_ids: _Optional[_Iterable[str]] = ..., intents: _Optional[_Iterable[_Union[_common_pb2.Intent, str]]] = ..., locale: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.VersionStatus, str]] = ..., effective_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., source_classes: _Optional[_Iterable[str]] = ...) -> None: ...

class RetrievalSettings(_message.Message):
    __slots__ = ("backend", "index_generation", "k", "candidate_k", "fusion_method", "lexical_weight", "vector_weight", "rrf_k", "embedding_model_id", "mode", "filters", "rerank_backend", "rerank_model", "rerank_depth", "rerank_ms", "rerank_fallback", "relevance_model", "relevance_threshold", "relevance_best_threshold")
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    INDEX_GENERATION_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_K_FIELD_NUMBER: _ClassVar[int]
    FUSION_METHOD_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    VECTOR_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    RRF_K_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    RERANK_BACKEND_FIELD_NUMBER: _ClassVar[int]
    RERANK_MODEL_FIELD_NUMBER: _ClassVar[int]
    RERANK_DEPTH_FIELD_NUMBER: _ClassVar[int]
    RERANK_MS_FIELD_NUMBER: _ClassVar[int]
    RERANK_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_MODEL_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_BEST_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    backend: str
    index_generation: str
    k: int
    candidate_k: int
    fusion_method: str
    lexical_weight: float
    vector_weight: float
    rrf_k: int
    embedding_model_id: str
    mode: SearchMode
    filters: AppliedFilters
    rerank_backend: str
    rerank_model: str
    rerank_depth: int
    rerank_ms: float
    rerank_fallback: bool
    relevance_model: str
    relevance_threshold: float
    relevance_best_threshold: float
    def __init__(self, backend: _Optional[str] = ..., index_generation: _Optional[str] = ..., k: _Optional[int] = ..., candidate_k: _Optional[int] = ..., fusion_method: _Optional[str] = ..., lexical_weight: _Optional[float] = ..., vector_weight: _Optional[float] = ..., rrf_k: _Optional[int] = ..., embedding_model_id: _Optional[str] = ..., mode: _Optional[_Union[SearchMode, str]] = ..., filters: _Optional[_Union[AppliedFilters, _Mapping]] = ..., rerank_backend: _Optional[str] = ..., rerank_model: _Optional[str] = ..., rerank_depth: _Optional[int] = ..., rerank_ms: _Optional[float] = ..., rerank_fallback: _Optional[bool] = ..., relevance_model: _Optional[str] = ..., relevance_threshold: _Optional[float] = ..., relevance_best_threshold: _Optional[float] = ...) -> None: ...

class SearchHit(_message.Message):
    __slots__ = ("label", "passage", "lexical_score", "lexical_rank", "vector_score", "vector_rank", "fused_score", "fused_rank", "rerank_score", "rerank_rank", "relevance", "relevant")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    PASSAGE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_SCORE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_RANK_FIELD_NUMBER: _ClassVar[int]
    VECTOR_SCORE_FIELD_NUMBER: _ClassVar[int]
    VECTOR_RANK_FIELD_NUMBER: _ClassVar[int]
    FUSED_SCORE_FIELD_NUMBER: _ClassVar[int]
    FUSED_RANK_FIELD_NUMBER: _ClassVar[int]
    RERANK_SCORE_FIELD_NUMBER: _ClassVar[int]
    RERANK_RANK_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    RELEVANT_FIELD_NUMBER: _ClassVar[int]
    label: str
    passage: _common_pb2.Passage
    lexical_score: float
    lexical_rank: int
    vector_score: float
    vector_rank: int
    fused_score: float
    fused_rank: int
    rerank_score: float
    rerank_rank: int
    relevance: float
    relevant: bool
    def __init__(self, label: _Optional[str] = ..., passage: _Optional[_Union[_common_pb2.Passage, _Mapping]] = ..., lexical_score: _Optional[float] = ..., lexical_rank: _Optional[int] = ..., vector_score: _Optional[float] = ..., vector_rank: _Optional[int] = ..., fused_score: _Optional[float] = ..., fused_rank: _Optional[int] = ..., rerank_score: _Optional[float] = ..., rerank_rank: _Optional[int] = ..., relevance: _Optional[float] = ..., relevant: _Optional[bool] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("hits", "settings", "versions")
    HITS_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[SearchHit]
    settings: RetrievalSettings
    versions: _containers.RepeatedCompositeFieldContainer[_common_pb2.DocumentVersion]
    def __init__(self, hits: _Optional[_Iterable[_Union[SearchHit, _Mapping]]] = ..., settings: _Optional[_Union[RetrievalSettings, _Mapping]] = ..., versions: _Optional[_Iterable[_Union[_common_pb2.DocumentVersion, _Mapping]]] = ...) -> None: ...

class SpanRef(_message.Message):
    __slots__ = ("version_id", "start", "end")
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    version_id: str
    start: int
    end: int
    def __init__(self, version_id: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class GetPassagesRequest(_message.Message):
    __slots__ = ("passage_ids", "spans")
    PASSAGE_IDS_FIELD_NUMBER: _ClassVar[int]
    SPANS_FIELD_NUMBER: _ClassVar[int]
    passage_ids: _containers.RepeatedScalarFieldContainer[str]
    spans: _containers.RepeatedCompositeFieldContainer[SpanRef]
    def __init__(self, passage_ids: _Optional[_Iterable[str]] = ..., spans: _Optional[_Iterable[_Union[SpanRef, _Mapping]]] = ...) -> None: ...

class GetPassagesResponse(_message.Message):
    __slots__ = ("passages", "versions")
    PASSAGES_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    passages: _containers.RepeatedCompositeFieldContainer[_common_pb2.Passage]
    versions: _containers.RepeatedCompositeFieldContainer[_common_pb2.DocumentVersion]
    def __init__(self, passages: _Optional[_Iterable[_Union[_common_pb2.Passage, _Mapping]]] = ..., versions: _Optional[_Iterable[_Union[_common_pb2.DocumentVersion, _Mapping]]] = ...) -> None: ...

class ListVersionsRequest(_message.Message):
    __slots__ = ("document_id", "status", "page_size", "page_token")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    status: _common_pb2.VersionStatus
    page_size: int
    page_token: str
    def __init__(self, document_id: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.VersionStatus, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListVersionsResponse(_message.Message):
    __slots__ = ("versions", "next_page_token")
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    versions: _containers.RepeatedCompositeFieldContainer[_common_pb2.DocumentVersion]
    next_page_token: str
    def __init__(self, versions: _Optional[_Iterable[_Union[_common_pb2.DocumentVersion, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
