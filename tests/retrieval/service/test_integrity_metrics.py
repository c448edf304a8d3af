"""Metrics owed by retrieval (DESIGN §7): digest failures of stored text, scope violations blocked.

Rows are edited behind the service's back with raw SQL; the service must refuse to serve text that
no longer matches its digest (DATA_LOSS, never the wrong text) and count it, and must count a
request for an existing passage outside the caller's scope while answering NOT_FOUND exactly as for
a passage that does not exist."""

from __future__ import annotations

import grpc
import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY

from .conftest import T2024, failure, running_service

TENANT, OTHER = "acme-health", "borealis-clinics"
TEXT = ("# MRI preparation\n\nArrive 30 minutes before an MRI at Harbor Imaging Center (synthetic).\n\n"
        "# Metal\n\nRemove jewellery and other metal before the scan (synthetic).\n")
STAFF_TEXT = "# Staff note\n\nStaff confirm MRI safety forms at the front desk (synthetic, staff only).\n"


def digest_failures() -> float:
    return REGISTRY.get_sample_value("citetrace_digest_failures_total",
                                     {"service": "retrieval", "kind": "version_text"}) or 0.0


def blocked() -> float:
    return REGISTRY.get_sample_value("citetrace_scope_violations_blocked_total", {"service": "retrieval"}) or 0.0


@pytest.fixture
def svc(auth, tmp_path):
    with running_service(auth, tmp_path) as client:
        yield client


def _engine(client):
    return sa.create_engine(client.core.settings.resolved_database_url())


def test_version_text_edited_behind_the_service_is_refused_with_data_loss(svc):
    doc = svc.ingest(TENANT, "acme-mri-prep", TEXT, valid_from=T2024)
    first, second = doc.passages[0], doc.passages[1]
    assert "30 minutes" in svc.get(TENANT, [first.passage_id]).passages[0].text
    before = digest_failures()
    engine = _engine(svc)
    with engine.begin() as conn:  # the first passage's "30" becomes "03": same length, wrong text
        conn.execute(sa.text("UPDATE ret_versions SET text = replace(text, '30 minutes', '03 minutes') "
                             "WHERE version_id = :v"), {"v": doc.version.version_id})
    assert failure(svc.get, TENANT, [first.passage_id]) == (grpc.StatusCode.DATA_LOSS, "PASSAGE_DIGEST_MISMATCH")
    assert digest_failures() == before + 1
    # The untouched passage of the same version still matches its own digest and is served.
    assert "jewellery" in svc.get(TENANT, [second.passage_id]).passages[0].text
    # A span read checks the version text against its content-derived version_id.
    v = doc.version.version_id
    assert failure(svc.get, TENANT, spans=[(v, second.start, second.end)]) == (
        grpc.StatusCode.DATA_LOSS, "VERSION_DIGEST_MISMATCH")
    assert digest_failures() == before + 2
    # An edited passage digest is caught the same way.
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE ret_passages SET content_sha256 = :d WHERE passage_id = :p"),
                     {"d": "0" * 64, "p": second.passage_id})
    assert failure(svc.get, TENANT, [second.passage_id]) == (grpc.StatusCode.DATA_LOSS, "PASSAGE_DIGEST_MISMATCH")
    assert digest_failures() == before + 3
    engine.dispose()


def test_an_existing_passage_outside_the_callers_scope_is_not_found_and_counted(svc):
    public = svc.ingest(TENANT, "acme-mri-public", TEXT, valid_from=T2024).passages[0].passage_id
    staff = svc.ingest(TENANT, "acme-staff-note", STAFF_TEXT, roles=("staff",), valid_from=T2024)
    staff_pid = staff.passages[0].passage_id
    draft = svc.ingest(TENANT, "acme-draft", "# Draft\n\nA draft arrival rule (synthetic).\n", status="draft",
                       valid_from=T2024).passages[0].passage_id
    svc.ingest(OTHER, "bor-anything", "# Fjordview\n\nSynthetic Fjordview note.\n", valid_from=T2024)

    start = blocked()
    not_found = (grpc.StatusCode.NOT_FOUND, "PASSAGE_NOT_FOUND")
    assert failure(svc.get, OTHER, [public]) == not_found  # another tenant's passage
    assert blocked() == start + 1
    assert failure(svc.get, TENANT, [staff_pid], roles=("patient",)) == not_found  # audience
    assert blocked() == start + 2
    assert failure(svc.get, TENANT, [draft], roles=("patient",)) == not_found  # a draft
    assert blocked() == start + 3
    assert failure(svc.get, TENANT, ["f" * 64]) == not_found  # does not exist: same answer, not counted
    assert blocked() == start + 3
    version_not_found = (grpc.StatusCode.NOT_FOUND, "VERSION_NOT_FOUND")
    assert failure(svc.get, OTHER, spans=[(staff.version.version_id, 0, 5)]) == version_not_found
    assert failure(svc.get, TENANT, spans=[(staff.version.version_id, 0, 5)], roles=("patient",)) == \
        version_not_found
    assert blocked() == start + 5
    assert failure(svc.get, TENANT, spans=[("e" * 64, 0, 5)]) == version_not_found
    assert blocked() == start + 5
    # Readers in scope are served and nothing is counted.
    assert svc.get(TENANT, [staff_pid], roles=("staff",)).passages[0].text.startswith("Staff confirm")
    assert blocked() == start + 5
