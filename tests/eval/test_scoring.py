"""Unit tests of the eval scoring and the bench's histogram arithmetic (no stack needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from eval.harness import (
    Case,
    Evidence,
    Observation,
    PassageInfo,
    load_claim_labels,
    regressions,
    resolve,
    score,
    support_label,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from ask_bench import _quantile, parse_histograms, stage_breakdown  # noqa: E402

PASSAGES = {
    "p-old": PassageInfo("p-old", "t", "doc", "v-old", "retired", "Please arrive 10 minutes before."),
    "p-new": PassageInfo("p-new", "t", "doc", "v-new", "approved", "Please arrive 15 minutes\nbefore your visit.",
                         "Policy > Arrival", ("arrival_preparation",)),
    "p-other": PassageInfo("p-other", "other-tenant", "x", "v-x", "approved", "Walk-ins welcome."),
}


def case(**fields) -> Case:
    base = {"id": "c", "tenant": "t", "question": "q?", "expect": "answered", "reason": "r"}
    return Case(**{**base, **fields})


def observation(c: Case, outcome="answered", retrieved=("p-old", "p-new"), cited=("p-new",), claims=(), **kw):
    return Observation(c, outcome, "PART_KIND_ARRIVAL_PREPARATION", list(retrieved), {"t"}, 2, 100, set(cited),
                       list(claims), searched=True, searched_intents=("arrival_preparation",), **kw)


def test_resolve_matches_snippets_across_line_breaks_and_rejects_stale_ones():
    c = case()
    assert resolve(c, (Evidence("doc", "arrive 15 minutes before"),), PASSAGES) == {"p-new"}
    assert resolve(c, (Evidence("doc"),), PASSAGES) == {"p-old", "p-new"}
    with pytest.raises(ValueError, match="no passage of doc contains"):
        resolve(c, (Evidence("doc", "arrive 20 minutes"),), PASSAGES)


LABELS = {("doc", "Please arrive 15 minutes before your visit."): "SUPPORTED",
          ("doc", "Arrive 20 minutes early."): "UNSUPPORTED"}


def test_support_label_comes_from_the_cases_file_labels():
    supported = {"cited": ["p-new"], "text": "Please arrive  15 minutes before your visit.", "injected": False}
    assert support_label(supported, PASSAGES, LABELS) == "SUPPORTED"  # whitespace-insensitive
    assert support_label({**supported, "text": "Arrive 20 minutes early."}, PASSAGES, LABELS) == "UNSUPPORTED"
    assert support_label({**supported, "text": "Nobody labelled this."}, PASSAGES, LABELS) is None
    assert support_label({**supported, "cited": []}, PASSAGES, LABELS) == "UNSUPPORTED"


def test_the_shipped_cases_file_labels_load():
    labels = load_claim_labels()
    assert labels and set(labels.values()) == {"SUPPORTED", "UNSUPPORTED"}


def test_score_counts_ranks_misses_forbidden_leaks_and_abstentions():
    gold = (Evidence("doc", "arrive 15 minutes"),)
    forbid = (Evidence("doc", "arrive 10 minutes"),)
    claim = {"shown": True, "support": "SUPPORTED", "cited": ["p-new"], "factual": True, "injected": False,
             "text": "Please arrive 15 minutes before your visit.", "attempt": 1}
    observations = [
        observation(case(id="hit", gold=gold, forbid=forbid), claims=[claim]),
        observation(case(id="miss", gold=gold), outcome="abstained", retrieved=("p-old",), cited=()),
        observation(case(id="abst", expect="abstained", forbid=forbid), outcome="answered", cited=("p-old",)),
        Observation(case(id="leak", expect="abstained"), "abstained", "", ["p-other"], {"other-tenant"}, 0, 0,
                    set(), []),
    ]
    metrics, rows = score(observations, PASSAGES, LABELS)
    assert metrics["retrieval_recall_at_k"]["1"] == {"numerator": 0, "denominator": 2, "value": 0.0}
    assert metrics["retrieval_recall_at_k"]["3"]["numerator"] == 1
    assert metrics["mean_rank_gold_passage"]["value"] == 2.0
    assert metrics["covered_question_missed"]["numerator"] == 1
    assert metrics["covered_question_missed_by_cause"]["ranking"] == 1
    assert metrics["forbidden_evidence_cited"] == {"numerator": 1, "denominator": 2, "value": 0.5}
    assert metrics["cross_tenant_leaks"]["numerator"] == 1
    assert metrics["abstention_precision"] == {"numerator": 1, "denominator": 2, "value": 0.5}
    assert metrics["abstention_recall"] == {"numerator": 1, "denominator": 2, "value": 0.5}
    assert metrics["refused_with_gold_evidence"]["numerator"] == 1
    assert metrics["citation_completeness"]["value"] == 1.0
    assert metrics["support_correctness"]["value"] == 1.0
    assert [r["ok"] for r in rows] == [True, False, False, True]


def test_regressions_respect_the_tolerance():
    def result(accuracy: float, leaks: int) -> dict:
        rate = {"numerator": 0, "denominator": 1, "value": accuracy}
        metrics = {key: dict(rate) for key in ("outcome_accuracy", "gold_cited", "citation_completeness",
                                              "support_correctness", "abstention_precision", "abstention_recall",
                                              "covered_question_missed", "refused_with_gold_evidence",
                                              "forbidden_evidence_cited")}
        metrics["retrieval_recall_at_k"] = {"3": dict(rate), "8": dict(rate)}
        metrics["cross_tenant_leaks"] = {"numerator": leaks, "denominator": 1, "value": leaks}
        metrics["mean_rank_gold_version"] = {"value": 1.0}
        metrics["context_budget"] = {"by_budget": {}}
        return {"metrics": metrics}

    assert regressions(result(0.78, 0), result(0.80, 0)) == []
    problems = regressions(result(0.70, 0), result(0.80, 0))
    assert any(p.startswith("outcome_accuracy") for p in problems)
    assert any("cross_tenant_leaks" in p for p in regressions(result(0.8, 1), result(0.8, 0)))


METRICS_BEFORE = """
# TYPE citetrace_stage_duration_seconds histogram
citetrace_stage_duration_seconds_bucket{service="retrieval",stage="retrieval.embed",le="0.005"} 1.0
citetrace_stage_duration_seconds_bucket{service="retrieval",stage="retrieval.embed",le="0.01"} 2.0
citetrace_stage_duration_seconds_bucket{service="retrieval",stage="retrieval.embed",le="+Inf"} 2.0
citetrace_stage_duration_seconds_count{service="retrieval",stage="retrieval.embed"} 2.0
citetrace_stage_duration_seconds_sum{service="retrieval",stage="retrieval.embed"} 0.012
"""
METRICS_AFTER = METRICS_BEFORE.replace('le="0.005"} 1.0', 'le="0.005"} 1.0').replace(
    'le="0.01"} 2.0', 'le="0.01"} 6.0').replace('le="+Inf"} 2.0', 'le="+Inf"} 6.0').replace(
    "_count{service=\"retrieval\",stage=\"retrieval.embed\"} 2.0",
    "_count{service=\"retrieval\",stage=\"retrieval.embed\"} 6.0").replace("} 0.012", "} 0.040")


def test_stage_breakdown_differences_the_histograms():
    rows = stage_breakdown(parse_histograms(METRICS_BEFORE), parse_histograms(METRICS_AFTER), asks=4)
    (row,) = rows
    assert row["service"] == "retrieval" and row["name"] == "retrieval.embed" and row["count"] == 4
    assert row["mean_ms"] == 7.0 and row["per_ask_ms"] == 7.0
    assert 5.0 <= row["p50_ms"] <= 10.0  # all four new samples fell in (5 ms, 10 ms]


def test_quantile_interpolates_inside_the_bucket():
    assert _quantile([(0.01, 0.0), (0.02, 10.0), (float("inf"), 10.0)], 10.0, 0.5) == pytest.approx(0.015)
    assert _quantile([], 0.0, 0.5) is None
