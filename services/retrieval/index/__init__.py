"""The search index behind retrieval.Search: shared types, the fusion rule, the analyzer,
the SearchBackend protocol and the embedded backend (no gRPC, no SQL here)."""

from .base import SearchBackend
from .embedded import EmbeddedIndex
from .fusion import fuse
from .types import (
    HEALTH_STATUSES,
    BackendHealth,
    BM25Settings,
    FusionSettings,
    Hit,
    IndexedPassage,
    IndexReport,
    ScopeFilter,
    SearchQuery,
    UpsertError,
)

__all__ = [
    "HEALTH_STATUSES",
    "BackendHealth",
    "BM25Settings",
    "EmbeddedIndex",
    "FusionSettings",
    "Hit",
    "IndexReport",
    "IndexedPassage",
    "ScopeFilter",
    "SearchBackend",
    "SearchQuery",
    "UpsertError",
    "fuse",
]
