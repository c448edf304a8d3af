"""The fusion function on its own (shared by every backend)."""

from __future__ import annotations

import pytest

from services.retrieval.index import FusionSettings, fuse
from services.retrieval.index.fusion import canonical_ranking

RRF = FusionSettings(method="rrf", lexical_weight=1.0, vector_weight=1.0)


def test_rrf_sums_weighted_reciprocal_ranks():
    hits = fuse([("a", 3.0), ("b", 2.0), ("c", 1.0)], [("c", 0.9), ("a", 0.8), ("d", 0.1)], RRF)
    scores = {h.passage_id: h.fused_score for h in hits}
    assert scores == pytest.approx({"a": 1 / 61 + 1 / 62, "c": 1 / 63 + 1 / 61, "b": 1 / 62, "d": 1 / 63})
    assert [h.passage_id for h in hits] == ["a", "c", "b", "d"]
    assert [h.fused_rank for h in hits] == [1, 2, 3, 4]
    a = hits[0]
    assert (a.lexical_rank, a.lexical_score, a.vector_rank, a.vector_score) == (1, 3.0, 2, 0.8)
    d = hits[3]
    assert (d.lexical_rank, d.lexical_score) == (None, None)


def test_inputs_are_put_in_canonical_order_first():
    shuffled = [("b", 1.0), ("c", 2.0), ("a", 1.0)]
    assert canonical_ranking(shuffled, 10) == [("c", 2.0), ("a", 1.0), ("b", 1.0)]
    hits = fuse(shuffled, [], FusionSettings(mode="lexical"))
    assert [(h.passage_id, h.lexical_rank) for h in hits] == [("c", 1), ("a", 2), ("b", 3)]


def test_each_list_is_cut_to_candidate_k():
    lexical = [(f"l{i}", float(100 - i)) for i in range(10)]
    vector = [(f"v{i}", float(1 - i / 100)) for i in range(10)]
    hits = fuse(lexical, vector, FusionSettings(method="rrf", candidate_k=3))
    assert sorted(h.passage_id for h in hits) == ["l0", "l1", "l2", "v0", "v1", "v2"]


def test_equal_fused_scores_order_by_passage_id():
    # z rank 1 lexical, y rank 1 vector: identical RRF scores.
    hits = fuse([("z", 5.0)], [("y", 0.5)], RRF)
    assert [h.passage_id for h in hits] == ["y", "z"]
    assert hits[0].fused_score == hits[1].fused_score


def test_duplicate_ids_in_a_list_are_refused():
    with pytest.raises(ValueError):
        fuse([("a", 1.0), ("a", 0.5)], [], RRF)


def test_empty_inputs_give_no_hits():
    for method in ("rrf", "minmax", "zscore"):
        assert fuse([], [], FusionSettings(method=method)) == []


def test_minmax_normalises_each_list_and_takes_a_convex_combination():
    hits = fuse(
        [("a", 10.0), ("b", 6.0), ("c", 2.0)],
        [("c", 0.8), ("b", 0.4)],
        FusionSettings(method="minmax", lexical_weight=1, vector_weight=3),
    )
    # lexical a 1, b .5, c 0; vector c 1, b 0, a absent -> 0; fused = (1*lex + 3*vec) / 4
    assert {h.passage_id: h.fused_score for h in hits} == pytest.approx({"a": 0.25, "b": 0.125, "c": 0.75})


def test_minmax_of_a_single_or_constant_list_is_one():
    hits = fuse(
        [("a", 7.0)],
        [("b", 0.3), ("c", 0.3)],
        FusionSettings(method="minmax", lexical_weight=1, vector_weight=1),
    )
    # a: lexical 1, vector absent 0; b and c: lexical absent 0, vector 1
    assert {h.passage_id: h.fused_score for h in hits} == pytest.approx({"a": 0.5, "b": 0.5, "c": 0.5})
    assert [h.passage_id for h in hits] == ["a", "b", "c"]
    both = fuse(
        [("a", 7.0)],
        [("a", 0.3), ("c", 0.1)],
        FusionSettings(method="minmax", lexical_weight=1, vector_weight=1),
    )
    assert {h.passage_id: h.fused_score for h in both} == pytest.approx({"a": 1.0, "c": 0.0})


def test_zscore_absent_passage_takes_the_list_minimum():
    hits = fuse(
        [("a", 3.0), ("b", 1.0)],
        [("c", 0.9), ("a", 0.1)],
        FusionSettings(method="zscore", lexical_weight=1, vector_weight=1),
    )
    # lexical z: a +1, b -1, c absent -> -1; vector z: c +1, a -1, b absent -> -1
    assert {h.passage_id: h.fused_score for h in hits} == pytest.approx({"a": 0.0, "b": -1.0, "c": 0.0})
    assert [h.passage_id for h in hits] == ["a", "c", "b"]


def test_zero_weight_removes_a_retrievers_influence():
    hits = fuse(
        [("a", 3.0), ("b", 1.0)], [("b", 0.9), ("a", 0.1)], FusionSettings(method="rrf", lexical_weight=0.0)
    )
    assert [h.passage_id for h in hits] == ["b", "a"]


@pytest.mark.parametrize(
    "bad",
    [
        dict(method="borda"),
        dict(mode="both"),
        dict(rrf_k=0),
        dict(candidate_k=0),
        dict(lexical_weight=-1),
        dict(lexical_weight=0, vector_weight=0),
    ],
)
def test_invalid_settings_are_refused(bad):
    with pytest.raises(ValueError):
        FusionSettings(**bad)


def test_zscore_of_a_constant_list_ranks_absent_passages_below_present_ones():
    hits = fuse(
        [("a", 2.0), ("b", 2.0)],
        [("c", 0.9), ("a", 0.1)],
        FusionSettings(method="zscore", lexical_weight=1, vector_weight=1),
    )
    # lexical z: a 0, b 0, c absent -> -1; vector z: c +1, a -1, b absent -> -1
    assert {h.passage_id: h.fused_score for h in hits} == pytest.approx({"a": -0.5, "b": -0.5, "c": 0.0})


def test_limit_keeps_the_best_hits_only():
    lexical = [(f"l{i}", float(10 - i)) for i in range(10)]
    everything = fuse(lexical, [], FusionSettings(mode="lexical"))
    assert fuse(lexical, [], FusionSettings(mode="lexical"), limit=3) == everything[:3]
