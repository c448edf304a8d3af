"""Fusion of a lexical and a vector ranked list into one ranking of Hits.

Pure and backend-independent: the embedded index and the OpenSearch backend both hand
their two candidate lists to :func:`fuse` unchanged, so the same inputs give the same
ranking whichever backend produced them.

Determinism: each input list is first put in canonical order (score descending, then
passage_id ascending) and cut to ``candidate_k``; equal fused scores are ordered by
passage_id ascending.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .types import FusionSettings, Hit

#: (passage_id, retriever score), higher is better; any order, no duplicate ids.
Candidates = Sequence[tuple[str, float]]


def canonical_ranking(candidates: Candidates, limit: int) -> list[tuple[str, float]]:
    """Score descending, ties by passage_id ascending, at most ``limit`` entries."""
    ranked = sorted(((pid, float(score)) for pid, score in candidates), key=lambda c: (-c[1], c[0]))
    ids = [pid for pid, _ in ranked]
    if len(set(ids)) != len(ids):
        raise ValueError("a candidate list names the same passage twice")
    return ranked[:limit]


def _minmax(scores: list[float]) -> list[float]:
    low, high = min(scores), max(scores)
    if high == low:  # one candidate or all equal: all count as the best (as OpenSearch does)
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def _zscore(scores: list[float]) -> list[float]:
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if std == 0:
        return [0.0] * len(scores)
    return [(s - mean) / std for s in scores]


def _normalised(ranked: list[tuple[str, float]], method: str) -> tuple[dict[str, float], float]:
    """Normalised score per passage, and the value for a passage the list lacks.

    An absent passage counts as no better than the list's worst: 0 for min-max; for
    z-score the lowest z, or -1 when all scores are equal (z is then 0 for all present).
    """
    if not ranked:
        return {}, 0.0
    values = (_minmax if method == "minmax" else _zscore)([s for _, s in ranked])
    if method == "minmax":
        absent = 0.0
    else:
        absent = min(values) if max(values) > min(values) else -1.0
    return dict(zip((pid for pid, _ in ranked), values, strict=True)), absent


def _rrf_scores(lexical, vector, s: FusionSettings) -> dict[str, float]:
    fused: dict[str, float] = {}
    for weight, ranked in ((s.lexical_weight, lexical), (s.vector_weight, vector)):
        for rank, (pid, _) in enumerate(ranked, start=1):
            fused[pid] = fused.get(pid, 0.0) + weight / (s.rrf_k + rank)
    return fused


def _convex_scores(lexical, vector, s: FusionSettings) -> dict[str, float]:
    lex_norm, lex_missing = _normalised(lexical, s.method)
    vec_norm, vec_missing = _normalised(vector, s.method)
    total = s.lexical_weight + s.vector_weight
    return {
        pid: (
            s.lexical_weight * lex_norm.get(pid, lex_missing)
            + s.vector_weight * vec_norm.get(pid, vec_missing)
        )
        / total
        for pid in {*lex_norm, *vec_norm}
    }


def fuse(
    lexical: Candidates, vector: Candidates, settings: FusionSettings, limit: int | None = None
) -> list[Hit]:
    """The candidates of both lists as Hits, best first (fused_rank 1, 2, ...); all of
    them, or the best ``limit``.

    ``lexical`` and ``vector`` are (passage_id, score) pairs from each retriever; pass an
    empty list for a retriever that did not run (lexical-only or vector-only mode).
    Weights: ``settings.lexical_weight`` scales the lexical list's contribution,
    ``settings.vector_weight`` the vector list's (see FusionSettings for the formulas).
    """
    lex = canonical_ranking(lexical, settings.candidate_k)
    vec = canonical_ranking(vector, settings.candidate_k)
    scorer = _rrf_scores if settings.method == "rrf" else _convex_scores
    fused = scorer(lex, vec, settings)
    lex_at = {pid: (rank, score) for rank, (pid, score) in enumerate(lex, start=1)}
    vec_at = {pid: (rank, score) for rank, (pid, score) in enumerate(vec, start=1)}
    order = sorted(fused, key=lambda pid: (-fused[pid], pid))[:limit]
    return [
        Hit(
            passage_id=pid,
            lexical_score=lex_at[pid][1] if pid in lex_at else None,
            lexical_rank=lex_at[pid][0] if pid in lex_at else None,
            vector_score=vec_at[pid][1] if pid in vec_at else None,
            vector_rank=vec_at[pid][0] if pid in vec_at else None,
            fused_score=fused[pid],
            fused_rank=rank,
        )
        for rank, pid in enumerate(order, start=1)
    ]
