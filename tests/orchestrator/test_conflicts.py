"""Conflict detection: two approved documents of the same authority disagreeing on the asked rule."""

from __future__ import annotations

from services.orchestrator.core.conflicts import Candidate, detect, quantities
from services.orchestrator.core.router import load_lexicon

VOCAB = {**load_lexicon().specialties, **load_lexicon().appointment_types}


def cand(label, doc, text, source_class="preparation_instructions", scope=None):
    return Candidate(label, f"pid-{label}", doc, f"ver-{doc}", source_class, text, scope)


def test_two_documents_with_different_arrival_times_conflict():
    a = cand("S1", "arrival-cardiology", "Cardiology patients should arrive 15 minutes before the appointment.")
    b = cand("S2", "cardiology-handout", "Please arrive 30 minutes early for cardiology visits.")
    found = detect([a, b], "arrival_preparation", VOCAB)
    assert found is not None
    assert (found.first.label, found.second.label) == ("S1", "S2")
    assert "15min vs 30min" in found.explanation


def test_same_numbers_do_not_conflict():
    a = cand("S1", "d1", "Arrive 15 minutes early for cardiology.")
    b = cand("S2", "d2", "Cardiology: please arrive fifteen minutes before your visit.")
    assert detect([a, b], "arrival_preparation", VOCAB) is None


def test_different_source_classes_do_not_conflict():
    a = cand("S1", "d1", "Arrive 15 minutes early for cardiology.")
    b = cand("S2", "d2", "Arrive 30 minutes early for cardiology.", source_class="handbook")
    assert detect([a, b], "arrival_preparation", VOCAB) is None


def test_different_qualifiers_are_different_rules():
    a = cand("S1", "d1", "Arrive 15 minutes early for cardiology.")
    b = cand("S2", "d2", "Arrive 45 minutes early for an MRI.")
    assert detect([a, b], "arrival_preparation", VOCAB) is None


def test_disjoint_location_scopes_are_different_rules():
    a = cand("S1", "d1", "Arrive 15 minutes early.", scope=("acme-northside",))
    b = cand("S2", "d2", "Arrive 30 minutes early.", scope=("acme-northgate",))
    assert detect([a, b], "arrival_preparation", VOCAB) is None
    c = cand("S3", "d3", "Arrive 30 minutes early.", scope=())  # every location
    assert detect([a, c], "arrival_preparation", VOCAB) is not None


def test_same_document_is_never_a_conflict_and_only_top_n_count():
    a = cand("S1", "d1", "Arrive 15 minutes early.")
    b = cand("S2", "d1", "Arrive 30 minutes early.")
    assert detect([a, b], "arrival_preparation", VOCAB) is None
    filler = [cand(f"S{i}", f"f{i}", "Parking is free.") for i in range(2, 6)]
    late = cand("S6", "d9", "Arrive 30 minutes early.")
    assert detect([a, *filler, late], "arrival_preparation", VOCAB, top_n=4) is None


def test_cancellation_notice_conflict_and_no_topic_no_conflict():
    a = cand("S1", "policy-a", "Cancel at least 24 hours before your appointment.", "cancellation_policy")
    b = cand("S2", "policy-b", "Cancellations need 48 hours notice.", "cancellation_policy")
    assert detect([a, b], "cancellation_rescheduling", VOCAB) is not None
    assert detect([a, b], "provider_information", VOCAB) is None


def test_quantities_are_normalized():
    assert quantities("arrive 1 hour early")["duration"] == quantities("arrive 60 minutes early")["duration"]
    assert quantities("doors open at 7:30 am")["clock"] == frozenset({"07:30"})
