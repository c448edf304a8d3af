"""What a question asks ABOUT (relevance.key_terms): "you" as patients type it is no topic. "ye"
was the whole topic of "How much notice do ye need if I have to cancel?" once the intent's own
words were set aside, so no sentence covered the question (the independent Juniper probe,
tests/e2e/unseen/juniper, 2026-12-06)."""

from __future__ import annotations

import pytest

from services.generation.relevance import coverage, key_terms, terms


@pytest.mark.parametrize("question", [
    "How much notice do ye need if I have to cancel?",
    "how much notice do u need if i want to cancel",
    "do youse need much notice to cancel?",
])
def test_you_as_patients_type_it_is_no_topic(question):
    found = key_terms(question, "CANCELLATION_RESCHEDULING")
    assert not found & terms("u ye youse"), found
    # A sentence stating the notice period covers what is asked (its kind words are the intent's).
    assert coverage(found, terms("Please give us at least 24 hours' notice if you need to cancel.")) == 1.0


def test_a_topic_word_stays_a_key_term():
    assert terms("cash") <= key_terms("do u take cash?", "OTHER")
