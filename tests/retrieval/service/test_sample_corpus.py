"""The synthetic sample corpus has the properties the generation, orchestrator and eval work rely
on (deploy/samples/README.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from apps.cli.ingest import parse_file

from .conftest import SAMPLES


@pytest.fixture(scope="module")
def corpus(svc):
    for path in sorted(SAMPLES.rglob("*.md")):
        source = parse_file(path)
        request = source.request()
        svc.stub.IngestDocument(request, timeout=60, metadata=svc.md(source.tenant, ("policy_admin",)))
    return svc


def texts(reply) -> list[str]:
    return [h.passage.text for h in reply.hits]


def docs(reply) -> list[str]:
    return [h.passage.identity.document_id for h in reply.hits]


def test_every_file_is_visibly_synthetic():
    for path in SAMPLES.rglob("*.md"):
        raw = Path(path).read_text(encoding="utf-8").lower()
        assert "synthetic" in raw or "syntetisk" in raw, path


def test_conflicting_current_versions_are_both_retrieved_for_harbor_mri(corpus):
    reply = corpus.search("acme-health", "How early should I arrive for my MRI?", k=5,
                          scope_locations=("acme-harbor",), intents=("arrival_preparation",))
    top = docs(reply)[:3]
    assert "acme-harbor-mri-arrival" in top and "acme-imaging-preparation" in top
    joined = " ".join(texts(reply))
    assert "45 minutes" in joined and "30 minutes" in joined


def test_the_rule_and_its_exception_are_one_passage(corpus):
    reply = corpus.search("acme-health", "new patient arrival time", k=3, intents=("arrival_preparation",))
    rule = next(t for t in texts(reply) if t.startswith("Please arrive 15 minutes"))
    assert "Exception: new patients should arrive 20 minutes" in rule


def test_the_fee_table_keeps_its_header_and_exception_row(corpus):
    reply = corpus.search("acme-health", "late cancellation fee for an MRI", k=3,
                          intents=("cancellation_rescheduling",))
    table = next(t for t in texts(reply) if t.startswith("| Appointment type"))
    assert "| MRI or CT | 48 hours | $100 |" in table and "Exception: weather closure" in table


def test_the_hostile_passage_is_retrievable_data(corpus):
    reply = corpus.search("acme-health", "can I walk in without an appointment", k=5)
    assert any("Ignore previous instructions" in t for t in texts(reply))
    assert any(t.startswith("No. Every visit") for t in texts(reply))


def test_staff_only_and_draft_never_reach_a_patient(corpus):
    patient = docs(corpus.search("acme-health", "overbook a follow-up visit", k=50))
    assert "acme-staff-overbooking" not in patient and "acme-telehealth-arrival" not in patient
    staff = docs(corpus.search("acme-health", "overbook a follow-up visit", k=50, roles=("staff",)))
    assert "acme-staff-overbooking" in staff


def test_the_superseded_2024_edition_is_retired_and_never_eligible(corpus):
    in_2024 = corpus.search("acme-health", "arrive minutes before appointment", k=50,
                            as_of=datetime(2024, 6, 1, tzinfo=UTC))
    assert "10 minutes before" not in " ".join(texts(in_2024))
    editions = corpus.versions("acme-health", document_id="acme-arrival-policy").versions
    assert sorted(v.status for v in editions) == [2, 3]


def test_near_identical_clinic_names_are_kept_apart_by_location(corpus):
    q = "where do I check in"
    north = " ".join(texts(corpus.search("acme-health", q, k=10, scope_locations=("acme-northside",))))
    gate = " ".join(texts(corpus.search("acme-health", q, k=10, scope_locations=("acme-northgate",))))
    assert "second floor" in north and "kiosk" not in north
    assert "kiosk" in gate and "second floor" not in gate


def test_norwegian_and_cross_date_line_tenants(corpus):
    nb = corpus.search("borealis-clinics", "når må jeg komme til fysioterapi", k=3, locale="nb-NO")
    assert nb.hits and all(h.passage.locale == "nb-NO" for h in nb.hits)
    assert any("Unntak" in t for t in texts(nb))
    # Cedar Care's 1 January 00:00 +13:00 is 31 December 11:00 UTC: already effective then.
    cedar = corpus.search("cedar-care", "fasting blood test", k=3,
                          as_of=datetime(2024, 12, 31, 11, 30, tzinfo=UTC))
    assert "cedar-preparation" in docs(cedar)
    before = corpus.search("cedar-care", "fasting blood test", k=3,
                           as_of=datetime(2024, 12, 31, 10, 30, tzinfo=UTC))
    assert list(before.hits) == []
