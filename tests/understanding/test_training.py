"""The training script's lexicon gate (train.py): which router-lexicon entries may override the
intent heads, and the routed decision the intent thresholds are chosen on."""

import numpy as np
import pytest

from services.orchestrator.core.router import detect_intents, lexicon_hits, load_lexicon
from services.orchestrator.understanding import train
from services.orchestrator.understanding.model import INTENTS


def test_an_entry_needs_enough_matches_and_the_precision_to_be_untrusted():
    table = {"often-right": [9, 10], "often-wrong": [8, 10], "rare-and-wrong": [0, train.LEXICON_MIN_HITS - 1]}
    assert train.untrusted_entries(table) == {"often-wrong": [8, 10]}


def test_precision_counts_a_match_right_when_the_question_is_labelled_with_its_intent():
    question = train.IntentQuestion(0, {"availability"}, [
        (np.zeros(1), [("availability", "free"), ("provider_information", "dr")]),
        (np.zeros(1), [("provider_information", "dr")]),
    ])
    assert train.lexicon_precision([question]) == {"free": [1, 1], "dr": [0, 2]}


class _Heads:
    """Intent heads that always score availability highest."""

    @staticmethod
    def probs(vector):
        return np.array([0.9 if name == "availability" else 0.01 for name in INTENTS])


def test_a_trusted_entry_overrides_and_an_untrusted_one_leaves_the_heads_to_decide():
    clause = [(np.zeros(1), [("provider_information", "dr")])]
    question = train.IntentQuestion(0, {"availability"}, clause)
    assert train.routed_intents(question, _Heads, frozenset(), 0.7, 0.05) == {"provider_information"}
    assert train.routed_intents(question, _Heads, frozenset({"dr"}), 0.7, 0.05) == {"availability"}


def test_detect_intents_skips_an_entry_and_keeps_the_next_one_of_the_same_intent():
    lexicon = load_lexicon()
    clause = "Can I book an appointment, is there a free slot on Friday?"
    hits = [(intent, entry) for intent, entry in lexicon_hits(clause, lexicon) if intent.value == "availability"]
    assert len(hits) >= 2
    first, second = hits[0][1], hits[1][1]
    assert (hits[0][0], first) in detect_intents(clause, lexicon)
    assert (hits[1][0], second) in detect_intents(clause, lexicon, frozenset({first}))


def test_a_threshold_is_raised_while_the_recall_holds_and_stops_at_the_first_loss():
    grid = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    recall = {0.1: 1.0, 0.2: 1.0, 0.3: 1.0, 0.4: 0.9, 0.5: 1.0, 0.6: 0.8}
    # From 0.1 the recall holds to 0.3; 0.4 loses some, and 0.5 (back at 1.0) is not reached past it.
    assert train._raised_at_same_recall(grid, 0.1, recall.__getitem__) == 0.3
    assert train._raised_at_same_recall(grid, 0.6, recall.__getitem__) == 0.6


def _observed(gold: str, p_emergency: float, red_flag: bool = False) -> train.Observed:
    probs = np.array([p_emergency, 0.0, 1.0 - p_emergency])
    return train.Observed(example=None, clauses=[(gold, probs, red_flag, False)], whole=probs, whole_red_flag=red_flag)


def test_the_logistics_budget_is_the_heads_share_beyond_what_the_rules_send():
    # 100 logistics questions: 4 look-alikes a red flag sends to the emergency path whatever the threshold
    # (more than the 2% budget on their own), one the head scores 0.3; 10 emergencies the head scores 0.6.
    observed = ([_observed("logistics", 0.0, red_flag=True) for _ in range(4)] + [_observed("logistics", 0.3)]
                + [_observed("logistics", 0.0) for _ in range(95)] + [_observed("emergency", 0.6) for _ in range(10)])
    t_e, _, metrics = train.choose_thresholds(observed)
    # Counted in, the rules' 4% spent the budget and the highest threshold (0.99) would have lost every
    # emergency; as the heads' share, any threshold up to 0.6 keeps them all.
    assert t_e <= 0.6
    assert metrics["emergency_recall"] == 1.0


def _texts(path):
    from services.orchestrator.core.text import normalize

    return {normalize(i.get("text") or " ".join(p["text"] for p in i["parts"])).lower()
            for i in train.load_yaml_items(path)}


@pytest.mark.parametrize("name", ["BOUNDARY_HELDOUT", "BOUNDARY_CHECK", "BOUNDARY_CHECK_FEELINGS",
                                  "BOUNDARY_CHECK_SPECIALTY", "BOUNDARY_CHECK_PRICES"])
def test_the_held_out_and_check_sets_are_not_in_the_training_data(name):
    from services.orchestrator.understanding import bench

    held = _texts(getattr(bench, name))
    assert len(held) >= 100
    assert not held & _texts(train.BOUNDARY_SET)
    assert not held & _texts(train.INTENT_SET)
    labels = {i["label"] for i in train.load_yaml_items(getattr(bench, name))}
    assert labels <= {"emergency", "clinical", "logistics", "mixed"}, labels


def test_topic_tags_of_boundary_authors_are_not_read_as_intent_labels():
    items = [{"label": "logistics", "lang": "en", "tags": ["booking"], "text": "Can I book for Friday?"},
             {"label": "logistics", "lang": "en", "tags": ["booking", "written-2026-12-06"],
              "text": "Could my bloodwork be moved to an earlier slot?"}]
    rows = train.intent_rows([], items)
    assert rows == [("Can I book for Friday?", ("availability",), "en")]
