"""The threshold search of the support model's training (support/train.py) replays the shipped
decision: a row counts as SUPPORTED in the search exactly when EmbeddedSupportModel.verdict calls it
SUPPORTED (the operating point is chosen on the verdicts the model will give, not on a score the gates
and the review gate later cut); and the benchmark's feature cache replays the same verdicts."""

from __future__ import annotations

import pytest

from services.citation_validator.bench_grounding import FeatureCache
from services.citation_validator.support import SUPPORTED, Evidence
from services.citation_validator.support.embedded import EmbeddedSupportModel
from services.citation_validator.support.train import POLICY_GATES, labelled_items, supportable


@pytest.fixture(scope="module")
def model():
    m = EmbeddedSupportModel()
    m.warm_up()
    return m


def test_search_rule_is_the_verdict_rule(model):
    w = model.weights
    review = (w.review_match_floor, w.review_local_sentences)
    probe = EmbeddedSupportModel()  # its own weights object: the threshold is moved per row below
    kinds_seen, supported = set(), 0
    for item in labelled_items():
        p, report, features = model.score(item["claim"], [Evidence(text) for text in item["evidence"]])
        conflicts = sorted({c.kind for c in report.conflicts})
        kinds_seen.update(conflicts)
        # With the threshold just under p, the search counts the row as SUPPORTED iff it is
        # supportable; the shipped verdict rule at that threshold must agree.
        probe.weights.supported, probe.weights.unsupported = max(p - 1e-9, 0.0), 0.0
        verdict = probe.verdict(p, report, features).verdict
        assert (verdict == SUPPORTED) == supportable(conflicts, features, w.gates, POLICY_GATES, review), (
            item["id"], item["claim"], conflicts)
        supported += verdict == SUPPORTED
    assert kinds_seen and 0 < supported < len(labelled_items())  # both sides of the rule were exercised


def test_feature_cache_replays_the_same_verdicts(model, tmp_path):
    path = tmp_path / "features.jsonl.gz"
    items = labelled_items()[:12]
    first = FeatureCache(path)
    fresh = [first.decide(model, i["claim"], "\n\n".join(i["evidence"]))[0] for i in items]
    first.save()
    assert first.fresh == len({FeatureCache.key(i["claim"], "\n\n".join(i["evidence"])) for i in items})
    again = FeatureCache(path)
    replayed = [again.decide(model, i["claim"], "\n\n".join(i["evidence"]))[0] for i in items]
    assert again.fresh == 0
    assert [(d.verdict, d.score, d.reason) for d in replayed] == [(d.verdict, d.score, d.reason) for d in fresh]
