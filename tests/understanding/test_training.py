"""The training script's lexicon gate (train.py): which router-lexicon entries may override the
intent heads, and the routed decision the intent thresholds are chosen on."""

import numpy as np

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
