"""What a question asks (relevance.asked_clauses): a statement beside the question is context and
is set aside; a fragment without a person in it is no statement but the topic the asking clause
refers to ("parking at Quarry St - is it free?": alone, "is it free?" matched a blood-test fee
sentence in the independent probe of 2026-12-06, tests/e2e/unseen/larchmont)."""

from __future__ import annotations

import pytest

from services.generation.relevance import asked_clauses


@pytest.mark.parametrize("question", [
    "parking at quarry st - is it free?",
    "Flu jab - do I need to book?",
    "Running late - will you still see me?",
    "Interpreter for the first visit - how far ahead do I ask?",
])
def test_a_topic_fragment_stays_with_the_question(question):
    assert asked_clauses(question) == ""  # the whole question is what it asks


@pytest.mark.parametrize(("question", "asked"), [
    ("I'm due for my yearly review after last year's heart attack - where do I check in?", "where do I check in?"),
    ("My son has a fever - can I cancel today without the fee?", "can I cancel today without the fee?"),
    ("Jeg har vondt i ryggen - når må jeg møte opp?", "når må jeg møte opp?"),
])
def test_a_statement_with_a_person_is_context(question, asked):
    assert asked_clauses(question) == asked


def test_a_topic_fragment_stays_beside_a_statement_that_does_not():
    assert asked_clauses("My car is in the garage. Parking at Bayside - is it free?") == "Parking at Bayside is it free?"
