"""Value types of the search index, shared by every backend (embedded, OpenSearch)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import numpy as np
from citetrace.kit.metrics import SEARCH_BACKEND_STATUSES
from citetrace.vocab import APPROVED, VERSION_STATUSES

PassageStatus = Literal["draft", "approved", "retired"]  # citetrace.vocab.VERSION_STATUSES
PASSAGE_STATUSES: frozenset[str] = frozenset(VERSION_STATUSES)
ELIGIBLE_STATUS = APPROVED

FusionMethod = Literal["rrf", "minmax", "zscore"]
SearchMode = Literal["hybrid", "lexical", "vector"]

#: The only fields of an IndexedPassage that ScopeFilter.admits reads. Passages that agree
#: on all of them are admitted or refused together (the embedded index relies on this).
SCOPE_FIELDS = (
    "tenant_id",
    "status",
    "valid_from",
    "valid_to",
    "roles",
    "location_scope",
    "intents",
    "locale",
    "source_class",
)


#: What a backend's health() reports, worst last (the label values of citetrace_search_backend_health).
#: "unreachable": no answer at all (every search would fail); "red": a primary shard of the live index
#: is unassigned (searches would fail or miss passages); "yellow": a replica is missing (searches are
#: complete, redundancy is not).
HEALTH_STATUSES = SEARCH_BACKEND_STATUSES


@dataclass(frozen=True)
class BackendHealth:
    """One sample of a backend's health: status (HEALTH_STATUSES), the nodes that answered it, and
    a short human detail (the error when unreachable)."""

    status: str
    nodes: int = 0
    detail: str = ""

    def __post_init__(self) -> None:
        if self.status not in HEALTH_STATUSES:
            raise ValueError(f"health status must be one of {HEALTH_STATUSES}, got {self.status!r}")

    @property
    def can_serve(self) -> bool:
        """Searches are complete: green or yellow (a lost replica does not make the service unfit)."""
        return self.status in ("green", "yellow")


def _require_aware(name: str, value: datetime | None) -> None:
    if value is not None and value.tzinfo is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {value!r}")


def _as_str_tuple(value) -> tuple[str, ...]:
    if isinstance(value, str):  # a lone string would otherwise become a tuple of characters
        return (value,)
    return tuple(value)


@dataclass(frozen=True)
class IndexedPassage:
    """A passage as the index sees it: its text, its version's scope metadata, its vector.

    Scope metadata is copied from the passage's version. ``vector`` takes no part in
    equality or hashing; ``None`` means the passage is found by lexical search only.
    """

    passage_id: str
    tenant_id: str
    document_id: str
    version_id: str
    source_class: str
    text: str
    roles: tuple[str, ...]
    location_scope: tuple[str, ...]
    intents: tuple[str, ...]
    locale: str
    status: str
    valid_from: datetime
    valid_to: datetime | None = None
    vector: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("roles", "location_scope", "intents"):
            object.__setattr__(self, name, _as_str_tuple(getattr(self, name)))
        if not self.passage_id or not self.tenant_id:
            raise ValueError("passage_id and tenant_id are required")
        if self.status not in PASSAGE_STATUSES:
            raise ValueError(f"status must be one of {sorted(PASSAGE_STATUSES)}, got {self.status!r}")
        _require_aware("valid_from", self.valid_from)
        _require_aware("valid_to", self.valid_to)
        if self.valid_to is not None and self.valid_to <= self.valid_from:
            raise ValueError("valid_to must be after valid_from")

    def scope_key(self) -> tuple:
        """The values of SCOPE_FIELDS: equal keys mean equal admission by any ScopeFilter."""
        return tuple(getattr(self, name) for name in SCOPE_FIELDS)


@dataclass(frozen=True)
class ScopeFilter:
    """Who is asking, where, about what, and when: decides which passages are eligible.

    Every backend applies the filter INSIDE both the lexical and the vector sub-query
    (never fetch broadly and filter afterwards; never relax a filter on zero results).
    """

    tenant_id: str
    roles: tuple[str, ...]
    location_ids: tuple[str, ...]
    intents: tuple[str, ...]
    locale: str | None
    as_of: datetime
    # Source classes the caller asked for; empty = any (last, so positional construction still works).
    source_classes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("roles", "location_ids", "intents", "source_classes"):
            object.__setattr__(self, name, _as_str_tuple(getattr(self, name)))
        if not self.tenant_id:
            raise ValueError("tenant_id is required")
        _require_aware("as_of", self.as_of)

    def admits(self, p: IndexedPassage) -> bool:
        """THE eligibility rule, the single definition for every backend.

        A passage is eligible when all of these hold (OpenSearch translation in brackets,
        each clause a ``filter`` of a ``bool`` query placed inside both the ``match``
        query and the ``knn`` query's own ``filter``):

        1. same tenant                                       [term tenant_id]
        2. status == "approved"                              [term status]
        3. valid_from <= as_of                               [range valid_from lte as_of]
        4. valid_to is None or as_of < valid_to              [bool should: not exists valid_to,
                                                              range valid_to gt as_of]
        5. passage roles empty (= every role), or they share a role with the caller
                                                             [should: not exists roles, terms roles]
        6. passage location_scope empty (= every location of the tenant); else, if the
           caller named locations, they must share one; a caller naming no location is
           not restricted by location      [if location_ids: should: not exists, terms location_scope]
        7. caller intents empty (= any), else the passage's intents must share one; a
           passage with no intents then matches nothing  [if intents: terms intents]
        8. caller locale None (= any), else equal            [if locale: term locale]
        9. caller source_classes empty (= any), else the passage's source_class is one of them
                                                             [if source_classes: terms source_class]

        Reads only the fields in SCOPE_FIELDS.
        """
        return (
            p.tenant_id == self.tenant_id
            and p.status == ELIGIBLE_STATUS
            and p.valid_from <= self.as_of
            and (p.valid_to is None or self.as_of < p.valid_to)
            and (not p.roles or _intersects(p.roles, self.roles))
            and (
                not p.location_scope
                or not self.location_ids
                or _intersects(p.location_scope, self.location_ids)
            )
            and (not self.intents or _intersects(p.intents, self.intents))
            and (self.locale is None or p.locale == self.locale)
            and (not self.source_classes or p.source_class in self.source_classes)
        )


def _intersects(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return any(x in b for x in a)


@dataclass(frozen=True)
class BM25Settings:
    """Okapi BM25 as in Lucene 8+ (no (k1 + 1) factor; it does not change the ranking).

    Defaults tuned on SciFact TRAIN qrels (bench/scifact_core.py: best of a 6x6 grid,
    nDCG@10 0.6995 on train; the top of the grid is flat, within 0.001).
    """

    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        if self.k1 < 0 or not 0 <= self.b <= 1:
            raise ValueError(f"need k1 >= 0 and 0 <= b <= 1, got k1={self.k1} b={self.b}")


@dataclass(frozen=True)
class FusionSettings:
    """How the lexical and the vector candidate lists become one ranking.

    - ``rrf``: fused = lexical_weight / (rrf_k + lexical_rank) + vector_weight / (rrf_k + vector_rank)
    - ``minmax`` / ``zscore``: each list's scores are normalised on its own candidates,
      then fused = (lexical_weight * lexical_norm + vector_weight * vector_norm)
      / (lexical_weight + vector_weight), a convex combination.
    A retriever that did not return a passage contributes nothing (rrf), 0 (minmax) or
    its list's lowest z-score (zscore; -1 if all its scores were equal).

    ``candidate_k``: how many candidates each retriever contributes. ``mode`` selects the
    retrievers: ``lexical`` or ``vector`` run only that one (fused over a single list).
    Defaults tuned on SciFact TRAIN qrels (bench/scifact_core.py): z-score with weights
    0.55/0.45 was the best of every method and weight tried (train nDCG@10 0.7348; min-max
    0.7344; RRF at best 0.7195, with vector weight 0.75). DESIGN.md §4 names RRF: set
    ``method="rrf"`` (and weights 1.0/0.75 per the same tuning) to follow it.
    """

    method: FusionMethod = "zscore"
    rrf_k: int = 60
    lexical_weight: float = 0.55
    vector_weight: float = 0.45
    candidate_k: int = 100
    mode: SearchMode = "hybrid"

    def __post_init__(self) -> None:
        if self.method not in ("rrf", "minmax", "zscore"):
            raise ValueError(f"unknown fusion method {self.method!r}")
        if self.mode not in ("hybrid", "lexical", "vector"):
            raise ValueError(f"unknown search mode {self.mode!r}")
        if self.rrf_k <= 0 or self.candidate_k < 1:
            raise ValueError("rrf_k must be > 0 and candidate_k >= 1")
        if self.lexical_weight < 0 or self.vector_weight < 0 or self.lexical_weight + self.vector_weight == 0:
            raise ValueError("weights must be >= 0 and not both 0")


@dataclass(frozen=True)
class SearchQuery:
    """One search: ``vector`` is the embedded query text (required unless mode is lexical). The
    vector is checked here, once for every backend: one-dimensional float32, finite, non-zero; a
    backend only compares its dimension (``require_dimension``)."""

    text: str
    vector: np.ndarray | None
    scope: ScopeFilter
    k: int = 10
    fusion: FusionSettings = field(default_factory=FusionSettings)

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError("k must be >= 1")
        if self.fusion.mode != "lexical" and self.vector is None:
            raise ValueError(f"mode {self.fusion.mode!r} needs a query vector")
        if self.vector is not None:
            vector = np.asarray(self.vector, dtype=np.float32).reshape(-1)
            norm = float(np.linalg.norm(vector)) if vector.size else 0.0
            if not math.isfinite(norm) or norm == 0.0:
                raise ValueError("query vector must be finite and non-zero")
            object.__setattr__(self, "vector", vector)

    def require_dimension(self, dimension: int) -> np.ndarray:
        """The query vector, or ValueError when the index holds vectors of another dimension."""
        if self.vector.shape[0] != dimension:
            raise ValueError(f"query vector has {self.vector.shape[0]} dimensions, the index {dimension}")
        return self.vector


@dataclass(frozen=True)
class Hit:
    """One retrieved passage with what each retriever said about it (ranks are 1-based;
    None when that retriever did not return the passage)."""

    passage_id: str
    lexical_score: float | None
    lexical_rank: int | None
    vector_score: float | None
    vector_rank: int | None
    fused_score: float
    fused_rank: int


@dataclass(frozen=True)
class UpsertError:
    passage_id: str
    reason: str


@dataclass(frozen=True)
class IndexReport:
    """Outcome of an upsert: how many passages are now indexed as given, and the refusals."""

    indexed: int
    errors: list[UpsertError] = field(default_factory=list)
