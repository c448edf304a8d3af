"""Fuzzy clinic matching that does not confuse nearly identical names."""

from __future__ import annotations

import pytest

from services.orchestrator.core.clinics import LocationInfo, match

NY = "America/New_York"
ACME = [
    LocationInfo("acme-northside", "Northside Family Clinic", time_zone=NY),
    LocationInfo("acme-northgate", "Northgate Family Clinic", time_zone=NY),
    LocationInfo("acme-harbor", "Harbor Imaging Center", time_zone=NY),
]
VOCAB = frozenset({"imaging", "cardiology", "mri"})


@pytest.mark.parametrize(("question", "expected"), [
    ("book cardiology at Northside tomorrow", "acme-northside"),
    ("at the Northgate Family Clinic", "acme-northgate"),
    ("north side clinic please", "acme-northside"),
    ("nortside", "acme-northside"),  # typo
    ("northgte", "acme-northgate"),  # typo
    ("at harbor", "acme-harbor"),
    ("harbour imaging", "acme-harbor"),
])
def test_resolves_with_a_margin(question, expected):
    found = match(question, ACME, VOCAB)
    assert found.status == "resolved", found.explanation
    assert found.location.location_id == expected
    assert "runner-up" in found.explanation


def test_northside_and_northgate_are_never_confused():
    side = match("Northside Family Clinic", ACME, VOCAB)
    gate = match("Northgate Family Clinic", ACME, VOCAB)
    assert side.location.location_id == "acme-northside"
    assert gate.location.location_id == "acme-northgate"


def test_only_the_shared_generic_part_is_ambiguous():
    found = match("what are the fees at the family clinic", ACME, VOCAB)
    assert found.status == "ambiguous"
    assert {c.location_id for c in found.candidates} == {"acme-northside", "acme-northgate"}


def test_a_close_call_between_two_names_is_ambiguous():
    locs = [LocationInfo("x-1", "Lakeview Clinic"), LocationInfo("x-2", "Lakeside Clinic")]
    found = match("lakesview", locs)
    assert found.status == "ambiguous"
    assert {c.location_id for c in found.candidates} == {"x-1", "x-2"}


@pytest.mark.parametrize("question", [
    "Can I book cardiology tomorrow",
    "an imaging appointment",  # domain vocabulary never names a clinic
    "may I come in",
])
def test_no_location_named(question):
    assert match(question, ACME, VOCAB).status == "none"


def test_another_tenants_clinic_is_not_matched():
    assert match("at Fjordview Clinic", ACME, VOCAB).status == "none"
