"""The scope gate: pure, decided before and independently of any downstream service."""

from __future__ import annotations

import pytest

from services.orchestrator.core import scope
from services.orchestrator.core.text import split_clauses
from services.orchestrator.core.wording import load_catalog


def decide(question: str) -> scope.ScopeDecision:
    return scope.gate(split_clauses(question))


@pytest.mark.parametrize("question", [
    "Should I stop my blood thinner before the procedure?",
    "Can I take ibuprofen with my new prescription?",
    "How much insulin should I take?",
    "Is it safe to take aspirin before an echo?",
    "Do I have diabetes?",
    "What does my MRI result mean?",
    "How do I treat a rash at home?",
    "What should I take for my headache?",
    "I have a fever and a cough, should I be worried?",
    "Do I have the flu?",
    "Is this rash serious?",
])
def test_clinical_questions_get_the_clinical_boundary(question):
    decision = decide(question)
    assert not decision.in_scope and not decision.emergency
    boundary = decision.boundary
    assert boundary.next_action == "CONTACT_CLINICIAN"
    assert "can't advise" in load_catalog().default.boundary(boundary.kind)
    assert decision.in_scope_clauses == []


@pytest.mark.parametrize("question", [
    "I have chest pain, can I book cardiology today?",
    "I can't breathe properly",
    "I am having trouble breathing since this morning",
    "I feel suicidal",
    "I think I took an overdose",
])
def test_emergency_wording_gets_the_emergency_boundary_for_the_whole_question(question):
    decision = decide(question)
    assert decision.emergency
    assert decision.in_scope_clauses == []
    assert decision.boundary.next_action == "CONTACT_EMERGENCY_SERVICES"


@pytest.mark.parametrize("question", [
    "Can I book cardiology tomorrow, and when should I arrive?",
    "Should I stop eating before my MRI?",
    "Do I need to fast before my CT scan?",
    "What is the cancellation policy at Northside?",
    "Should I bring my medication list to my first visit?",
    "Does Dr. Lindqvist speak Spanish?",
    "Can I book physiotherapy for my back next week?",
    "I have a rash, can I book dermatology this week?",
    "Do I have an appointment tomorrow?",
    "Do I have to fast before my MRI?",
    "Do I have a follow-up booked?",
    "Is it normal to wait 30 minutes at check-in?",
    "Can I drink water before my scan?",
])
def test_appointment_questions_are_in_scope(question):
    decision = decide(question)
    assert decision.in_scope, decision.reason
    assert decision.boundary is None


def test_mixed_question_withholds_only_the_clinical_clause():
    decision = decide("book cardiology tomorrow and should I stop my blood thinner?")
    assert not decision.in_scope and not decision.emergency
    assert decision.in_scope_clauses == ["book cardiology tomorrow"]
    assert decision.matched_rules == ["clinical.medication"]
    # The reason names the rule, never the question text.
    assert "blood thinner" not in decision.reason and "clinical.medication" in decision.reason


def test_the_rules_and_the_wording_are_versioned_data():
    policy = scope.load_policy()
    assert policy.version.startswith("scope-boundary-")
    assert decide("Do I have the flu?").version == policy.version
    assert {"emergency", "clinical"} <= set(policy.responses)
    # Every boundary kind has its words in every locale's wording file.
    for wording in load_catalog().by_locale.values():
        assert wording.version and all(wording.boundary(kind) for kind in policy.responses)


@pytest.mark.parametrize("number", ["000", "999", "112", "911", "111", "113"])
def test_the_emergency_wording_names_the_emergency_numbers_of_the_clinics_it_serves(number):
    """A parent in Australia or a patient in England read 911/113/111 and no number of theirs; in the
    UK 111 is the non-urgent line (the Quillon and Thornbury probes). Every locale names each."""
    for wording in load_catalog().by_locale.values():
        assert number in wording.boundary("emergency"), wording.locale
